package control

import (
	"cmp"
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
	// OrganisationAdmin grants the right to manage workspaces; only an organisation admin may grant it, and
	// only with Admin.
	OrganisationAdmin bool `json:"organisation_admin"`
	// Workspace is optional: the caller's own workspace, by ID or slug. Another one is a 403, except for an
	// organisation admin, who may make keys of any workspace.
	Workspace string `json:"workspace"`
}

// CheckAPIKey refuses what a key cannot be made with, whether a bootstrap file's api_keys item or the body of
// POST /v1/api-keys: a name too long or with control characters, organisation_admin without admin.
func CheckAPIKey(name string, admin, organisationAdmin bool) *gwerr.Error {
	if len(name) > maxAPIKeyNameLength || strings.ContainsFunc(name, isControl) {
		return gwerr.BadRequest("name", "name must be at most %d characters without control characters", maxAPIKeyNameLength)
	}
	if organisationAdmin && !admin {
		return gwerr.BadRequest("organisation_admin", "organisation_admin needs admin: true as well")
	}
	return nil
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
// Only an organisation admin may make a key of another workspace (an unknown one is then a 404) or grant
// organisation_admin; anyone else gets a 403.
func (p *Plane) CreateAPIKey(_ context.Context, caller Caller, req NewAPIKey) (secret string, key *storage.APIKey, err error) {
	if err := CheckAPIKey(req.Name, req.Admin, req.OrganisationAdmin); err != nil {
		return "", nil, err
	}
	orgAdmin, err := p.isOrganisationAdmin(caller)
	if err != nil {
		return "", nil, err
	}
	if req.OrganisationAdmin && !orgAdmin {
		return "", nil, gwerr.Forbidden("only an organisation admin API key may grant organisation_admin")
	}
	workspaceID := caller.WorkspaceID
	if req.Workspace != "" {
		ws, err := p.store.Workspaces.Resolve(req.Workspace)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return "", nil, gwerr.Internal(err)
		}
		switch {
		case ws != nil && ws.ID == caller.WorkspaceID:
		case !orgAdmin:
			return "", nil, gwerr.Forbidden("your API key belongs to another workspace than %q", req.Workspace)
		case ws == nil:
			return "", nil, gwerr.NotFound("workspace", req.Workspace)
		default:
			workspaceID = ws.ID
		}
	}
	secret = storage.NewAPIKeySecret()
	k, _, err := p.store.APIKeys.Put(secret, &storage.APIKey{WorkspaceID: workspaceID, Name: req.Name, Admin: req.Admin,
		OrganisationAdmin: req.OrganisationAdmin})
	if errors.Is(err, storage.ErrNotFound) { // deleted since it was resolved
		return "", nil, gwerr.NotFound("workspace", cmp.Or(req.Workspace, workspaceID))
	}
	if err != nil {
		return "", nil, gwerr.Internal(err)
	}
	p.log.Info("api key created", "trace_id", caller.TraceID, "key_id", k.ID, "workspace_id", k.WorkspaceID,
		"admin", k.Admin, "organisation_admin", k.OrganisationAdmin, "by", caller.KeyID)
	return secret, k, nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// isOrganisationAdmin reports whether the caller's key has the organisation admin right.
func (p *Plane) isOrganisationAdmin(caller Caller) (bool, error) {
	if caller.KeyID == "" {
		return false, nil
	}
	k, err := p.store.APIKeys.Get(caller.WorkspaceID, caller.KeyID)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, gwerr.Internal(err)
	}
	return k.OrganisationAdmin, nil
}

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
