package control

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// Workspaces, managed by organisation admins (routes checks the right before calling). A workspace is named by
// its ID or its slug; a new one is checked by the rules storage applies to the bootstrap file's workspaces.

// NewWorkspace is the body of POST /v1/workspaces. ID and OrganisationID are optional UUIDs: a new ID, and the
// caller's own workspace's organisation, by default.
type NewWorkspace struct {
	Slug           string `json:"slug"`
	ID             string `json:"id"`
	OrganisationID string `json:"organisation_id"`
	Name           string `json:"name"`
}

// WorkspaceChange is the body of PUT /v1/workspaces/{id-or-slug}: a new slug, a new name, or both; a field
// left out (nil) keeps its value.
type WorkspaceChange struct {
	Slug *string `json:"slug"`
	Name *string `json:"name"`
}

// maxWorkspaceNameLength bounds a workspace's display name.
const maxWorkspaceNameLength = 200

// CheckWorkspaceName refuses a display name that is too long or holds control characters. The bootstrap
// file's workspaces and the admin API's both use it.
func CheckWorkspaceName(name string) *gwerr.Error {
	if len(name) > maxWorkspaceNameLength || strings.ContainsFunc(name, isControl) {
		return gwerr.BadRequest("name", "name must be at most %d characters without control characters", maxWorkspaceNameLength)
	}
	return nil
}

// ListWorkspaces returns a page of the workspaces, ordered by ID, and whether more follow.
func (p *Plane) ListWorkspaces(_ context.Context, _ Caller, pg Page) ([]*storage.Workspace, bool, error) {
	all, err := p.store.Workspaces.List() // ordered by ID
	if err != nil {
		return nil, false, gwerr.Internal(err)
	}
	items, more := PageOf(all, func(ws *storage.Workspace) string { return ws.ID }, pg)
	return items, more, nil
}

// GetWorkspace returns the workspace named by ref, its ID or slug.
func (p *Plane) GetWorkspace(_ context.Context, _ Caller, ref string) (*storage.Workspace, error) {
	ws, err := p.store.Workspaces.Resolve(ref)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, gwerr.NotFound("workspace", ref)
	}
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	return ws, nil
}

// CreateWorkspace makes a workspace. A taken ID or slug is a 409.
func (p *Plane) CreateWorkspace(ctx context.Context, caller Caller, req NewWorkspace) (*storage.Workspace, error) {
	if err := storage.CheckID("slug", req.Slug); err != nil {
		return nil, gwerr.BadRequest("slug", "%v", err)
	}
	if err := CheckWorkspaceName(req.Name); err != nil {
		return nil, err
	}
	ws := &storage.Workspace{ID: req.ID, Slug: req.Slug, OrganisationID: req.OrganisationID, Name: req.Name}
	if ws.ID == "" {
		ws.ID = storage.NewUUID()
	} else if _, err := uuid.Parse(ws.ID); err != nil || len(ws.ID) != 36 {
		return nil, gwerr.BadRequest("id", "id must be a UUID, not %q", req.ID)
	}
	if ws.OrganisationID == "" {
		own, err := p.GetWorkspace(ctx, caller, caller.WorkspaceID)
		if err != nil {
			return nil, err
		}
		ws.OrganisationID = own.OrganisationID
	} else if _, err := uuid.Parse(ws.OrganisationID); err != nil || len(ws.OrganisationID) != 36 {
		return nil, gwerr.BadRequest("organisation_id", "organisation_id must be a UUID, not %q", req.OrganisationID)
	}
	if err := p.store.Workspaces.Create(ws); err != nil {
		return nil, workspaceWriteError(err, ws.Slug)
	}
	p.log.Info("workspace created", "trace_id", caller.TraceID, "workspace_id", ws.ID, "slug", ws.Slug, "by", caller.KeyID)
	return p.GetWorkspace(ctx, caller, ws.ID)
}

