package plugins

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// WasmCheck is one check of a workspace's wasm plugin with its parameters bound. It satisfies the guardrails
// package's Check interface (cmd wires it there), so the guardrails package never imports this one.
type WasmCheck struct {
	e           *Engine
	workspaceID string
	pluginID    string
	checkID     string
	params      []hostapi.KV
}

// CheckFor binds "<pluginID>.<checkName>" of a workspace with its parameters (a JSON object whose values reach
// the guest as JSON text). The plugin need not be loaded yet: a call to a plugin that is not loaded is a check
// error, which the caller's failOnError rule decides.
func (e *Engine) CheckFor(workspaceID, pluginID, checkName string, params json.RawMessage) (*WasmCheck, error) {
	if err := storage.CheckID("plugin id", pluginID); err != nil {
		return nil, gwerr.BadRequest("", "%v", err)
	}
	c := &WasmCheck{e: e, workspaceID: workspaceID, pluginID: pluginID, checkID: pluginID + "." + checkName}
	if len(params) > 0 && string(params) != "null" {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(params, &fields); err != nil {
			return nil, gwerr.BadRequest("", "parameters of %s must be a JSON object", c.checkID)
		}
		names := make([]string, 0, len(fields))
		for name := range fields {
			names = append(names, name)
		}
		sort.Strings(names) // the same parameters reach the guest in the same order
		for _, name := range names {
			c.params = append(c.params, hostapi.KV{Key: name, Value: string(fields[name])})
		}
	}
	return c, nil
}

// Check runs the plugin on in with the bound check id and parameters.
func (c *WasmCheck) Check(ctx context.Context, in *hostapi.Input, req hostapi.RequestView) (hostapi.Output, error) {
	call := *in
	call.CheckID, call.Params = c.checkID, c.params
	out, err := c.e.Call(ctx, c.workspaceID, c.pluginID, hostapi.KindCheck, &call, req)
	if err != nil {
		return hostapi.Output{}, fmt.Errorf("plugin check %s: %w", c.checkID, err)
	}
	return *out, nil
}

// Condition asks the workspace's plugin whether a conditional-routing query matches: it runs the plugin with
// kind condition and reads the match flag. An error counts as no match.
func (e *Engine) Condition(ctx context.Context, workspaceID, pluginID string, in *hostapi.Input, req hostapi.RequestView) (bool, error) {
	out, err := e.Call(ctx, workspaceID, pluginID, hostapi.KindCondition, in, req)
	if err != nil {
		return false, err
	}
	return out.Match, nil
}
