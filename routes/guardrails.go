package routes

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/gwerr"
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

// putGuardrail answers PUT /v1/guardrails/:id with a guardrail object as the body. guardrails checks it as every
// saved guardrail is checked (the bootstrap file's too), so unknown check ids, plugins the workspace has not
// stored, and bad parameters are refused now, naming the field relative to the object.
func (s *Server) putGuardrail(c *fiber.Ctx) error {
	caller, err := requireAdmin(c)
	if err != nil {
		return err
	}
	id := strings.Clone(c.Params("id"))
	if err := storage.CheckID("guardrail id", id); err != nil {
		return gwerr.BadRequest("id", "%v", err)
	}
	if err := requireJSON(c); err != nil {
		return err
	}
	body := c.Body()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		if err != nil {
			return jsonError(body, err)
		}
		return gwerr.BadRequest("", "the body must be a guardrail object")
	}
	delete(obj, "id")
	delete(obj, "workspace")
	raw, _ := json.Marshal(obj)
	if err := guardrails.ValidateSavedIn(caller.WorkspaceID, raw, runtime.RequireStoredPlugins(s.store, s.pluginChecks)); err != nil {
		return err
	}
	g := &storage.Guardrail{ID: id, WorkspaceID: caller.WorkspaceID, Guardrail: raw}
	if _, err := s.store.Guardrails.Put(caller.WorkspaceID, id, g); err != nil {
		return gwerr.Internal(err)
	}
	s.engine.ForgetCompiledHooks()
	stored, err := s.store.Guardrails.Get(caller.WorkspaceID, id)
	if err != nil {
		return gwerr.Internal(err)
	}
	return c.JSON(viewGuardrail(stored))
}

// listGuardrails answers GET /v1/guardrails.
func (s *Server) listGuardrails(c *fiber.Ctx) error {
	caller, err := requireAdmin(c)
	if err != nil {
		return err
	}
	list, err := s.store.Guardrails.List(caller.WorkspaceID)
	if err != nil {
		return gwerr.Internal(err)
	}
	data := make([]guardrailView, 0, len(list))
	for _, g := range list {
		data = append(data, viewGuardrail(g))
	}
	return c.JSON(fiber.Map{"object": "list", "data": data})
}

// getGuardrail answers GET /v1/guardrails/:id.
func (s *Server) getGuardrail(c *fiber.Ctx) error {
	caller, err := requireAdmin(c)
	if err != nil {
		return err
	}
	id := c.Params("id")
	g, err := s.store.Guardrails.Get(caller.WorkspaceID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return gwerr.NotFound("guardrail", id)
	}
	if err != nil {
		return gwerr.Internal(err)
	}
	return c.JSON(viewGuardrail(g))
}

// deleteGuardrail answers DELETE /v1/guardrails/:id. Configs that still name it get a 400 when they run.
func (s *Server) deleteGuardrail(c *fiber.Ctx) error {
	caller, err := requireAdmin(c)
	if err != nil {
		return err
	}
	id := strings.Clone(c.Params("id"))
	err = s.store.Guardrails.Delete(caller.WorkspaceID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return gwerr.NotFound("guardrail", id)
	}
	if err != nil {
		return gwerr.Internal(err)
	}
	s.engine.ForgetCompiledHooks()
	return c.JSON(fiber.Map{"id": id, "object": "guardrail", "deleted": true})
}
