package routes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/runtime/bootstrap"
	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// Prompt templates of the caller's workspace, with their numbered versions. Every key of the workspace reads
// them; admin keys create them, add and publish versions, and delete them. A template is checked by
// bootstrap.ParsePromptTemplate, so that a template made over HTTP obeys the rules of one in a bootstrap file.
// Rendering and completions (POST /v1/prompts/:id/render and /completions) live in prompts_render.go.
//
// Decisions SPEC.md leaves open:
//   - Prompt IDs are unique within a workspace (DESIGN.md): POST with an id the workspace has is 409; another
//     workspace may use the same id for its own prompt. Another workspace's prompt is as unknown as a missing
//     one (404), for every method.
//   - Versions are numbered from 1 in the order they are created, and a number is never given twice: a new
//     version is the highest number + 1. Versions are never changed or removed, only published; a version
//     written once can be relied on by "<id>@<n>".
//   - At most one version is published. POST /v1/prompts publishes version 1; a new version is published only
//     when its body says "publish": true; publishing one unpublishes the one before. A prompt from a bootstrap
//     file may have none published (published_version null).
//   - A name is optional; the view shows null for none.
//   - Lists are ordered by id, and hold every prompt of the workspace (no pages).

const promptObject = "prompt"

// promptWrites serialises the writes of prompts: a new version is a read-modify-write of the whole record (the
// store's Put replaces it), so two versions added at once must not both read the same list, and the check that
// an id is free must not interleave with another create. One lock for the process is enough: prompts change
// rarely, and reads do not take it.
var promptWrites sync.Mutex

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
	s := promptSummary{ID: p.ID, Object: promptObject, WorkspaceID: p.WorkspaceID, LatestVersion: latestVersion(p),
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

// latestVersion is the highest version number of p, 0 when it has none.
func latestVersion(p *storage.Prompt) int {
	n := 0
	for _, v := range p.Versions {
		n = max(n, v.Version)
	}
	return n
}

// listPrompts answers GET /v1/prompts: every prompt of the workspace, by id.
func (s *Server) listPrompts(c *fiber.Ctx) error {
	caller := callerKey(c)
	all, err := s.store.Prompts.List(caller.WorkspaceID)
	if err != nil {
		return gwerr.Internal(err)
	}
	slices.SortFunc(all, func(a, b *storage.Prompt) int { return strings.Compare(a.ID, b.ID) })
	data := make([]promptSummary, 0, len(all))
	for _, p := range all {
		data = append(data, summarisePrompt(p))
	}
	return c.JSON(listAnswer[promptSummary]{Object: "list", Data: data, Total: len(data)})
}

// getPrompt answers GET /v1/prompts/:id with the prompt and all its versions.
func (s *Server) getPrompt(c *fiber.Ctx) error {
	caller := callerKey(c)
	p, err := s.findPrompt(caller.WorkspaceID, promptIDParam(c))
	if err != nil {
		return err
	}
	return c.JSON(viewPrompt(p))
}

// newPromptBody is the body of POST /v1/prompts; the fields stay raw so that each is checked with its name.
type newPromptBody struct {
	ID       json.RawMessage `json:"id"`
	Name     json.RawMessage `json:"name"`
	Template json.RawMessage `json:"template"`
}

// createPrompt answers POST /v1/prompts: a new prompt in the caller's workspace whose version 1 is the body's
// template, published. Admin only.
func (s *Server) createPrompt(c *fiber.Ctx) error {
	caller, err := requireAdmin(c)
	if err != nil {
		return err
	}
	var body newPromptBody
	if err := decodePromptBody(c, &body); err != nil {
		return err
	}
	id, err := stringField("id", body.ID)
	if err != nil {
		return err
	}
	if err := storage.CheckID("id", id); err != nil {
		return gwerr.BadRequest("id", "%v", err)
	}
	name, err := stringField("name", body.Name)
	if err != nil {
		return err
	}
	tmpl, err := promptTemplate(body.Template)
	if err != nil {
		return err
	}
	promptWrites.Lock()
	defer promptWrites.Unlock()
	_, err = s.store.Prompts.Get(caller.WorkspaceID, id)
	if err == nil {
		return &gwerr.Error{Status: fiber.StatusConflict, Code: gwerr.CodeConflict, Param: "id",
			Message: fmt.Sprintf("a prompt with id %q exists already: add a version with POST /v1/prompts/%s/versions, or choose another id", id, id)}
	}
	if !errors.Is(err, storage.ErrNotFound) {
		return gwerr.Internal(err)
	}
	rec := &storage.Prompt{ID: id, WorkspaceID: caller.WorkspaceID, Name: name,
		Versions: []storage.PromptVersion{{Version: 1, Published: true, Template: tmpl}}}
	if _, err := s.store.Prompts.Put(caller.WorkspaceID, id, rec); err != nil {
		return gwerr.Internal(err)
	}
	s.log.Info("prompt created", "trace_id", ensureTraceID(c), "prompt_id", id, "workspace_id", caller.WorkspaceID, "by", caller.ID)
	return c.JSON(viewPrompt(rec))
}

// newVersionBody is the body of POST /v1/prompts/:id/versions.
type newVersionBody struct {
	Template json.RawMessage `json:"template"`
	Publish  json.RawMessage `json:"publish"`
}

// addPromptVersion answers POST /v1/prompts/:id/versions: the body's template becomes the prompt's next
// version, published when the body says "publish": true. Admin only.
func (s *Server) addPromptVersion(c *fiber.Ctx) error {
	caller, err := requireAdmin(c)
	if err != nil {
		return err
	}
	id := promptIDParam(c)
	var body newVersionBody
	if err := decodePromptBody(c, &body); err != nil {
		return err
	}
	tmpl, err := promptTemplate(body.Template)
	if err != nil {
		return err
	}
	publish := false
	if present(body.Publish) {
		if err := json.Unmarshal(body.Publish, &publish); err != nil {
			return gwerr.BadRequest("publish", "publish must be a boolean, not %s", config.Kind(body.Publish))
		}
	}
	promptWrites.Lock()
	defer promptWrites.Unlock()
	p, err := s.findPrompt(caller.WorkspaceID, id)
	if err != nil {
		return err
	}
	n := latestVersion(p) + 1
	if publish {
		for i := range p.Versions {
			p.Versions[i].Published = false
		}
	}
	p.Versions = append(p.Versions, storage.PromptVersion{Version: n, Published: publish, Template: tmpl})
	if _, err := s.store.Prompts.Put(caller.WorkspaceID, p.ID, p); err != nil {
		return gwerr.Internal(err)
	}
	s.log.Info("prompt version added", "trace_id", ensureTraceID(c), "prompt_id", p.ID, "version", n, "published", publish,
		"workspace_id", caller.WorkspaceID, "by", caller.ID)
	return c.JSON(viewPrompt(p))
}

// publishPromptVersion answers POST /v1/prompts/:id/versions/:version/publish: that version becomes the one
// "<id>" alone selects, and the one published before is not any more. Publishing the published version again
// changes nothing. Admin only; the body may be empty or {}.
func (s *Server) publishPromptVersion(c *fiber.Ctx) error {
	caller, err := requireAdmin(c)
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
	promptWrites.Lock()
	defer promptWrites.Unlock()
	p, err := s.findPrompt(caller.WorkspaceID, id)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(p.Versions, func(v storage.PromptVersion) bool { return v.Version == n })
	if i < 0 {
		return gwerr.Newf(fiber.StatusNotFound, gwerr.CodeNotFound, "prompt %q has no version %d (its latest is %d)", p.ID, n, latestVersion(p))
	}
	for j := range p.Versions {
		p.Versions[j].Published = j == i
	}
	changed, err := s.store.Prompts.Put(caller.WorkspaceID, p.ID, p)
	if err != nil {
		return gwerr.Internal(err)
	}
	if changed {
		s.log.Info("prompt version published", "trace_id", ensureTraceID(c), "prompt_id", p.ID, "version", n,
			"workspace_id", caller.WorkspaceID, "by", caller.ID)
	}
	return c.JSON(viewPrompt(p))
}

// deletePrompt answers DELETE /v1/prompts/:id: the prompt and all its versions. Admin only.
func (s *Server) deletePrompt(c *fiber.Ctx) error {
	caller, err := requireAdmin(c)
	if err != nil {
		return err
	}
	id := promptIDParam(c)
	promptWrites.Lock()
	defer promptWrites.Unlock()
	err = s.store.Prompts.Delete(caller.WorkspaceID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return gwerr.NotFound("prompt", id)
	}
	if err != nil {
		return gwerr.Internal(err)
	}
	s.log.Info("prompt deleted", "trace_id", ensureTraceID(c), "prompt_id", id, "workspace_id", caller.WorkspaceID, "by", caller.ID)
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

// findPrompt returns the workspace's prompt with the id, or a 404.
func (s *Server) findPrompt(workspaceID, id string) (*storage.Prompt, error) {
	p, err := s.store.Prompts.Get(workspaceID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, gwerr.NotFound("prompt", id)
	}
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	return p, nil
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

// present reports whether a raw body field was given with a value other than null.
func present(raw json.RawMessage) bool {
	return raw != nil && config.Kind(raw) != "null"
}

// stringField reads an optional string field of a body; absent and null are "".
func stringField(name string, raw json.RawMessage) (string, error) {
	if !present(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", gwerr.BadRequest(name, "%s must be a string, not %s", name, config.Kind(raw))
	}
	return s, nil
}

// promptTemplate checks the body's "template" with bootstrap's rules and returns it compacted, as it is
// stored. The 400 names the first problem's field as template.<path> and every problem in its message.
func promptTemplate(raw json.RawMessage) (json.RawMessage, error) {
	if !present(raw) {
		return nil, gwerr.BadRequest("template", "template is required: an object with messages, such as {\"messages\": [{\"role\": \"user\", \"content\": \"Hi {{name}}\"}]}")
	}
	err := bootstrap.ParsePromptTemplate(raw)
	var te *bootstrap.TemplateError
	if errors.As(err, &te) && len(te.Problems) > 0 {
		parts := make([]string, len(te.Problems))
		for i, pr := range te.Problems {
			parts[i] = templateParam(pr.Path) + ": " + pr.Message
		}
		return nil, gwerr.BadRequest(templateParam(te.Problems[0].Path), "invalid prompt template: %s", strings.Join(parts, "; "))
	}
	if err != nil {
		return nil, gwerr.BadRequest("template", "invalid prompt template: %v", err)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, gwerr.BadRequest("template", "invalid prompt template: %v", err)
	}
	return b.Bytes(), nil
}

// templateParam is the body path of a problem at path within the template.
func templateParam(path string) string {
	if path == "" {
		return "template"
	}
	return "template." + path
}
