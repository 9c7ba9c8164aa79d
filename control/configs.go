package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// Saved configs of the caller's workspace, named in x-gateway-config by their ID. A config is checked by
// CheckConfig, which the bootstrap file's entries go through too. The engine reads a saved config through
// storage's read cache (dropped by every Put and Delete) and compiles it through its plan cache, which is keyed
// by the config's text: a replaced config is new text, so the next request compiles and follows it, and a
// deleted one is unknown at once. Lists are ordered by ID.

// NewConfig is the body of POST /v1/configs.
type NewConfig struct {
	ID     string          `json:"id"`
	Config json.RawMessage `json:"config"`
}

// CheckConfig checks a saved config as the engine checks a config sent in x-gateway-config (config.Load: its
// shape, targets, strategy, hooks and guardrails with their check ids and parameters), returning that error: a
// 400 whose Param is the JSON path in the config. An empty object is let through, as DESIGN.md's example
// bootstrap file has one: it is stored, and a request that names it gets the validation error then. Whether the
// plugins its checks name exist is checked when a request uses it.
func CheckConfig(raw json.RawMessage) error {
	if bytes.Equal(bytes.Join(bytes.Fields(raw), nil), []byte("{}")) {
		return nil
	}
	_, err := config.Load(raw)
	return err
}

// checkConfigBody checks a config given as the "config" field of a body: a JSON object, by CheckConfig, its
// errors' paths under "config".
func checkConfigBody(raw json.RawMessage) error {
	if k := config.Kind(raw); k != "object" {
		return gwerr.BadRequest("config", "config is required and must be an object, not %s", k)
	}
	err := CheckConfig(raw)
	var ge *gwerr.Error
	if errors.As(err, &ge) {
		out := *ge
		if out.Param == "" {
			out.Param = "config"
		} else {
			out.Param = "config." + ge.Param
		}
		return &out
	}
	if err != nil {
		return gwerr.BadRequest("config", "%v", err)
	}
	return nil
}

// ListConfigs returns a page of the caller's workspace's saved configs, ordered by ID.
func (p *Plane) ListConfigs(_ context.Context, caller Caller, pg Page) ([]*storage.Config, bool, error) {
	all, err := p.store.Configs.List(caller.WorkspaceID)
	if err != nil {
		return nil, false, gwerr.Internal(err)
	}
	slices.SortFunc(all, func(a, b *storage.Config) int { return strings.Compare(a.ID, b.ID) })
	items, more := PageOf(all, func(c *storage.Config) string { return c.ID }, pg)
	return items, more, nil
}

// GetConfig returns the caller's workspace's saved config id.
func (p *Plane) GetConfig(_ context.Context, caller Caller, id string) (*storage.Config, error) {
	c, err := p.store.Configs.Get(caller.WorkspaceID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, gwerr.NotFound("config", id)
	}
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	return c, nil
}

// CreateConfig saves req.Config as the caller's workspace's config req.ID. A taken ID is 409.
func (p *Plane) CreateConfig(ctx context.Context, caller Caller, req NewConfig) (*storage.Config, error) {
	if err := storage.CheckID("id", req.ID); err != nil {
		return nil, gwerr.BadRequest("id", "%v", err)
	}
	if err := checkConfigBody(req.Config); err != nil {
		return nil, err
	}
	p.configWrites.Lock()
	defer p.configWrites.Unlock()
	switch _, err := p.store.Configs.Get(caller.WorkspaceID, req.ID); {
	case err == nil:
		return nil, gwerr.Newf(http.StatusConflict, gwerr.CodeConflict, "config %q already exists in this workspace (replace it with PUT /v1/configs/%s)", req.ID, req.ID)
	case !errors.Is(err, storage.ErrNotFound):
		return nil, gwerr.Internal(err)
	}
	if _, err := p.store.Configs.Put(caller.WorkspaceID, req.ID, &storage.Config{ID: req.ID, WorkspaceID: caller.WorkspaceID, Config: req.Config}); err != nil {
		return nil, gwerr.Internal(err)
	}
	p.log.Info("config created", "trace_id", caller.TraceID, "config", req.ID, "workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	return p.GetConfig(ctx, caller, req.ID)
}

// ReplaceConfig replaces the caller's workspace's saved config id with raw; the next request that names it
// follows the new one.
func (p *Plane) ReplaceConfig(ctx context.Context, caller Caller, id string, raw json.RawMessage) (*storage.Config, error) {
	if err := checkConfigBody(raw); err != nil {
		return nil, err
	}
	p.configWrites.Lock()
	defer p.configWrites.Unlock()
	if _, err := p.GetConfig(ctx, caller, id); err != nil {
		return nil, err
	}
	if _, err := p.store.Configs.Put(caller.WorkspaceID, id, &storage.Config{ID: id, WorkspaceID: caller.WorkspaceID, Config: raw}); err != nil {
		return nil, gwerr.Internal(err)
	}
	p.log.Info("config replaced", "trace_id", caller.TraceID, "config", id, "workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	return p.GetConfig(ctx, caller, id)
}

// DeleteConfig deletes the caller's workspace's saved config id; a request that names it then gets 404.
func (p *Plane) DeleteConfig(_ context.Context, caller Caller, id string) error {
	p.configWrites.Lock()
	defer p.configWrites.Unlock()
	err := p.store.Configs.Delete(caller.WorkspaceID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return gwerr.NotFound("config", id)
	}
	if err != nil {
		return gwerr.Internal(err)
	}
	p.log.Info("config deleted", "trace_id", caller.TraceID, "config", id, "workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	return nil
}
