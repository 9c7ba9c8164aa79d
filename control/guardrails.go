package control

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// Saved guardrails: a guardrail object (SPEC.md's shape) stored under an ID in a workspace, named by that ID in
// config guardrail lists.

// ListGuardrails returns the caller's workspace's saved guardrails.
func (p *Plane) ListGuardrails(_ context.Context, caller Caller) ([]*storage.Guardrail, error) {
	list, err := p.store.Guardrails.List(caller.WorkspaceID)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	return list, nil
}

// GetGuardrail returns the caller's workspace's guardrail id; other workspaces' guardrails are 404.
func (p *Plane) GetGuardrail(_ context.Context, caller Caller, id string) (*storage.Guardrail, error) {
	g, err := p.store.Guardrails.Get(caller.WorkspaceID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, gwerr.NotFound("guardrail", id)
	}
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	return g, nil
}

// PutGuardrail saves obj (a decoded guardrail object; its "id" and "workspace", which the path and the caller
// give, are ignored) as the caller's workspace's guardrail id. It is checked as every saved guardrail is (the
// bootstrap file's too): unknown check ids, plugins the workspace has not stored and bad parameters are a 400
// naming the field relative to the object. Compiled checks are dropped, so the next request reads it.
func (p *Plane) PutGuardrail(_ context.Context, caller Caller, id string, obj map[string]json.RawMessage) (*storage.Guardrail, error) {
	if err := storage.CheckID("guardrail id", id); err != nil {
		return nil, gwerr.BadRequest("id", "%v", err)
	}
	delete(obj, "id")
	delete(obj, "workspace")
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	if err := guardrails.ValidateSavedIn(caller.WorkspaceID, raw, runtime.RequireStoredPlugins(p.store, p.pluginChecks)); err != nil {
		return nil, err
	}
	g := &storage.Guardrail{ID: id, WorkspaceID: caller.WorkspaceID, Guardrail: raw}
	if _, err := p.store.Guardrails.Put(caller.WorkspaceID, id, g); err != nil {
		return nil, gwerr.Internal(err)
	}
	p.forgetHooks()
	stored, err := p.store.Guardrails.Get(caller.WorkspaceID, id)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	p.log.Info("guardrail saved", "trace_id", caller.TraceID, "guardrail", id, "workspace_id", caller.WorkspaceID)
	return stored, nil
}

// DeleteGuardrail deletes the caller's workspace's guardrail id. Configs that still name it get a 400 when they
// run: compiled checks are dropped.
func (p *Plane) DeleteGuardrail(_ context.Context, caller Caller, id string) error {
	err := p.store.Guardrails.Delete(caller.WorkspaceID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return gwerr.NotFound("guardrail", id)
	}
	if err != nil {
		return gwerr.Internal(err)
	}
	p.forgetHooks()
	p.log.Info("guardrail deleted", "trace_id", caller.TraceID, "guardrail", id, "workspace_id", caller.WorkspaceID)
	return nil
}
