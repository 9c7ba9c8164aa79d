package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/netguard"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/storage"
)

// maxUpstreamBody bounds a non-streamed upstream answer held in memory.
const maxUpstreamBody = 64 << 20

// defaultRetryCodes are the statuses retried when retry.on_status_codes is not set (DESIGN.md).
var defaultRetryCodes = []int{429, 500, 502, 503, 504}

// execLeaf calls one target: resolve it, consult its circuit breaker, then call with retries.
func (e *Engine) execLeaf(ctx context.Context, st *state, n *config.Node) *outcome {
	body := st.req.Body
	if n.PromptID != "" {
		if st.req.RenderPrompt == nil {
			return &outcome{path: n.Path, err: &gwerr.Error{Status: http.StatusBadRequest, Code: config.CodeInvalidConfig,
				Param: configParam(n, "prompt_id"), Message: "invalid config: " + configParam(n, "prompt_id") + ": a target with prompt_id serves only /v1/prompts/{id}/completions"}}
		}
		rendered, err := st.req.RenderPrompt(n.PromptID)
		if err != nil {
			ge := asGatewayError(err)
			if ge.Param == "" {
				ge.Param = configParam(n, "prompt_id")
			}
			return &outcome{path: n.Path, err: ge}
		}
		body = rendered
	}
	t, adapter, breakerKey, gerr := e.resolveTarget(ctx, st.req, n)
	if gerr != nil {
		return &outcome{err: gerr, path: n.Path}
	}
	body, err := patchBody(body, n)
	if err != nil {
		return &outcome{err: gwerr.Internal(err), path: n.Path}
	}
	set, err := e.hooks(st, n)
	if err != nil {
		return &outcome{err: asGatewayError(err), path: n.Path}
	}
	var results hookResults
	soft := false // a check failed without denying: the answer says 246
	if set.Has(guardrails.StageBefore) {
		before := set.Run(ctx, guardrails.StageBefore, checkInput(st, guardrails.StageBefore, requestText(st.conditionEnv().Params)), requestView{st})
		results.Before = before.Results
		e.runAsync(ctx, st.req.TraceID, before.Async)
		if before.Deny {
			return &outcome{status: gwerr.StatusHooksFailed, header: jsonContentType, body: hooksDenied(results), path: n.Path, prov: t.Provider}
		}
		soft = before.Failed
		if before.Transformed != nil {
			if body, err = replaceRequestText(body, *before.Transformed); err != nil {
				return &outcome{err: gwerr.Internal(err), path: n.Path}
			}
		}
	}
	step, hit := e.cacheLookup(ctx, st, n, t, adapter, body)
	if hit != nil {
		hit.path, hit.prov = n.Path, t.Provider
		if set != nil {
			e.afterHooks(ctx, st, set, hit, results, soft)
		}
		return hit
	}
	// Only after the cache key is taken: a namespace shares answers across metadata, so no field filled from
	// metadata may split the key (without a namespace the metadata is in the key anyway).
	if body, err = fillUser(body, st.req); err != nil {
		return &outcome{err: gwerr.Internal(err), path: n.Path}
	}
	if st.calls >= e.maxAttempts { // strategies stop at the cap; this guards a walk that would go on
		return &outcome{capped: true, path: n.Path, prov: t.Provider, err: &gwerr.Error{Status: http.StatusServiceUnavailable,
			Code: codeAttemptCap, Message: fmt.Sprintf("the request reached the gateway's cap of %d upstream attempts before %s could be called", e.maxAttempts, n.Path)}}
	}
	// The breaker is asked last, right before the call: an allowed request must always be recorded, or a
	// half-open breaker would wait forever for the outcome of its probe.
	var br *breaker
	if cfg := n.CircuitBreaker; cfg != nil {
		br = e.breakers.get(breakerKey)
		if !br.allow(e.now(), cfg) {
			return &outcome{open: true, path: n.Path, prov: t.Provider}
		}
	}
	// After-request hooks judge every attempt, so that a 446 from an output guardrail can be retried when
	// retry.on_status_codes lists it.
	// The cache keeps the provider's own answer, before output guardrails judge it: a hit is judged again.
	var post func(*outcome)
	if set != nil || step != nil {
		post = func(out *outcome) {
			if step != nil && out.err == nil {
				step.store(e, out)
			}
			if set != nil && out.ok() {
				e.afterHooks(ctx, st, set, out, results, soft)
			}
		}
	}
	out := e.attempts(ctx, st, n, adapter, t, &providers.Call{Endpoint: st.req.Endpoint, Body: body, Stream: st.req.Stream,
		Strict: n.StrictCompliance}, post)
	if br != nil && out.err != nil && ctx.Err() != nil {
		// The request ended (the caller went away, its deadline passed, the gateway is stopping): the failed
		// call says nothing about the target.
		br.release()
	} else if br != nil {
		status := out.status
		if out.err != nil {
			status = out.err.Status
			if out.err.Code == gwerr.CodeUpstream || out.err.Code == gwerr.CodeRequestTimeout {
				status = 0 // transport failures always count
			}
		}
		br.record(e.now(), n.CircuitBreaker, isBreakerFailure(n.CircuitBreaker, status))
	}
	return out
}

