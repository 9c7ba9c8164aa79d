package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/storage"
)

// execLeaf calls one target: resolve it, consult its circuit breaker, then call with retries.
func (e *Engine) execLeaf(ctx context.Context, st *state, n *config.Node) *outcome {
	body := st.req.Body.Raw()
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
	t, adapter, id, gerr := e.resolveTarget(ctx, st.req, n)
	if gerr != nil {
		return &outcome{err: gerr, path: n.Path}
	}
	if st.req.Endpoint.IsMedia() {
		if gerr := checkMedia(st.req, n, t, adapter); gerr != nil { // media_step.go
			return &outcome{err: gerr, path: n.Path, prov: t.Provider}
		}
	}
	var err error
	if id.model != "" { // before override_params, which win over what the caller sent
		var buf [64]byte
		patch := [1]memberPatch{stringPatch(buf[:0], "model", id.model)}
		body, err = setMembers(body, patch[:], false)
	}
	if err == nil {
		body, err = patchBody(body, n)
	}
	if err != nil {
		return &outcome{err: gwerr.Internal(err), path: n.Path}
	}
	set, err := e.setOf(st, n)
	if err != nil {
		return &outcome{err: asGatewayError(err), path: n.Path}
	}
	var results HookResults
	soft := false // a check failed without denying: the answer says 246
	if set.Has(guardrails.StageBefore) {
		var mb *guardrails.Body
		if set.Mutates(guardrails.StageBefore) {
			mb = requestBody(st, body) // hooks.go
		}
		before := e.runStage(ctx, st, set, guardrails.StageBefore, requestText(st.conditionEnv().Params), mb)
		results.Before = before.Results
		e.runAsync(ctx, st.req.TraceID, before.Async)
		if before.Deny {
			return &outcome{status: gwerr.StatusHooksFailed, header: jsonContentType, body: hooksDenied(results), path: n.Path, prov: t.Provider,
				hooks: results}
		}
		soft = before.Failed
		if before.Body != nil { // validated by requestBody: it goes on to the cache key and the provider
			body = before.Body
		}
		if before.Transformed != nil && st.req.ContentType == "" { // an upload goes as sent (media_step.go)
			if body, err = replaceRequestText(body, *before.Transformed); err != nil {
				return &outcome{err: gwerr.Internal(err), path: n.Path}
			}
		}
	}
	step, hit := e.cacheLookup(ctx, st, n, t, id.address, adapter, body)
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
		br = e.breakers.get(id.identity)
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
	out := e.attempts(ctx, st, n, adapter, t, &providers.Call{Endpoint: st.req.Endpoint, Body: body, Request: &st.req.Body, Stream: st.req.Stream,
		Strict: n.StrictCompliance, ContentType: st.req.ContentType}, post)
	if out.hooks.Before == nil && out.hooks.After == nil { // afterHooks did not judge it: the before side alone
		out.hooks.Before = results.Before
	}
	if br != nil {
		e.settleBreaker(ctx, br, n.CircuitBreaker, out)
	}
	return out
}

// codeAttemptCap is the error code of a target not called because the request had made its cap of upstream
// attempts (Options.MaxUpstreamAttempts).
const codeAttemptCap = "upstream_attempt_cap"

