package control

import (
	"context"
	"errors"
	"strings"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// NewAPIKey is what a new API key is made from (the body of POST /v1/api-keys).
type NewAPIKey struct {
	Name  string `json:"name"`
	Admin bool   `json:"admin"`
	// Workspace is optional: the caller's own workspace, by ID or slug. Any other is a 403.
	Workspace string `json:"workspace"`
}

// maxAPIKeyNameLength bounds a key's display name.
const maxAPIKeyNameLength = 200

// ListAPIKeys returns the keys of the caller's workspace.
func (p *Plane) ListAPIKeys(_ context.Context, caller Caller) ([]*storage.APIKey, error) {
	keys, err := p.store.APIKeys.List(caller.WorkspaceID)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	return keys, nil
}

// CreateAPIKey makes a key in the caller's workspace and returns its secret, which is never readable again.
// A key cannot be made for another workspace.
func (p *Plane) CreateAPIKey(_ context.Context, caller Caller, req NewAPIKey) (secret string, key *storage.APIKey, err error) {
	if len(req.Name) > maxAPIKeyNameLength || strings.ContainsFunc(req.Name, isControl) {
		return "", nil, gwerr.BadRequest("name", "name must be at most %d characters without control characters", maxAPIKeyNameLength)
	}
	if req.Workspace != "" {
		ws, err := p.store.Workspaces.Resolve(req.Workspace)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return "", nil, gwerr.Internal(err)
		}
		if ws == nil || ws.ID != caller.WorkspaceID {
			return "", nil, gwerr.Forbidden("your API key belongs to another workspace than %q", req.Workspace)
		}
	}
	secret, k, err := p.store.APIKeys.Create(caller.WorkspaceID, req.Name, req.Admin)
	if err != nil {
		return "", nil, gwerr.Internal(err)
	}
	p.log.Info("api key created", "trace_id", caller.TraceID, "key_id", k.ID, "workspace_id", k.WorkspaceID,
		"admin", k.Admin, "by", caller.KeyID)
	return secret, k, nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// GetAPIKey returns the caller's workspace's key id; keys of other workspaces are 404.
func (p *Plane) GetAPIKey(_ context.Context, caller Caller, id string) (*storage.APIKey, error) {
	k, err := p.store.APIKeys.Get(caller.WorkspaceID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, gwerr.NotFound("api key", id)
	}
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	return k, nil
}

// DeleteAPIKey deletes the caller's workspace's key id; it stops working at once.
func (p *Plane) DeleteAPIKey(_ context.Context, caller Caller, id string) error {
	err := p.store.APIKeys.Delete(caller.WorkspaceID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return gwerr.NotFound("api key", id)
	}
	if err != nil {
		return gwerr.Internal(err)
	}
	p.log.Info("api key deleted", "trace_id", caller.TraceID, "key_id", id, "workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	return nil
}