// afterHooks runs after-request hooks and output guardrails on a 2xx answer and marks it: 446 on a deny, 246
// when some check failed without denying, and hook_results beside the completion's fields.
func (e *Engine) afterHooks(ctx context.Context, st *state, set *guardrails.Set, out *outcome, results hookResults, soft bool) {
	if out.stream != nil {
		// The status is sent before the answer is known: only the before side can make it 246.
		if soft {
			out.status = StatusHooksFailedSoft
		}
		e.streamWithOutputHooks(ctx, st, set, out, results)
		return
	}
	var after guardrails.Outcome
	if set.Has(guardrails.StageAfter) {
		after = set.Run(ctx, guardrails.StageAfter, checkInput(st, guardrails.StageAfter, answerText(out.body)), requestView{st})
	}
	results.After = after.Results
	e.runAsync(ctx, st.req.TraceID, after.Async)
	if after.Deny {
		out.status, out.header, out.body = gwerr.StatusHooksFailed, jsonContentType, hooksDenied(results)
		return
	}
	if soft || after.Failed {
		out.status = StatusHooksFailedSoft
	}
	out.body = withHookResults(out.body, results, after.Transformed)
}

// asGatewayError keeps a *gwerr.Error and makes anything else a 500.
func asGatewayError(err error) *gwerr.Error {
	var ge *gwerr.Error
	if errors.As(err, &ge) {
		return ge
	}
	return gwerr.Internal(err)
}

