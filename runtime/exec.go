package runtime

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime/condition"
	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/gwerr"
)

// state is what one request's walk through its plan shares.
type state struct {
	ctx      context.Context
	req      *Request
	planHash string
	// pluginCondition answers $plugin queries (Options.PluginCondition); nil when no plugin engine is wired.
	pluginCondition PluginCondition
	env             *condition.Env // built on the first conditional strategy or check that needs the parsed body
	// deadline is when Options.RequestDeadline ends the request (by the engine's clock): a wait past it is
	// never begun.
	deadline time.Time
	calls    int  // upstream attempts made so far, retries included (Options.MaxUpstreamAttempts)
	capSaid  bool // the log already says that the cap stopped the request
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

func (st *state) conditionEnv() *condition.Env {
	if st.env == nil {
		env := &condition.Env{Metadata: st.req.Metadata, URLPath: st.req.URLPath}
		_ = json.Unmarshal(st.req.Body, &env.Params) // the body was checked to be a JSON object
		if st.pluginCondition != nil && st.req.Key != nil {
			env.Plugin = st.askPlugin
		}
		st.env = env
	}
	return st.env
}

// askPlugin runs a $plugin condition: the workspace's plugin sees the request's text, model and metadata, and
// the query's $params; an error (a plugin missing, trapping or too slow) counts as no match.
func (st *state) askPlugin(id string, params json.RawMessage) bool {
	in := checkInput(st, "condition", requestText(st.env.Params))
	if len(params) > 0 {
		var fields map[string]json.RawMessage
		if json.Unmarshal(params, &fields) == nil {
			for k, v := range fields {
				in.Params = append(in.Params, hostapi.KV{Key: k, Value: string(v)})
			}
		}
	}
	ok, err := st.pluginCondition(st.ctx, st.req.Key.WorkspaceID, id, in, requestView{st})
	return err == nil && ok
}

// outcome is what a target (or a strategy) answered.
type outcome struct {
	status  int
	header  http.Header
	body    []byte
	stream  *attemptStream // a 2xx streamed answer, still open
	err     *gwerr.Error   // the gateway's own answer (timeout, transport failure, bad target), when set
	open    bool           // the target's circuit breaker is open: it was not called
	capped  bool           // the request had made its cap of upstream attempts: the target was not called
	path    string
	prov    string
	retries int
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
		OptionPath: o.path, CacheStatus: o.cacheStatus}
	if r.CacheStatus == "" {
		r.CacheStatus = CacheDisabled
	}
	if o.stream != nil {
		r.Stream = o.stream
	}
	return r, nil
}

// discard releases an outcome that will not be sent.
func (o *outcome) discard() {
	if o.stream != nil {
		o.stream.Close()
	}
}

// exec runs a node: a strategy over its children, or a leaf target.
func (e *Engine) exec(ctx context.Context, st *state, n *config.Node) *outcome {
	if len(n.Children) == 0 {
		return e.execLeaf(ctx, st, n)
	}
	switch n.Mode {
	case config.ModeFallback:
		return e.execFallback(ctx, st, n)
	case config.ModeLoadbalance:
		return e.execLoadbalance(ctx, st, n)
	case config.ModeConditional:
		next := n.DefaultNext
		env := st.conditionEnv()
		for _, c := range n.Conditions {
			ok, err := condition.Eval(c.Match, env) // a $expr over its limits fails the request (400)
			if err != nil {
				return &outcome{path: n.Path, err: err}
			}
			if ok {
				next = c.Next
				break
			}
		}
		if next < 0 { // validation requires a default; a hand-built plan might lack one
			return &outcome{path: n.Path, err: gwerr.BadRequest(configParam(n, "strategy.default"),
				"no condition matched and the conditional strategy has no default")}
		}
		return e.exec(ctx, st, n.Children[next])
	default: // single: the first target
		return e.exec(ctx, st, n.Children[0])
	}
}

// execFallback tries the children in order until one answers with a status that does not trigger fallback.
// The caller gets the last answer when all fail, or when the request reaches its cap of upstream attempts
// before the last child; 503 circuit_open when every target was skipped as open.
func (e *Engine) execFallback(ctx context.Context, st *state, n *config.Node) *outcome {
	var lastCalled, capped *outcome // the last answer of a target that was really called; a target the cap passed over
	for i, child := range n.Children {
		out := e.exec(ctx, st, child)
		if ctx.Err() != nil || !fallsBack(n, child, out) {
			if lastCalled != nil {
				lastCalled.discard()
			}
			return out
		}
		if out.called() {
			if lastCalled != nil {
				lastCalled.discard()
			}
			lastCalled = out
		} else if out.capped {
			capped = out
		}
		if i+1 < len(n.Children) && e.atCap(st) {
			break
		}
	}
	if lastCalled != nil {
		return lastCalled
	}
	if capped != nil {
		return capped
	}
	return &outcome{open: true}
}

// fallsBack decides whether the answer of child moves the fallback on: a skipped (open) target always does; a
// target's own on_status_codes, else the strategy's, name the statuses that do; without either, any status
// outside 2xx does (246 counts as success, 446 falls back).
func fallsBack(parent, child *config.Node, out *outcome) bool {
	if !out.called() {
		return true
	}
	status := out.status
	if out.err != nil {
		status = out.err.Status
	}
	codes := child.TargetOnStatus
	if codes == nil {
		codes = parent.OnStatusCodes
	}
	if codes == nil {
		return status < 200 || status > 299
	}
	return containsInt(codes, status)
}

func containsInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// execLoadbalance picks a child with probability weight / sum of weights. A child whose breaker is open is
// set aside and another is drawn among the rest.
func (e *Engine) execLoadbalance(ctx context.Context, st *state, n *config.Node) *outcome {
	var tried uint64 // bit i: child i was drawn and found open (targets per level are few)
	for {
		i := e.pick(n.Weights, tried)
		if i < 0 {
			return &outcome{open: true}
		}
		out := e.exec(ctx, st, n.Children[i])
		if !out.open || i >= 64 || e.atCap(st) {
			return out
		}
		tried |= 1 << uint(i)
	}
}

// pick draws an index by weight, skipping weight-0 children and those marked in skip; -1 when none is left.
func (e *Engine) pick(weights []float64, skip uint64) int {
	const scale = 1 << 20
	var total int64
	for i, w := range weights {
		if w > 0 && (i >= 64 || skip&(1<<uint(i)) == 0) {
			total += int64(w*scale) + 1
		}
	}
	if total == 0 {
		return -1
	}
	r := e.jitter(total)
	for i, w := range weights {
		if w > 0 && (i >= 64 || skip&(1<<uint(i)) == 0) {
			r -= int64(w*scale) + 1
			if r < 0 {
				return i
			}
		}
	}
	return -1
}
