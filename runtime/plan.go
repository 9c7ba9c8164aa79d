package runtime

import (
	"errors"
	"net/http"
	"strings"

	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// plan returns the compiled config of the request: the x-gateway-config header (inline or a saved ID), or a
// single target made of the request's headers.
func (e *Engine) plan(req *Request) (*config.Plan, error) {
	var workspaceID string
	if req.Key != nil {
		workspaceID = req.Key.WorkspaceID
	}
	return e.configPlan(workspaceID, req.Config)
}

// configPlan compiles x-gateway-config as sent (inline, or the ID of a config saved in workspaceID); a request
// without one has headerPlan.
func (e *Engine) configPlan(workspaceID, config string) (*config.Plan, error) {
	raw := strings.TrimSpace(config)
	if raw == "" {
		return headerPlan, nil
	}
	if strings.HasPrefix(raw, "{") {
		return e.configs.LoadString(raw)
	}
	saved, err := e.store.Configs.Get(workspaceID, raw)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, &gwerr.Error{Status: http.StatusNotFound, Code: gwerr.CodeNotFound, Param: "x-gateway-config",
			Message: "config " + quote(raw) + " not found in this workspace (x-gateway-config takes a saved config ID or a JSON object)"}
	}
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	return e.configs.Load(saved.Config)
}

// headerPlan is the plan of a request without a config: one target whose provider comes from the headers.
var headerPlan = &config.Plan{Root: &config.Node{Path: "config", Mode: config.ModeSingle}}

func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return `"` + s + `"`
}

// checkHooks compiles the checks of every target of the plan that has any, before anything is sent: DESIGN.md
// validates a config whole, so an unknown check id on a target that would run only as a fallback is a 400 too,
// not a failure that moves the fallback on. Compiled sets are cached, so this is a lookup per hooked target.
func (e *Engine) checkHooks(st *state, plan *config.Plan) error {
	if st.req.Key == nil {
		return nil
	}
	st.hooked = plan.Hooked
	st.sets = st.oneSet[:0]
	if len(plan.Hooked) > len(st.oneSet) {
		st.sets = make([]*guardrails.Set, 0, len(plan.Hooked))
	}
	for _, n := range plan.Hooked {
		set, err := e.hooks(st, n)
		if err != nil {
			return asGatewayError(err)
		}
		st.sets = append(st.sets, set)
	}
	return nil
}

// setOf returns the compiled checks of a leaf: those checkHooks found, else (a request without a key) compiled
// now. A leaf's checks are looked up once per request.
func (e *Engine) setOf(st *state, n *config.Node) (*guardrails.Set, error) {
	for i, h := range st.hooked {
		if h == n && i < len(st.sets) {
			return st.sets[i], nil
		}
	}
	return e.hooks(st, n)
}