// resolveTarget turns a leaf into a provider target: the provider named by the config (an identifier, "@slug"
// or virtual_key) or, when the config names none, by the request's headers.
func (e *Engine) resolveTarget(ctx context.Context, req *Request, n *config.Node) (*providers.Target, providers.Adapter, string, *gwerr.Error) {
	// Params are recorded as (node field) or a header name and turned into text only for an error.
	var id, slug, apiKey, baseURL string
	var slugParam, hostParam param
	fields := n.ProviderFields
	switch {
	case strings.HasPrefix(n.Provider, "@"):
		slug, slugParam = n.Provider[1:], param{n: n, name: "provider"}
	case n.VirtualKey != "":
		slug, slugParam = n.VirtualKey, param{n: n, name: "virtual_key"}
	case n.Provider != "":
		id, apiKey = n.Provider, n.APIKey
	case req.VirtualKey != "":
		slug, slugParam = req.VirtualKey, param{name: "x-gateway-virtual-key"}
	case strings.HasPrefix(req.Provider, "@"):
		slug, slugParam = req.Provider[1:], param{name: "x-gateway-provider"}
	case req.Provider != "":
		canonical, ok := providers.Canonical(req.Provider)
		if !ok {
			return nil, nil, "", &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidRequest, Param: "x-gateway-provider",
				Message: fmt.Sprintf("unknown provider %q in x-gateway-provider (known: %s)", req.Provider, strings.Join(providers.Identifiers(), ", "))}
		}
		id = canonical
		if req.CustomHost != "" {
			baseURL, hostParam = req.CustomHost, param{name: "x-gateway-custom-host"}
		}
	case req.CustomHost != "":
		return nil, nil, "", gwerr.BadRequest("x-gateway-provider",
			"x-gateway-custom-host needs x-gateway-provider to name the provider whose format the host speaks (openai when unsure)")
	default:
		return nil, nil, "", gwerr.BadRequest("x-gateway-provider",
			"no provider: send x-gateway-provider with Authorization, x-gateway-virtual-key, x-gateway-config or x-gateway-custom-host with x-gateway-provider")
	}
	if slug != "" {
		p, err := e.store.Providers.Get(req.Key.WorkspaceID, slug)
		if errors.Is(err, storage.ErrNotFound) {
			return nil, nil, "", &gwerr.Error{Status: http.StatusNotFound, Code: gwerr.CodeNotFound, Param: slugParam.String(),
				Message: fmt.Sprintf("provider %q not found in this workspace", "@"+slug)}
		}
		if err != nil {
			return nil, nil, "", gwerr.Internal(err)
		}
		id = p.Provider
		merged := make(map[string]json.RawMessage, len(p.Fields)+len(fields))
		for k, v := range p.Fields {
			merged[k] = v
		}
		for k, v := range fields {
			merged[k] = v
		}
		fields = merged
		t := &providers.Target{Fields: fields}
		apiKey = t.StringField("api_key")
		if host := t.StringField("custom_host"); host != "" {
			baseURL, hostParam = host, slugParam
		}
		if n.APIKey != "" {
			apiKey = n.APIKey
		}
	}
	if apiKey == "" {
		apiKey = req.Authorization
	}
	if n.CustomHost != "" {
		baseURL, hostParam = n.CustomHost, param{n: n, name: "custom_host"}
	}
	desc, ok := providers.Describe(id)
	if !ok {
		return nil, nil, "", gwerr.BadRequest(hostParam.String(), "provider %q is not supported by this gateway yet (supported: %s)",
			id, strings.Join(providers.Registered(), ", "))
	}
	adapter := desc.Adapter()
	if baseURL == "" {
		baseURL = desc.BaseURL
	} else if err := e.guard.CheckURLParam(ctx, e.resolver, baseURL, ""); err != nil {
		var ge *gwerr.Error
		if errors.As(err, &ge) {
			ge.Param = hostParam.String() // named only on failure: building the name costs an allocation
			return nil, nil, "", ge
		}
		return nil, nil, "", gwerr.BadRequest(hostParam.String(), "%v", err)
	}
	baseURL = strings.TrimRight(baseURL, "/")
	header := req.Header
	if header == nil {
		header = noHeader
	}
	t := &providers.Target{Provider: id, BaseURL: baseURL, APIKey: apiKey, Fields: fields, Header: header, Client: e.client}
	t.Forward = forwardHeaders(req, n)
	if n.CircuitBreaker == nil {
		return t, adapter, "", nil
	}
	// The breaker's key is the target's identity, which the provider's descriptor says how to form.
	return t, adapter, desc.Identity(t), nil
}

func noHeader(string) string { return "" }

// param names an input for an error: a field of a config node, or a header when n is nil.
type param struct {
	n    *config.Node
	name string
}

func (p param) String() string {
	if p.n == nil {
		return p.name
	}
	return configParam(p.n, p.name)
}

// configParam names a field of a node the way config errors do: "retry", "targets[1].retry" (without the
// "config." that option paths start with).
func configParam(n *config.Node, field string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(n.Path, "config"), ".")
	if rel == "" {
		return field
	}
	return rel + "." + field
}