// resolveTarget turns a leaf into a provider target: the provider named by the config (an identifier, "@slug"
// or virtual_key) or, when the config names none, by the request's headers. It also names the target, once, for
// its circuit breaker and cache (targetID).
func (e *Engine) resolveTarget(ctx context.Context, req *Request, n *config.Node) (*providers.Target, providers.Adapter, targetID, *gwerr.Error) {
	// Params are recorded as (node field) or a header name and turned into text only for an error.
	var id, slug, apiKey, baseURL, modelOverride string
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
			return nil, nil, targetID{}, &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidRequest, Param: "x-gateway-provider",
				Message: fmt.Sprintf("unknown provider %q in x-gateway-provider (known: %s)", req.Provider, strings.Join(providers.Identifiers(), ", "))}
		}
		id = canonical
		if req.CustomHost != "" {
			baseURL, hostParam = req.CustomHost, param{name: "x-gateway-custom-host"}
		}
	case req.CustomHost != "":
		return nil, nil, targetID{}, gwerr.BadRequest("x-gateway-provider",
			"x-gateway-custom-host needs x-gateway-provider to name the provider whose format the host speaks (openai when unsure)")
	default:
		ref, model, ok := modelReference(req)
		if !ok {
			return nil, nil, targetID{}, gwerr.BadRequest("x-gateway-provider",
				"no provider: send x-gateway-provider with Authorization, x-gateway-virtual-key, x-gateway-config or x-gateway-custom-host with x-gateway-provider, "+
					"or name a stored provider in the model as \"@slug/model\"")
		}
		slug, slugParam, modelOverride = ref, param{name: "model"}, model
	}
	if slug != "" {
		p, err := e.store.Providers.Get(req.Key.WorkspaceID, slug)
		if errors.Is(err, storage.ErrNotFound) {
			return nil, nil, targetID{}, &gwerr.Error{Status: http.StatusNotFound, Code: gwerr.CodeNotFound, Param: slugParam.String(),
				Message: fmt.Sprintf("provider %q not found in this workspace", "@"+slug)}
		}
		if err != nil {
			return nil, nil, targetID{}, gwerr.Internal(err)
		}
		id = p.Provider
		if len(fields) == 0 {
			fields = p.Fields // read only, as every Target's fields are: no copy needed
		} else {
			merged := make(map[string]json.RawMessage, len(p.Fields)+len(fields))
			for k, v := range p.Fields {
				merged[k] = v
			}
			for k, v := range fields {
				merged[k] = v
			}
			fields = merged
		}
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
		return nil, nil, targetID{}, gwerr.BadRequest(hostParam.String(), "provider %q is not supported by this gateway yet (supported: %s)",
			id, strings.Join(providers.Registered(), ", "))
	}
	adapter := desc.Adapter()
	if baseURL == "" {
		baseURL = desc.BaseURL
	} else if err := e.guard.CheckURLParam(ctx, e.resolver, baseURL, ""); err != nil {
		var ge *gwerr.Error
		if errors.As(err, &ge) {
			ge.Param = hostParam.String() // named only on failure: building the name costs an allocation
			return nil, nil, targetID{}, ge
		}
		return nil, nil, targetID{}, gwerr.BadRequest(hostParam.String(), "%v", err)
	}
	baseURL = strings.TrimRight(baseURL, "/")
	header := req.Header
	if header == nil {
		header = noHeader
	}
	t := &providers.Target{Provider: id, BaseURL: baseURL, APIKey: apiKey, Fields: fields, Header: header, Client: e.client}
	t.Forward = forwardHeaders(req, n)
	// The target's identity is the provider's descriptor's to form, in one pass, and only for the steps that
	// key on it: the circuit breaker, and the cache when the base URL alone does not address the target.
	var name targetID
	if n.CircuitBreaker != nil || (cacheOn(n, req) && keyedByAddress(t)) {
		name.identity, name.address = desc.Identify(t)
	}
	name.model = modelOverride
	return t, adapter, name, nil
}

// targetID names a resolved target for the steps that keep something per target (Descriptor.Identify): identity
// keys its circuit breaker, address (the same sum without the API key) its cached answers. Both are "" when
// no step of the target needs them. model, when set, is the model to send in place of the body's: the body
// named the target as "@slug/model" (modelReference).
type targetID struct {
	identity, address string
	model             string
}

// modelReference reads a model of the form "@slug/model": a stored provider of the workspace and the model to
// ask it for. It is how a caller that can set nothing but a base URL, a key and a model (Anthropic's SDKs and
// coding agents, most OpenAI clients) routes a request when neither a config nor a header names a provider;
// GET /v1/models lists the workspace's models in that form.
func modelReference(req *Request) (slug, model string, ok bool) {
	m := req.Body.Model()
	if len(m) < 4 || m[0] != '@' || req.ContentType != "" { // an upload's model cannot be rewritten
		return "", "", false
	}
	slug, model, ok = strings.Cut(m[1:], "/")
	return slug, model, ok && slug != "" && model != ""
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
// x-gateway-forward-headers header) names. Gateway headers (gatewayHeader) never go upstream, whatever the list
// says.
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
		if gatewayHeader(name) {
			continue
		}
		if v := req.Header(name); v != "" {
			h.Set(name, strings.Clone(v))
		}
	}
	return h
}

// gatewayHeader reports a header of the gateway's own, x-gateway-* or its Portkey twin x-portkey-* (which may
// carry the gateway key): never forwarded, whatever forward_headers lists.
func gatewayHeader(name string) bool {
	return len(name) >= 10 && strings.EqualFold(name[:10], "x-gateway-") ||
		len(name) >= 10 && strings.EqualFold(name[:10], "x-portkey-")
}

// patchBody applies override_params to the caller's body, in one pass that keeps every other byte
// (bodypatch.go). Without them the caller's bytes go upstream untouched.
func patchBody(body []byte, n *config.Node) ([]byte, error) {
	if len(n.OverrideParams) == 0 {
		return body, nil
	}
	var buf [8]memberPatch
	return setMembers(body, sortedPatches(buf[:0], n.OverrideParams), false)
}

// fillUser sets the body's "user" to metadata._user when the body has none (the caller's or override_params').
func fillUser(body []byte, req *Request) ([]byte, error) {
	user := req.Metadata["_user"]
	if user == "" || req.ContentType != "" { // an upload goes as sent (media_step.go)
		return body, nil
	}
	var buf [64]byte
	patch := [1]memberPatch{stringPatch(buf[:0], "user", user)}
	return setMembers(body, patch[:], true)
}
