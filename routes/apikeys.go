package routes

import (
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// apiKeyView is an API key as the admin endpoints show it. The secret appears only in the answer that creates it.
type apiKeyView struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Key         string `json:"key,omitempty"`
	Name        string `json:"name"`
	Admin       bool   `json:"admin"`
	WorkspaceID string `json:"workspace_id"`
	Hint        string `json:"hint"`
	CreatedAt   string `json:"created_at"`
}

func viewAPIKey(k *storage.APIKey) apiKeyView {
	return apiKeyView{ID: k.ID, Object: "api_key", Name: k.Name, Admin: k.Admin, WorkspaceID: k.WorkspaceID,
		Hint: k.Hint, CreatedAt: k.CreatedAt.UTC().Format(time.RFC3339)}
}

// listAPIKeys answers GET /v1/api-keys: the keys of the caller's workspace, without secrets. Admin only.
func (s *Server) listAPIKeys(c *fiber.Ctx) error {
	caller, err := requireAdmin(c)
	if err != nil {
		return err
	}
	keys, err := s.store.APIKeys.List(caller.WorkspaceID)
	if err != nil {
		return gwerr.Internal(err)
	}
	data := make([]apiKeyView, 0, len(keys))
	for _, k := range keys {
		data = append(data, viewAPIKey(k))
	}
	return c.JSON(fiber.Map{"object": "list", "data": data})
}

type createAPIKeyRequest struct {
	Name      string `json:"name"`
	Admin     bool   `json:"admin"`
	Workspace string `json:"workspace"` // optional: the caller's own workspace, by ID or slug
}

// maxAPIKeyNameLength bounds a key's display name.
const maxAPIKeyNameLength = 200

// createAPIKey answers POST /v1/api-keys: a new key in the caller's workspace, its secret shown this once.
// Admin only; a key cannot be made for another workspace.
func (s *Server) createAPIKey(c *fiber.Ctx) error {
	caller, err := requireAdmin(c)
	if err != nil {
		return err
	}
	var req createAPIKeyRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if len(req.Name) > maxAPIKeyNameLength || strings.ContainsFunc(req.Name, isControl) {
		return gwerr.BadRequest("name", "name must be at most %d characters without control characters", maxAPIKeyNameLength)
	}
	if req.Workspace != "" {
		ws, err := s.store.Workspaces.Resolve(req.Workspace)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return gwerr.Internal(err)
		}
		if ws == nil || ws.ID != caller.WorkspaceID {
			return gwerr.Forbidden("your API key belongs to another workspace than %q", req.Workspace)
		}
	}
	secret, k, err := s.store.APIKeys.Create(caller.WorkspaceID, req.Name, req.Admin)
	if err != nil {
		return gwerr.Internal(err)
	}
	s.log.Info("api key created", "trace_id", ensureTraceID(c), "key_id", k.ID, "workspace_id", k.WorkspaceID,
		"admin", k.Admin, "by", caller.ID)
	v := viewAPIKey(k)
	v.Key = secret
	return c.JSON(v)
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// getAPIKey answers GET /v1/api-keys/:id. Admin only; keys of other workspaces are 404.
func (s *Server) getAPIKey(c *fiber.Ctx) error {
	caller, err := requireAdmin(c)
	if err != nil {
		return err
	}
	id := c.Params("id")
	k, err := s.store.APIKeys.Get(caller.WorkspaceID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return gwerr.NotFound("api key", id)
	}
	if err != nil {
		return gwerr.Internal(err)
	}
	return c.JSON(viewAPIKey(k))
}

// deleteAPIKey answers DELETE /v1/api-keys/:id: the key stops working at once. Admin only.
func (s *Server) deleteAPIKey(c *fiber.Ctx) error {
	caller, err := requireAdmin(c)
	if err != nil {
		return err
	}
	id := strings.Clone(c.Params("id"))
	err = s.store.APIKeys.Delete(caller.WorkspaceID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return gwerr.NotFound("api key", id)
	}
	if err != nil {
		return gwerr.Internal(err)
	}
	s.log.Info("api key deleted", "trace_id", ensureTraceID(c), "key_id", id, "workspace_id", caller.WorkspaceID, "by", caller.ID)
	return c.JSON(fiber.Map{"id": id, "object": "api_key", "deleted": true})
}