// forwardHeaders copies the caller's headers that the config's forward_headers (or else the
// x-gateway-forward-headers header) names. Gateway headers never go upstream, whatever the list says.
func forwardHeaders(req *Request, n *config.Node) http.Header {
	names := n.ForwardHeaders
	if names == nil {
		names = req.ForwardNames
	}
	if len(names) == 0 || req.Header == nil {
		return nil
	}
	h := make(http.Header, len(names))
	for _, name := range names {
		if len(name) >= 10 && strings.EqualFold(name[:10], "x-gateway-") {
			continue
		}
		if v := req.Header(name); v != "" {
			h.Set(name, strings.Clone(v))
		}
	}
	return h
}

// patchBody applies override_params to the caller's body. Without them the caller's bytes go upstream
// untouched.
func patchBody(body []byte, n *config.Node) ([]byte, error) {
	if len(n.OverrideParams) == 0 {
		return body, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	for k, v := range n.OverrideParams {
		m[k] = v
	}
	return json.Marshal(m)
}

// fillUser sets the body's "user" to metadata._user when the body has none (the caller's or override_params').
func fillUser(body []byte, req *Request) ([]byte, error) {
	user := req.Metadata["_user"]
	if user == "" {
		return body, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	if _, has := m["user"]; has {
		return body, nil
	}
	m["user"], _ = json.Marshal(user)
	return json.Marshal(m)
}

// codeAttemptCap is the error code of a target not called because the request had made its cap of upstream
// attempts (Options.MaxUpstreamAttempts).
const codeAttemptCap = "upstream_attempt_cap"

// maxRetryWait is the longest wait between retries, whatever a Retry-After header asks for (DESIGN.md).
const maxRetryWait = 60 * time.Second

// attempts calls the target, retrying as its retry settings say, within the request's cap of upstream attempts.
// A wait that would run past the time budget (see waitFits) is not begun: the caller gets the last answer at once.
func (e *Engine) attempts(ctx context.Context, st *state, n *config.Node, adapter providers.Adapter, t *providers.Target, call *providers.Call, post func(*outcome)) *outcome {
	req := st.req
	retry := n.Retry
	max := 0
	if retry != nil {
		max = min(retry.Attempts, 5)
	}
	timeout := n.RequestTimeout // the config's, else the x-gateway-request-timeout header's, else the default
	if timeout <= 0 {
		timeout = req.Timeout
	}
	if timeout <= 0 {
		timeout = e.attemptTimeout
	}
	for i := 0; ; i++ {
		start := e.now()
		st.calls++
		out := e.attempt(ctx, adapter, t, call, timeout)
		out.retries, out.path, out.prov = i, n.Path, t.Provider
		if post != nil {
			post(out)
		}
		if i >= max || ctx.Err() != nil || !shouldRetry(retry, out) || e.atCap(st) {
			return out
		}
		wait := time.Duration(e.jitter(int64(backoffCap(i))))
		if retry.UseRetryAfterHeaders {
			if d, ok := retryAfter(out.header, e.now()); ok {
				wait = d
			}
		}
		if !e.waitFits(ctx, st, start.Add(timeout), wait) {
			e.log.Debug("retry wait beyond the time budget: answering with the last attempt", "trace_id", req.TraceID,
				"target", n.Path, "wait", wait, "retries", i)
			return out
		}
		out.discard()
		if e.sleep(ctx, wait) != nil {
			return out
		}
	}
}

// waitFits reports whether a wait before the next retry fits the time budget: at most maxRetryWait, and over
// before the earliest of the request's deadline, the caller's context deadline and the end of the attempt's
// request_timeout window (attemptEnd: the attempt's start plus its timeout, as inherited down the config or
// set by x-gateway-request-timeout). Waiting longer would only keep the caller from the answer it will get.
func (e *Engine) waitFits(ctx context.Context, st *state, attemptEnd time.Time, wait time.Duration) bool {
	if wait > maxRetryWait {
		return false
	}
	end := attemptEnd
	if !st.deadline.IsZero() && st.deadline.Before(end) {
		end = st.deadline
	}
	if d, ok := ctx.Deadline(); ok && d.Before(end) {
		end = d
	}
	return !e.now().Add(wait).After(end)
}

// backoffCap is the ceiling of the i-th retry's full-jitter wait: 250 ms doubling, at most 8 s.
func backoffCap(i int) time.Duration {
	d := 250 * time.Millisecond << uint(min(i, 5))
	return min(d, 8*time.Second) + 1
}

func shouldRetry(retry *config.Retry, out *outcome) bool {
	if out.err != nil {
		switch out.err.Code {
		case gwerr.CodeUpstream:
			return true
		case gwerr.CodeRequestTimeout:
			return retry.OnStatusCodes != nil && containsInt(retry.OnStatusCodes, http.StatusRequestTimeout)
		}
		return false
	}
	codes := retry.OnStatusCodes
	if codes == nil {
		codes = defaultRetryCodes
	}
	return containsInt(codes, out.status)
}

// retryAfter reads Retry-After-ms, x-ms-retry-after-ms and Retry-After (seconds or an HTTP date).
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	for _, name := range []string{"Retry-After-Ms", "X-Ms-Retry-After-Ms"} {
		if v := h.Get(name); v != "" {
			if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
				return time.Duration(ms * float64(time.Millisecond)), true
			}
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
			return time.Duration(s * float64(time.Second)), true
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(t.Sub(now), 0), true
		}
	}
	return 0, false
}