// UpdateWorkspace renames the workspace named by ref: a new slug (which must be free) and/or name.
func (p *Plane) UpdateWorkspace(ctx context.Context, caller Caller, ref string, req WorkspaceChange) (*storage.Workspace, error) {
	ws, err := p.GetWorkspace(ctx, caller, ref)
	if err != nil {
		return nil, err
	}
	if req.Slug != nil {
		if err := storage.CheckID("slug", *req.Slug); err != nil {
			return nil, gwerr.BadRequest("slug", "%v", err)
		}
		ws.Slug = *req.Slug
	}
	if req.Name != nil {
		if err := CheckWorkspaceName(*req.Name); err != nil {
			return nil, err
		}
		ws.Name = *req.Name
	}
	changed, err := p.store.Workspaces.Put(ws)
	if err != nil {
		return nil, workspaceWriteError(err, ws.Slug)
	}
	if changed {
		p.log.Info("workspace updated", "trace_id", caller.TraceID, "workspace_id", ws.ID, "slug", ws.Slug, "by", caller.KeyID)
	}
	return p.GetWorkspace(ctx, caller, ws.ID)
}

// DeleteWorkspace deletes the workspace named by ref and returns its ID. While it holds resources (keys,
// providers, configs, prompts, guardrails, policies, plugins, files, batches, ...) it is a 409 naming them,
// unless force, which removes them all: its keys stop working and its plugins are unloaded at once. The
// workspace of the caller's own key cannot be deleted (409).
func (p *Plane) DeleteWorkspace(ctx context.Context, caller Caller, ref string, force bool) (string, error) {
	ws, err := p.GetWorkspace(ctx, caller, ref)
	if err != nil {
		return "", err
	}
	if ws.ID == caller.WorkspaceID {
		return "", &gwerr.Error{Status: http.StatusConflict, Code: gwerr.CodeConflict,
			Message: fmt.Sprintf("workspace %q holds the API key of this request: delete it with a key of another workspace", ref)}
	}
	var plugins []*storage.Plugin
	if force && p.plugins != nil {
		if plugins, err = p.store.Plugins.List(ws.ID); err != nil {
			return "", gwerr.Internal(err)
		}
	}
	held, err := p.store.Workspaces.Delete(ws.ID, force)
	if errors.Is(err, storage.ErrNotFound) {
		return "", gwerr.NotFound("workspace", ref)
	}
	if errors.Is(err, storage.ErrBusy) {
		return "", &gwerr.Error{Status: http.StatusConflict, Code: gwerr.CodeConflict,
			Message: fmt.Sprintf("workspace %q has %d batches still running: cancel them (POST /v1/batches/{id}/cancel) and delete again once they are final",
				ref, held[0].Count)}
	}
	if errors.Is(err, storage.ErrConflict) {
		parts := make([]string, 0, len(held))
		for _, h := range held {
			parts = append(parts, fmt.Sprintf("%d %s", h.Count, h.Kind))
		}
		return "", &gwerr.Error{Status: http.StatusConflict, Code: gwerr.CodeConflict, Param: "force",
			Message: fmt.Sprintf("workspace %q holds %s: delete them first, or delete with ?force=true to remove them all",
				ref, strings.Join(parts, ", "))}
	}
	if err != nil {
		return "", gwerr.Internal(err)
	}
	for _, pl := range plugins {
		p.plugins.Remove(ws.ID, pl.ID)
	}
	if len(held) > 0 {
		p.forgetHooks()
	}
	p.log.Info("workspace deleted", "trace_id", caller.TraceID, "workspace_id", ws.ID, "slug", ws.Slug,
		"forced", force && len(held) > 0, "by", caller.KeyID)
	return ws.ID, nil
}

// workspaceWriteError turns a store error of a workspace write into its answer.
func workspaceWriteError(err error, slug string) error {
	if errors.Is(err, storage.ErrConflict) {
		return &gwerr.Error{Status: http.StatusConflict, Code: gwerr.CodeConflict, Param: "slug",
			Message: fmt.Sprintf("workspace id or slug %q is taken: %v", slug, err)}
	}
	return gwerr.Internal(err)
}
