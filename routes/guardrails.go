package routes

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/schema"
	"github.com/llmgw/gateway/storage"
)

// Saved guardrails: a guardrail object (SPEC.md's shape) stored under an ID in a workspace, named by that ID in
// config guardrail lists. Admin keys manage them.

type guardrailView struct {
	ID          string          `json:"id"`
	Object      string          `json:"object"`
	WorkspaceID string          `json:"workspace_id"`
	Guardrail   json.RawMessage `json:"guardrail"`
	CreatedAt   string          `json:"created_at"`
	UpdatedAt   string          `json:"updated_at"`
}

func viewGuardrail(g *storage.Guardrail) guardrailView {
	return guardrailView{ID: g.ID, Object: "guardrail", WorkspaceID: g.WorkspaceID, Guardrail: g.Guardrail,
		CreatedAt: g.CreatedAt.UTC().Format(time.RFC3339), UpdatedAt: g.UpdatedAt.UTC().Format(time.RFC3339)}
}

// putGuardrail answers PUT /v1/guardrails/:id with a guardrail object as the body; the control plane checks it
// as every saved guardrail is checked. Admin only.
func (s *Server) putGuardrail(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	id := strings.Clone(c.Params("id"))
	if err := requireJSON(c); err != nil {
		return err
	}
	body := c.Body()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		if err != nil {
			return schema.DecodeError(body, "", err)
		}
		return gwerr.BadRequest("", "the body must be a guardrail object")
	}
	g, err := s.plane.PutGuardrail(c.UserContext(), caller, id, obj)
	if err != nil {
		return err
	}
	return c.JSON(viewGuardrail(g))
}

// listGuardrails answers GET /v1/guardrails. Admin only.
func (s *Server) listGuardrails(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	list, err := s.plane.ListGuardrails(c.UserContext(), caller)
	if err != nil {
		return err
	}
	return pagedList(c, list, func(g *storage.Guardrail) string { return g.ID }, viewGuardrail)
}

// deleteGuardrail answers DELETE /v1/guardrails/:id. Configs that still name it get a 400 when they run. Admin
// only.
func (s *Server) deleteGuardrail(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	id := strings.Clone(c.Params("id"))
	if err := s.plane.DeleteGuardrail(c.UserContext(), caller, id); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": id, "object": "guardrail", "deleted": true})
}