// attempt makes one upstream call bounded by timeout.
func (e *Engine) attempt(ctx context.Context, adapter providers.Adapter, t *providers.Target, call *providers.Call, timeout time.Duration) *outcome {
	actx, cancel := context.WithTimeout(ctx, timeout)
	req, err := adapter.NewRequest(actx, t, call)
	if err != nil {
		cancel()
		var ge *gwerr.Error
		if errors.As(err, &ge) {
			return &outcome{err: ge}
		}
		return &outcome{err: gwerr.Internal(fmt.Errorf("%s: build request: %w", t.Provider, netguard.RedactError(err)))}
	}
	resp, err := e.client.Do(req)
	if err != nil {
		cancel()
		return &outcome{err: transportError(ctx, actx, t, err)}
	}
	header := passHeaders(resp.Header)
	success := resp.StatusCode >= 200 && resp.StatusCode < 300
	if call.Stream && success {
		stream := resp.Body
		if tr, ok := adapter.(providers.StreamTranslator); ok {
			stream = tr.TranslateStream(t, call, resp.Body)
		}
		return &outcome{status: resp.StatusCode, header: header, stream: &attemptStream{ReadCloser: stream, cancel: cancel}}
	}
	body, err := readBody(resp)
	resp.Body.Close()
	cancel()
	if err != nil {
		return &outcome{err: transportError(ctx, actx, t, err)}
	}
	if !success {
		if tr, ok := adapter.(providers.ErrorTranslator); ok {
			body = tr.TranslateError(t, call, resp.StatusCode, body)
			header = jsonHeader(header)
		}
		return &outcome{status: resp.StatusCode, header: header, body: body}
	}
	if !json.Valid(body) {
		return &outcome{err: &gwerr.Error{Status: http.StatusBadGateway, Code: gwerr.CodeUpstream,
			Message: fmt.Sprintf("%s answered %d with a body that is not JSON", t.Provider, resp.StatusCode)}}
	}
	if tr, ok := adapter.(providers.ResponseTranslator); ok {
		if body, err = tr.TranslateResponse(t, call, body); err != nil {
			return &outcome{err: &gwerr.Error{Status: http.StatusBadGateway, Code: gwerr.CodeUpstream, Err: err,
				Message: fmt.Sprintf("%s answered in a shape the gateway could not translate: %v", t.Provider, err)}}
		}
		header = jsonHeader(header)
	}
	return &outcome{status: resp.StatusCode, header: header, body: body}
}

