package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/runtime/condition"
	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
	"github.com/llmgw/gateway/storage"
)

// Request is one inference request as routes hands it over: the caller's body and the gateway headers, parsed.
// It is created per request and is not safe for concurrent use.
type Request struct {
	Endpoint providers.Endpoint
	URLPath  string
	Body     schema.Body // the caller's JSON body as routes read it; the engine does not modify it
	// ContentType is the body's content type when it is not JSON: a multipart upload's, boundary included
	// (schema.FormBody). Such a body goes upstream unchanged: no override_params, _user or transformer applies.
	ContentType string
	Stream      bool
	Key         *storage.APIKey

	// Gateway headers.
	Provider      string // x-gateway-provider
	Authorization string // the caller's Bearer token (Authorization header), for the provider
	VirtualKey    string // x-gateway-virtual-key
	Config        string // x-gateway-config: inline JSON or a saved config ID
	CustomHost    string // x-gateway-custom-host
	Metadata      map[string]string
	TraceID       string
	Timeout       time.Duration // x-gateway-request-timeout; 0 when absent
	ForwardNames  []string      // x-gateway-forward-headers
	CacheRefresh  bool          // x-gateway-cache-force-refresh
	CacheNS       string        // x-gateway-cache-namespace

	// Header reads any of the caller's request headers; valid only during Engine.Do.
	Header func(name string) string

	// RenderPrompt renders another prompt template with the request's variables, for targets that name a
	// prompt_id (DESIGN.md): set by /v1/prompts/{id}/completions, nil on other endpoints.
	RenderPrompt func(promptID string) ([]byte, error)

	// Cancel, when set, cancels the context given to Engine.Do, and the engine ends the request through it when
	// the request deadline passes, instead of deriving a context of its own: one context less per request. The
	// caller then ends that context itself once the answer is sent (a stream: once it is closed).
	Cancel context.CancelCauseFunc

	// Route is set by Engine.Do, whether it answers or fails: every target the request called (each retry a
	// step) or passed over (an open breaker, the attempt cap), in order, at most storage.MaxLogRouteSteps. It
	// is the request log's route; it is on the Request because a failure has no Response to carry it.
	Route []storage.LogRouteStep
}

// Response is the answer to send back. Exactly one of Body and Stream is set. The caller must Close the
// response, which releases the upstream connection.
type Response struct {
	Status int
	Header http.Header // upstream headers worth passing on (content type, request id, rate-limit headers)
	Body   []byte
	Stream io.ReadCloser // an upstream SSE body, for streamed 2xx answers
	// Raw says that Stream is not events but the provider's answer as bytes (audio/speech), to pass through as
	// they arrive with the provider's content type (Header).
	Raw bool

	Provider    string // canonical identifier of the provider that answered
	Retries     int    // retries made on the target that answered
	OptionPath  string // the answering target's path, e.g. "config.targets[1]"
	CacheStatus string // HIT, SEMANTIC HIT, MISS, REFRESH or DISABLED
	RateLimit   RateLimitFigures

	// Usage is the answer's token usage and cost, read once by the engine: at once for a whole answer, when the
	// stream is closed for a streamed one (zero until then). Answers from the cache and failures have none.
	Usage Usage
	// Upstream is the time spent waiting on providers: every attempt's call, retries and fallbacks included,
	// to the end of a whole answer's body or to a stream's headers (the stream's own time is the caller's to add).
	Upstream time.Duration
	// Fallbacks counts the targets moved past before the one that answered (DESIGN.md gateway_fallbacks_total).
	Fallbacks int
	// HookResults are the answering target's hook results: both sides for a whole answer, the before side for
	// a stream (its after side runs as the stream ends); empty when no hook ran.
	HookResults HookResults

	models json.RawMessage // the answering stored provider's catalogue overrides, for pricing
}

