package routes

import (
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/storage"
)

// Workspaces (organisation admin keys only); the operations are control.Plane's. A workspace is named in the
// path by its ID or slug.

// workspaceView is a workspace as the admin endpoints show it.
type workspaceView struct {
	ID             string `json:"id"`
	Object         string `json:"object"`
	Slug           string `json:"slug"`
	Name           string `json:"name"`
	OrganisationID string `json:"organisation_id"`
	CreatedAt      string `json:"created_at"`
}

func viewWorkspace(ws *storage.Workspace) workspaceView {
	return workspaceView{ID: ws.ID, Object: "workspace", Slug: ws.Slug, Name: ws.Name, OrganisationID: ws.OrganisationID,
		CreatedAt: ws.CreatedAt.UTC().Format(time.RFC3339)}
}

// workspaceRoutes registers the endpoints of this file under /v1.
func (s *Server) workspaceRoutes(v1 fiber.Router) {
	v1.Get("/workspaces", adminList(orgAdminCaller, s.plane.ListWorkspaces, viewWorkspace)) // ordered by ID
	v1.Post("/workspaces", s.createWorkspace)
	v1.Get("/workspaces/:ref", s.getWorkspace)
	v1.Put("/workspaces/:ref", s.updateWorkspace)
	v1.Delete("/workspaces/:ref", s.deleteWorkspace)
}

// orgAdminCaller is callerOf for the operations that need the organisation admin right: a 403 without it.
func orgAdminCaller(c *fiber.Ctx) (control.Caller, error) {
	if _, err := requireOrgAdmin(c); err != nil {
		return control.Caller{}, err
	}
	return callerOf(c), nil
}

// createWorkspace answers POST /v1/workspaces {slug, id?, organisation_id?, name?}.
func (s *Server) createWorkspace(c *fiber.Ctx) error {
	caller, err := orgAdminCaller(c)
	if err != nil {
		return err
	}
	var req control.NewWorkspace
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	ws, err := s.plane.CreateWorkspace(c.UserContext(), caller, req)
	if err != nil {
		return err
	}
	return c.JSON(viewWorkspace(ws))
}

// getWorkspace answers GET /v1/workspaces/:ref.
func (s *Server) getWorkspace(c *fiber.Ctx) error {
	caller, err := orgAdminCaller(c)
	if err != nil {
		return err
	}
	ws, err := s.plane.GetWorkspace(c.UserContext(), caller, strings.Clone(c.Params("ref")))
	if err != nil {
		return err
	}
	return c.JSON(viewWorkspace(ws))
}

// updateWorkspace answers PUT /v1/workspaces/:ref {slug?, name?}: a rename.
func (s *Server) updateWorkspace(c *fiber.Ctx) error {
	caller, err := orgAdminCaller(c)
	if err != nil {
		return err
	}
	var req control.WorkspaceChange
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	ws, err := s.plane.UpdateWorkspace(c.UserContext(), caller, strings.Clone(c.Params("ref")), req)
	if err != nil {
		return err
	}
	return c.JSON(viewWorkspace(ws))
}

// deleteWorkspace answers DELETE /v1/workspaces/:ref[?force=true]: refused (409) while the workspace holds
// resources, unless force, which removes them all.
func (s *Server) deleteWorkspace(c *fiber.Ctx) error {
	caller, err := orgAdminCaller(c)
	if err != nil {
		return err
	}
	force, err := queryForce(c)
	if err != nil {
		return err
	}
	id, err := s.plane.DeleteWorkspace(c.UserContext(), caller, strings.Clone(c.Params("ref")), force)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": id, "object": "workspace", "deleted": true})
}