// jsonHeader marks a translated answer as JSON, whatever type the provider's own answer had.
func jsonHeader(h http.Header) http.Header {
	if h == nil {
		h = make(http.Header, 1)
	}
	h.Set("Content-Type", "application/json")
	return h
}

// readBody reads a whole upstream answer, in one allocation when its length is declared. It reads on to the
// end of the body: net/http reuses a connection only once its body has been read to EOF.
func readBody(resp *http.Response) ([]byte, error) {
	if n := resp.ContentLength; n >= 0 && n <= maxUpstreamBody {
		body := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, body); err != nil {
			return nil, err
		}
		var probe [1]byte
		if m, err := resp.Body.Read(probe[:]); m != 0 || (err != nil && err != io.EOF) {
			return nil, fmt.Errorf("answer longer than its Content-Length of %d bytes", n)
		}
		return body, nil
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxUpstreamBody))
}

// transportError names a failed call: 408 when the attempt's own timeout or the request's deadline expired,
// 400 when the host policy refused the address, 503 when the request was cancelled, else 502 upstream_error.
func transportError(parent, attempt context.Context, t *providers.Target, err error) *gwerr.Error {
	var ge *gwerr.Error
	if errors.As(err, &ge) {
		return ge
	}
	err = netguard.RedactError(err) // net/http's text holds the URL, whose userinfo may be an upstream's password
	if parent.Err() == nil && errors.Is(attempt.Err(), context.DeadlineExceeded) {
		return &gwerr.Error{Status: http.StatusRequestTimeout, Code: gwerr.CodeRequestTimeout, Err: err,
			Message: fmt.Sprintf("%s did not answer within the request timeout", t.Provider)}
	}
	if parent.Err() != nil {
		cause := context.Cause(parent)
		if errors.Is(cause, errRequestDeadline) {
			return &gwerr.Error{Status: http.StatusRequestTimeout, Code: gwerr.CodeRequestTimeout, Err: err, Message: errRequestDeadline.Error()}
		}
		if errors.Is(cause, context.DeadlineExceeded) {
			return &gwerr.Error{Status: http.StatusRequestTimeout, Code: gwerr.CodeRequestTimeout, Err: err, Message: "the request timed out"}
		}
		// The caller went away or the gateway is stopping: nobody may read this, but it must not read as the
		// provider's failure.
		return &gwerr.Error{Status: http.StatusServiceUnavailable, Code: gwerr.CodeUnavailable, Err: err,
			Message: fmt.Sprintf("the request was cancelled before %s answered: %v", t.Provider, cause)}
	}
	return &gwerr.Error{Status: http.StatusBadGateway, Code: gwerr.CodeUpstream, Err: err,
		Message: fmt.Sprintf("could not reach %s at %s: %s", t.Provider, netguard.RedactURL(t.BaseURL), rootCause(err))}
}

func rootCause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// passHeaders keeps the upstream headers a caller may want: content type, request id, rate limits.
func passHeaders(h http.Header) http.Header {
	var out http.Header
	for name, v := range h { // names are canonical: net/http canonicalised them
		switch {
		case name == "Content-Type", name == "Retry-After", name == "Retry-After-Ms", name == "X-Request-Id",
			name == "Openai-Processing-Ms", strings.HasPrefix(name, "X-Ratelimit-"):
			if out == nil {
				out = make(http.Header, 4)
			}
			out[name] = v
		}
	}
	return out
}

// attemptStream is an open upstream stream; closing it ends the attempt (and its timeout).
type attemptStream struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (s *attemptStream) Close() error {
	err := s.ReadCloser.Close()
	s.cancel()
	return err
}
