package routes

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/storage"
)

// Saved configs of the caller's workspace (admin keys only), named in x-gateway-config by their ID. A config is
// validated as an x-gateway-config header is; the operations are control.Plane's (control/configs.go).

// configRoutes registers the endpoints of this file under /v1.
func (s *Server) configRoutes(v1 fiber.Router) {
	v1.Get("/configs", adminList(adminCaller, s.plane.ListConfigs, viewConfig)) // ordered by ID
	v1.Post("/configs", s.createConfig)
	v1.Get("/configs/:id", adminOne("id", s.plane.GetConfig, viewConfig))
	v1.Put("/configs/:id", s.replaceConfig)
	v1.Delete("/configs/:id", s.deleteConfig)
}

// configView is a saved config as the endpoints show it.
type configView struct {
	ID          string          `json:"id"`
	Object      string          `json:"object"`
	WorkspaceID string          `json:"workspace_id"`
	Config      json.RawMessage `json:"config"`
	CreatedAt   string          `json:"created_at"`
	UpdatedAt   string          `json:"updated_at"`
}

func viewConfig(c *storage.Config) configView {
	return configView{ID: c.ID, Object: "config", WorkspaceID: c.WorkspaceID, Config: c.Config,
		CreatedAt: c.CreatedAt.UTC().Format(time.RFC3339), UpdatedAt: c.UpdatedAt.UTC().Format(time.RFC3339)}
}

// createConfig answers POST /v1/configs {id, config}.
func (s *Server) createConfig(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	var req control.NewConfig
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	x, err := s.plane.CreateConfig(c.UserContext(), caller, req)
	if err != nil {
		return err
	}
	return c.JSON(viewConfig(x))
}

// replaceConfig answers PUT /v1/configs/:id {config}: the next request that names the config follows the new one.
func (s *Server) replaceConfig(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	var req struct {
		Config json.RawMessage `json:"config"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	x, err := s.plane.ReplaceConfig(c.UserContext(), caller, strings.Clone(c.Params("id")), req.Config)
	if err != nil {
		return err
	}
	return c.JSON(viewConfig(x))
}

// deleteConfig answers DELETE /v1/configs/:id.
func (s *Server) deleteConfig(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	id := strings.Clone(c.Params("id"))
	if err := s.plane.DeleteConfig(c.UserContext(), caller, id); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": id, "object": "config", "deleted": true})
}
