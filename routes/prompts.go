package routes

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// Prompt templates of the caller's workspace, with their numbered versions. Every key of the workspace reads
// them; admin keys create them, add and publish versions, and delete them. The operations, their validation
// and the decisions SPEC.md leaves open are control.Plane's (control/prompts.go). Rendering and completions
// (POST /v1/prompts/:id/render and /completions) live in prompts_render.go.

const promptObject = "prompt"

// promptSummary is a prompt as lists show it.
type promptSummary struct {
	ID               string  `json:"id"`
	Object           string  `json:"object"`
	Name             *string `json:"name"`
	WorkspaceID      string  `json:"workspace_id"`
	PublishedVersion *int    `json:"published_version"`
	LatestVersion    int     `json:"latest_version"`
	CreatedAt        string  `json:"created_at"`
	UpdatedAt        string  `json:"updated_at"`
}

// promptView is a prompt as the single-prompt endpoints show it: the summary and every version, in order.
type promptView struct {
	promptSummary
	Versions []promptVersionView `json:"versions"`
}

type promptVersionView struct {
	Version   int             `json:"version"`
	Published bool            `json:"published"`
	Template  json.RawMessage `json:"template"`
}

func summarisePrompt(p *storage.Prompt) promptSummary {
	s := promptSummary{ID: p.ID, Object: promptObject, WorkspaceID: p.WorkspaceID, LatestVersion: control.LatestVersion(p),
		CreatedAt: p.CreatedAt.UTC().Format(time.RFC3339), UpdatedAt: p.UpdatedAt.UTC().Format(time.RFC3339)}
	if p.Name != "" {
		s.Name = &p.Name
	}
	for _, v := range p.Versions {
		if v.Published {
			s.PublishedVersion = &v.Version
		}
	}
	return s
}

func viewPrompt(p *storage.Prompt) promptView {
	v := promptView{promptSummary: summarisePrompt(p), Versions: make([]promptVersionView, 0, len(p.Versions))}
	for _, pv := range p.Versions {
		v.Versions = append(v.Versions, promptVersionView{Version: pv.Version, Published: pv.Published, Template: pv.Template})
	}
	return v
}

// listPrompts answers GET /v1/prompts: every prompt of the workspace, by id.
func (s *Server) listPrompts(c *fiber.Ctx) error {
	all, err := s.plane.ListPrompts(c.UserContext(), callerOf(c))
	if err != nil {
		return err
	}
	data := make([]promptSummary, 0, len(all))
	for _, p := range all {
		data = append(data, summarisePrompt(p))
	}
	return c.JSON(listAnswer[promptSummary]{Object: "list", Data: data, Total: len(data)})
}

// getPrompt answers GET /v1/prompts/:id with the prompt and all its versions.
func (s *Server) getPrompt(c *fiber.Ctx) error {
	p, err := s.plane.GetPrompt(c.UserContext(), callerOf(c), promptIDParam(c))
	if err != nil {
		return err
	}
	return c.JSON(viewPrompt(p))
}

// createPrompt answers POST /v1/prompts: a new prompt in the caller's workspace whose version 1 is the body's
// template, published. Admin only.
func (s *Server) createPrompt(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	var body control.NewPrompt
	if err := decodePromptBody(c, &body); err != nil {
		return err
	}
	p, err := s.plane.CreatePrompt(c.UserContext(), caller, body)
	if err != nil {
		return err
	}
	return c.JSON(viewPrompt(p))
}

// addPromptVersion answers POST /v1/prompts/:id/versions: the body's template becomes the prompt's next
// version, published when the body says "publish": true. Admin only.
func (s *Server) addPromptVersion(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	id := promptIDParam(c)
	var body control.NewPromptVersion
	if err := decodePromptBody(c, &body); err != nil {
		return err
	}
	p, err := s.plane.AddPromptVersion(c.UserContext(), caller, id, body)
	if err != nil {
		return err
	}
	return c.JSON(viewPrompt(p))
}

// publishPromptVersion answers POST /v1/prompts/:id/versions/:version/publish: that version becomes the one
// "<id>" alone selects. Admin only; the body may be empty or {}.
func (s *Server) publishPromptVersion(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	id := promptIDParam(c)
	n, err := versionParam(c)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(c.Body())) > 0 {
		var none struct{}
		if err := decodePromptBody(c, &none); err != nil {
			return err
		}
	}
	p, err := s.plane.PublishPromptVersion(c.UserContext(), caller, id, n)
	if err != nil {
		return err
	}
	return c.JSON(viewPrompt(p))
}

// deletePrompt answers DELETE /v1/prompts/:id: the prompt and all its versions. Admin only.
func (s *Server) deletePrompt(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	id := promptIDParam(c)
	if err := s.plane.DeletePrompt(c.UserContext(), caller, id); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": id, "object": promptObject, "deleted": true})
}

// promptIDParam reads the path's prompt id. An id that is not a valid identifier names no prompt: the
// lookups answer 404 for it.
func promptIDParam(c *fiber.Ctx) string {
	return strings.Clone(c.Params("id")) // fiber reuses the request's buffers after the handler returns
}

// versionParam reads the path's version number, an integer >= 1.
func versionParam(c *fiber.Ctx) (int, error) {
	raw := c.Params("version")
	n, err := strconv.ParseUint(raw, 10, 31)
	if err != nil || n == 0 {
		return 0, gwerr.BadRequest("version", "version must be a version number (an integer >= 1), not %q", raw)
	}
	return int(n), nil
}

// decodePromptBody decodes a JSON object body into v (a struct of the known fields): 415 for a body that is
// not application/json, invalid_json for one that is not an object, and a 400 naming an unknown field.
func decodePromptBody(c *fiber.Ctx, v any) error {
	if err := requireJSON(c); err != nil {
		return err
	}
	if bytes.Equal(bytes.TrimSpace(c.Body()), []byte("null")) {
		return &gwerr.Error{Status: fiber.StatusBadRequest, Code: gwerr.CodeInvalidJSON, Message: "request body must be an object, not null"}
	}
	return decodeJSON(c, v)
}
