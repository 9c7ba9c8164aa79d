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

	"go.opentelemetry.io/otel/trace"

	"github.com/llmgw/gateway/runtime/catalog"
	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/netguard"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/tracing"
)

// maxUpstreamBody bounds a non-streamed upstream answer held in memory.
const maxUpstreamBody = 64 << 20

// defaultRetryCodes are the statuses retried when retry.on_status_codes is not set (DESIGN.md).
var defaultRetryCodes = []int{429, 500, 502, 503, 504}

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
	call, hideUsage := streamUsageCall(adapter, t, call) // streamusage.go: usage on every stream
	for i := 0; ; i++ {
		start := e.now()
		st.calls++
		called := time.Now() // not e.now: tests replace the engine's clock, and this measures real time
		bound := timeout
		if !call.Stream && !call.Endpoint.RawAnswer() && !start.Add(timeout).Before(st.deadline) {
			// The request's deadline ends a whole answer's wait first: a timer of the attempt's own would never
			// fire, and costs four allocations. A stream keeps its bound, which outlives the request's deadline.
			bound = 0
		}
		out := e.attempt(ctx, adapter, t, call, bound)
		took := time.Since(called)
		st.upstream += took
		out.retries, out.path, out.prov = i, n.Path, t.Provider
		out.models = t.Fields[catalog.OverridesField]
		if hideUsage && out.stream != nil {
			out.stream.hidden = hideUsageChunks(out.stream.ReadCloser)
			out.stream.ReadCloser = out.stream.hidden
		}
		if post != nil {
			post(out)
		}
		st.step(attemptStep(n, t.Provider, i, took, out)) // after post: an output guardrail's 446 is the step's status
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

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// noCancel is the cancel of an attempt without a timeout of its own.
func noCancel() {}

// attempt makes one upstream call bounded by timeout (0: only by ctx).
func (e *Engine) attempt(ctx context.Context, adapter providers.Adapter, t *providers.Target, call *providers.Call, timeout time.Duration) (out *outcome) {
	var span trace.Span // the attempt's client span when tracing is on (tracing.go)
	if tracing.Enabled() {
		ctx, span = startAttemptSpan(ctx, t, call)
		defer func() { endAttemptSpan(span, out) }()
	}
	adapter = e.responsesStep(ctx, adapter, call)      // responses_step.go: /v1/responses, native or translated
	adapter, local := e.messagesStep(adapter, t, call) // messages_step.go: /v1/messages, native or translated
	if local != nil {
		return local
	}
	actx, cancel := ctx, context.CancelFunc(noCancel)
	if timeout > 0 {
		actx, cancel = context.WithTimeout(ctx, timeout)
	}
	req, err := adapter.NewRequest(actx, t, call)
	if err != nil {
		cancel()
		var ge *gwerr.Error
		if errors.As(err, &ge) {
			return &outcome{err: ge}
		}
		return &outcome{err: gwerr.Internal(fmt.Errorf("%s: build request: %w", t.Provider, netguard.RedactError(err)))}
	}
	forwardTrace(ctx, span, t, req)
	// The transport itself, not the client: redirects are refused anyway (noRedirects), and http.Client's own
	// machinery (a header copier for redirects, a body rewinder, URL clones) costs eight allocations a call.
	resp, err := e.transport.RoundTrip(req)
	if err != nil {
		cancel()
		return &outcome{err: transportError(ctx, actx, t, err)}
	}
	header := passHeaders(resp.Header)
	success := resp.StatusCode >= 200 && resp.StatusCode < 300
	if success && call.Endpoint.RawAnswer() { // audio: its bytes pass through as they arrive (media_step.go)
		return rawOutcome(resp, header, cancel)
	}
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
	if !call.Endpoint.AnyAnswer() && !json.Valid(body) { // a transcript may be text (media_step.go)
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
	hidden *usageHider // the usage chunk is hidden from the caller: its figures are here (streamusage.go)
}

func (s *attemptStream) Close() error {
	err := s.ReadCloser.Close()
	s.cancel()
	return err
}