// Usage is the token usage of an answer and its price.
type Usage struct {
	InputTokens, OutputTokens int64
	// Known is true when the answer reported usage, or the gateway estimated it (Estimated: a stream that
	// reported none, measured by its text at about four bytes a token).
	Known, Estimated bool
	// CostUSD is the usage priced by the model catalogue (catalog.Cost); CostKnown is false when the catalogue
	// has no price for the model.
	CostUSD   float64
	CostKnown bool
}

// Close releases the upstream stream, if any.
func (r *Response) Close() error {
	if r.Stream != nil {
		return r.Stream.Close()
	}
	return nil
}

// RateLimitFigures are the x-ratelimit-limit, -remaining and -reset (seconds) of the most constrained
// rate-limit policy that admitted the request; Set is false when no policy applied.
type RateLimitFigures struct {
	Limit, Remaining float64
	Reset            int64
	Set              bool
}

// state is what one request's walk through its plan shares.
type state struct {
	req      *Request
	planHash string
	env      *condition.Env // built on the first conditional strategy or check that needs the parsed body
	// deadline is when Options.RequestDeadline ends the request (by the engine's clock): a wait past it is
	// never begun.
	deadline time.Time
	calls    int // upstream attempts made so far, retries included (Options.MaxUpstreamAttempts)
	// upstream is the time spent in upstream calls so far, and fallbacks the targets moved past (Response).
	upstream  time.Duration
	fallbacks int
	capSaid   bool // the log already says that the cap stopped the request
	// hooked are the plan's leaves with checks and sets their compiled checks, in the same order (checkHooks);
	// oneSet holds the usual single set without an allocation.
	hooked []*config.Node
	sets   []*guardrails.Set
	oneSet [1]*guardrails.Set
	// route is Request.Route as it is recorded; oneStep holds the usual single step without an allocation.
	route   []storage.LogRouteStep
	oneStep [1]storage.LogRouteStep
}

// step records one step of the request's route (Request.Route), past the bound silently.
func (st *state) step(s storage.LogRouteStep) {
	if st.route == nil {
		st.route = st.oneStep[:0]
	}
	if len(st.route) < storage.MaxLogRouteSteps {
		st.route = append(st.route, s)
	}
}

// passedStep is the route step of a leaf that made no call: its breaker was open, the attempt cap passed it
// over, it failed before its call (an unknown provider, a before-request hook's deny), or the cache answered.
func passedStep(n *config.Node, out *outcome) storage.LogRouteStep {
	s := storage.LogRouteStep{Path: n.Path, Provider: out.prov, Status: out.status}
	switch {
	case out.open:
		s.Outcome = storage.RouteCircuitOpen
	case out.capped:
		s.Outcome, s.Status = storage.RouteSkipped, 0
	case out.err != nil:
		s.Outcome, s.Status, s.Error = storage.RouteError, out.err.Status, logLine(out.err.Message)
	case out.ok():
		s.Outcome = storage.RouteOK
	default:
		s.Outcome, s.Error = storage.RouteError, answerError(out.body)
	}
	if s.Outcome != storage.RouteError {
		s.Error = ""
	}
	return s
}

// attemptStep is the route step of one call of a target.
func attemptStep(n *config.Node, provider string, attempt int, took time.Duration, out *outcome) storage.LogRouteStep {
	s := storage.LogRouteStep{Path: n.Path, Provider: provider, Attempt: attempt, Status: out.status, Latency: took,
		Outcome: storage.RouteOK}
	switch {
	case out.err != nil:
		s.Outcome, s.Status, s.Error = storage.RouteError, out.err.Status, logLine(out.err.Message)
	case !out.ok():
		s.Outcome, s.Error = storage.RouteError, answerError(out.body)
	}
	return s
}

// answerError is the message of an error answer's body ({"error": {"message": ...}} or {"error": "..."}), cut
// as logLine cuts; "" when it has none. It runs on failed attempts only.
func answerError(body []byte) string {
	var v struct {
		Error json.RawMessage `json:"error"`
	}
	if len(body) == 0 || json.Unmarshal(body, &v) != nil || len(v.Error) == 0 {
		return ""
	}
	var msg string
	if json.Unmarshal(v.Error, &msg) != nil {
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(v.Error, &obj) != nil {
			return ""
		}
		msg = obj.Message
	}
	return logLine(msg)
}

