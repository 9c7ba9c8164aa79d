package runtime

import (
	"context"
	"encoding/json"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime/condition"
	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/gwerr"
)

// exec runs a node: a strategy over its children, or a leaf target.
func (e *Engine) exec(ctx context.Context, st *state, n *config.Node) *outcome {
	if len(n.Children) == 0 {
		steps := len(st.route)
		out := e.execLeaf(ctx, st, n)
		if len(st.route) == steps { // no call made: the route still says what became of the target
			st.step(passedStep(n, out))
		}
		return out
	}
	switch n.Mode {
	case config.ModeFallback:
		return e.execFallback(ctx, st, n)
	case config.ModeLoadbalance:
		return e.execLoadbalance(ctx, st, n)
	case config.ModeConditional:
		next, err := e.conditionalNext(ctx, st, n)
		if err != nil {
			return &outcome{path: n.Path, err: err}
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

// conditionalNext returns the child the first matching condition names, else the default (-1 when a hand-built
// plan has none). A $expr over its limits is an error (400).
func (e *Engine) conditionalNext(ctx context.Context, st *state, n *config.Node) (int, *gwerr.Error) {
	env := st.conditionEnv()
	if e.pluginCondition != nil && st.req.Key != nil {
		// $plugin conditions run under this request's context: the asker is bound to it for these conditions
		// only, so that the request's Env keeps no context once they are decided.
		env.Plugin = func(id string, params json.RawMessage) bool { return e.askPlugin(ctx, st, id, params) }
		defer func() { env.Plugin = nil }()
	}
	for _, c := range n.Conditions {
		ok, err := condition.Eval(c.Match, env)
		if err != nil {
			return 0, err
		}
		if ok {
			return c.Next, nil
		}
	}
	return n.DefaultNext, nil
}

// askPlugin runs a $plugin condition: the workspace's plugin sees the request's text, model and metadata, and
// the query's $params; an error (a plugin missing, trapping or too slow) counts as no match.
func (e *Engine) askPlugin(ctx context.Context, st *state, id string, params json.RawMessage) bool {
	in := checkInput(st, "condition", requestText(st.env.Params))
	if len(params) > 0 {
		var fields map[string]json.RawMessage
		if json.Unmarshal(params, &fields) == nil {
			for k, v := range fields {
				in.Params = append(in.Params, hostapi.KV{Key: k, Value: string(v)})
			}
		}
	}
	ok, err := e.pluginCondition(ctx, st.req.Key.WorkspaceID, id, in, requestView{st})
	return err == nil && ok
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
		if i+1 < len(n.Children) {
			if e.atCap(st) {
				break
			}
			st.fallbacks++
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
