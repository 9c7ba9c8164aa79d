package plugins

import (
	"context"
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/llmgw/gateway/hostapi"
)

// ErrNoTransform is what a transform call to a plugin without gateway_transform returns (wrapped, with the
// plugin's id): the plugin is not a body transformer, whatever its checks do.
var ErrNoTransform = errors.New("does not export " + hostapi.ExportTransform + " (i32, i32, i32) -> i64, so it cannot transform a body: " +
	"a mutator hook calls that export (sdk.HandleTransform in Go, plugin!(transform = f) in Rust, registerTransform and " +
	"a re-export of gateway_transform in AssemblyScript)")

// transformSig is the signature of the optional hostapi.ExportTransform: gateway_call's.
var transformSig = signature{[]api.ValueType{i32, i32, i32}, []api.ValueType{i64}}

func noTransform(id string) error { return fmt.Errorf("plugins: plugin %q %w", id, ErrNoTransform) }

// export returns the guest function a call of kind goes to, and its name for errors.
func (inst *instance) export(kind hostapi.Kind) (api.Function, string, error) {
	if kind != hostapi.KindTransform {
		return inst.call, hostapi.ExportCall, nil
	}
	if inst.transform == nil {
		return nil, hostapi.ExportTransform, noTransform(inst.v.id)
	}
	return inst.transform, hostapi.ExportTransform, nil
}

// transformExport returns the module's gateway_transform, or nil when it exports none with the ABI's signature.
// It is looked up once per instance: wazero builds a new api.Function on every lookup.
func transformExport(mod api.Module) api.Function {
	fn := mod.ExportedFunction(hostapi.ExportTransform)
	if fn == nil || !transformSig.matches(fn.Definition()) {
		return nil
	}
	return fn
}

// exportsTransform reports whether a module exports gateway_transform with the ABI's signature.
func exportsTransform(c wazero.CompiledModule) bool {
	f, ok := c.ExportedFunctions()[hostapi.ExportTransform]
	return ok && transformSig.matches(f)
}

// Transforms reports whether the workspace's plugin is loaded (loaded) and, if so, whether its current version
// exports gateway_transform (exports), so that a config naming it in a mutator hook can be refused at once.
func (e *Engine) Transforms(workspaceID, id string) (exports, loaded bool) {
	p := e.lookup(workspaceID, id)
	if p == nil {
		return false, false
	}
	v := p.cur.Load()
	if v == nil {
		return false, false
	}
	return exportsTransform(v.compiled), true
}

// Transform runs the workspace's plugin's gateway_transform on in (in.Body is the body to rewrite): the same
// pool, buffers, sandbox, deadline and errors as Call. A plugin without the export is an error wrapping
// ErrNoTransform that names it, and no instance is used. The Output's Body, when not nil, is one JSON object
// (a guest that returns anything else fails the call with ErrTrap); nil means the body is left as it was.
func (e *Engine) Transform(ctx context.Context, workspaceID, id string, in *hostapi.Input, req RequestView) (*hostapi.Output, error) {
	if err := e.canTransform(workspaceID, id); err != nil {
		return nil, err
	}
	out, err := e.Call(ctx, workspaceID, id, hostapi.KindTransform, in, req)
	if err != nil {
		return nil, err
	}
	if out.Body != nil && !isJSONObject(out.Body) { // the caller parses it as a request or an answer
		return nil, fmt.Errorf("plugins: plugin %q: %w: its output's body is not a JSON object", id, ErrTrap)
	}
	return out, nil
}

// TransformBody runs the plugin's gateway_transform with the bound check id and parameters on in, whose Body is
// the body to rewrite. It makes a WasmCheck usable in a mutator hook (the guardrails package asks for it by
// this method).
func (c *WasmCheck) TransformBody(ctx context.Context, in *hostapi.Input, req hostapi.RequestView) (hostapi.Output, error) {
	call := *in
	call.CheckID, call.Params = c.checkID, c.params
	out, err := c.e.Transform(ctx, c.workspaceID, c.pluginID, &call, req)
	if err != nil {
		return hostapi.Output{}, fmt.Errorf("plugin transform %s: %w", c.checkID, err)
	}
	return *out, nil
}

// CanTransform returns an error naming the plugin and gateway_transform when the plugin is loaded and lacks
// the export; nil when it has it, or is not loaded yet (a call then errors, as for any check).
func (c *WasmCheck) CanTransform() error { return c.e.canTransform(c.workspaceID, c.pluginID) }

// canTransform is an error wrapping ErrNoTransform when the plugin is loaded without gateway_transform.
func (e *Engine) canTransform(workspaceID, id string) error {
	if exports, loaded := e.Transforms(workspaceID, id); loaded && !exports {
		return noTransform(id)
	}
	return nil
}