func (st *state) conditionEnv() *condition.Env {
	if st.env == nil {
		env := &condition.Env{Metadata: st.req.Metadata, URLPath: st.req.URLPath}
		env.Params = st.req.Body.Params()
		st.env = env
	}
	return st.env
}

// atCap reports whether the request has made its cap of upstream attempts. Callers ask it only when they
// would otherwise make another call, so the first true is logged as the reason the request stops there.
func (e *Engine) atCap(st *state) bool {
	if st.calls < e.maxAttempts {
		return false
	}
	if !st.capSaid {
		st.capSaid = true
		e.log.Warn("upstream attempt cap reached: no more retries, fallbacks or re-draws; the caller gets the last attempt's answer",
			"trace_id", st.req.TraceID, "cap", e.maxAttempts, "attempts", st.calls)
	}
	return true
}

// outcome is what a target (or a strategy) answered.
type outcome struct {
	status  int
	header  http.Header
	body    []byte
	stream  *attemptStream // a 2xx streamed answer, still open
	raw     bool           // stream is a raw answer's bytes, not events (Response.Raw)
	err     *gwerr.Error   // the gateway's own answer (timeout, transport failure, bad target), when set
	open    bool           // the target's circuit breaker is open: it was not called
	capped  bool           // the request had made its cap of upstream attempts: the target was not called
	path    string
	prov    string
	retries int
	models  json.RawMessage // the stored provider's catalogue overrides (Response.models)
	// hooks are the target's hook results (Response.HookResults).
	hooks HookResults
	// cacheStatus is x-gateway-cache-status of the answer: HIT, SEMANTIC HIT, MISS or REFRESH when the
	// target's config enables the cache; "" means DISABLED.
	cacheStatus string
}

func (o *outcome) ok() bool { return o.err == nil && !o.open && o.status >= 200 && o.status < 300 }

// called reports whether the outcome is a target's answer (or its failure), not a target passed over.
func (o *outcome) called() bool { return !o.open && !o.capped }

// response turns the final outcome into the answer to send.
func (o *outcome) response() (*Response, error) {
	if o.open {
		return nil, &gwerr.Error{Status: http.StatusServiceUnavailable, Code: "circuit_open",
			Message: "every target is unavailable: their circuit breakers are open after repeated failures; try again after the cooldown"}
	}
	if o.err != nil {
		return nil, o.err
	}
	r := &Response{Status: o.status, Header: o.header, Body: o.body, Provider: o.prov, Retries: o.retries,
		OptionPath: o.path, CacheStatus: o.cacheStatus, HookResults: o.hooks, models: o.models}
	if r.CacheStatus == "" {
		r.CacheStatus = CacheDisabled
	}
	if o.stream != nil {
		r.Stream, r.Raw = o.stream, o.raw
	}
	return r, nil
}

// discard releases an outcome that will not be sent.
func (o *outcome) discard() {
	if o.stream != nil {
		o.stream.Close()
	}
}

// errRequestDeadline is the cause of a request's context when Options.RequestDeadline ends it. It is a
// context.DeadlineExceeded, so that the request answers 408 like a timed-out attempt.
var errRequestDeadline error = requestDeadlineError{}

type requestDeadlineError struct{}

func (requestDeadlineError) Error() string {
	return "the request did not finish within the gateway's request deadline"
}

func (requestDeadlineError) Is(target error) bool { return target == context.DeadlineExceeded }

// asGatewayError keeps a *gwerr.Error and makes anything else a 500.
func asGatewayError(err error) *gwerr.Error {
	var ge *gwerr.Error
	if errors.As(err, &ge) {
		return ge
	}
	return gwerr.Internal(err)
}

var jsonContentType = http.Header{"Content-Type": {"application/json"}}
