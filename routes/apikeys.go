package routes

import (
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/storage"
)

// API keys of the caller's workspace (admin keys only); the operations are control.Plane's.

// apiKeyView is an API key as the admin endpoints show it. The secret appears only in the answer that creates it.
type apiKeyView struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	Key    string `json:"key,omitempty"`
	Name   string `json:"name"`
	Admin  bool   `json:"admin"`
	// OrganisationAdmin: the key manages workspaces too.
	OrganisationAdmin bool   `json:"organisation_admin"`
	WorkspaceID       string `json:"workspace_id"`
	Hint              string `json:"hint"`
	CreatedAt         string `json:"created_at"`
}

func viewAPIKey(k *storage.APIKey) apiKeyView {
	return apiKeyView{ID: k.ID, Object: "api_key", Name: k.Name, Admin: k.Admin, OrganisationAdmin: k.OrganisationAdmin,
		WorkspaceID: k.WorkspaceID, Hint: k.Hint, CreatedAt: k.CreatedAt.UTC().Format(time.RFC3339)}
}

// listAPIKeys answers GET /v1/api-keys: the keys of the caller's workspace, without secrets. Admin only.
func (s *Server) listAPIKeys(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	keys, err := s.plane.ListAPIKeys(c.UserContext(), caller)
	if err != nil {
		return err
	}
	return pagedList(c, keys, func(k *storage.APIKey) string { return k.ID }, viewAPIKey)
}

// createAPIKey answers POST /v1/api-keys: a new key in the caller's workspace, its secret shown this once.
// Admin only; only an organisation admin may make a key of another workspace or grant organisation_admin.
func (s *Server) createAPIKey(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	var req control.NewAPIKey
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	secret, k, err := s.plane.CreateAPIKey(c.UserContext(), caller, req)
	if err != nil {
		return err
	}
	v := viewAPIKey(k)
	v.Key = secret
	return c.JSON(v)
}

// deleteAPIKey answers DELETE /v1/api-keys/:id: the key stops working at once. Admin only.
func (s *Server) deleteAPIKey(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	id := strings.Clone(c.Params("id"))
	if err := s.plane.DeleteAPIKey(c.UserContext(), caller, id); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": id, "object": "api_key", "deleted": true})
}
