package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/jsoncheck"
	"github.com/llmgw/gateway/runtime/prompt"
	"github.com/llmgw/gateway/storage"
)

// Prompt templates of the caller's workspace, with their numbered versions. A template is checked by
// prompt.CheckTemplate, whose rules the bootstrap file's prompt versions follow too, so that a template made
// over HTTP obeys the rules of one in a bootstrap file.
//
// Decisions SPEC.md leaves open:
//   - Prompt IDs are unique within a workspace (DESIGN.md): creating one with an id the workspace has is 409;
//     another workspace may use the same id for its own prompt. Another workspace's prompt is as unknown as a
//     missing one (404), for every operation.
//   - Versions are numbered from 1 in the order they are created, and a number is never given twice: a new
//     version is the highest number + 1. Versions are never changed or removed, only published; a version
//     written once can be relied on by "<id>@<n>".
//   - At most one version is published. Creating a prompt publishes version 1; a new version is published only
//     when asked; publishing one unpublishes the one before. A prompt from a bootstrap file may have none
//     published.
//   - A name is optional.
//   - Lists are ordered by id, and hold every prompt of the workspace (no pages).

// NewPrompt is what a prompt is made from (the body of POST /v1/prompts). The fields stay raw so that each is
// checked, and named in the 400, by CreatePrompt.
type NewPrompt struct {
	ID       json.RawMessage `json:"id"`
	Name     json.RawMessage `json:"name"`
	Template json.RawMessage `json:"template"`
}

// NewPromptVersion is a prompt's next version (the body of POST /v1/prompts/{id}/versions).
type NewPromptVersion struct {
	Template json.RawMessage `json:"template"`
	Publish  json.RawMessage `json:"publish"`
}

// LatestVersion is the highest version number of p, 0 when it has none.
func LatestVersion(p *storage.Prompt) int {
	n := 0
	for _, v := range p.Versions {
		n = max(n, v.Version)
	}
	return n
}

// ListPrompts returns every prompt of the caller's workspace, by id.
func (p *Plane) ListPrompts(_ context.Context, caller Caller) ([]*storage.Prompt, error) {
	all, err := p.store.Prompts.List(caller.WorkspaceID)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	slices.SortFunc(all, func(a, b *storage.Prompt) int { return strings.Compare(a.ID, b.ID) })
	return all, nil
}

// GetPrompt returns the caller's workspace's prompt id with all its versions.
func (p *Plane) GetPrompt(_ context.Context, caller Caller, id string) (*storage.Prompt, error) {
	return p.findPrompt(caller.WorkspaceID, id)
}

// CreatePrompt makes a prompt in the caller's workspace whose version 1 is the template, published.
func (p *Plane) CreatePrompt(_ context.Context, caller Caller, req NewPrompt) (*storage.Prompt, error) {
	id, err := stringField("id", req.ID)
	if err != nil {
		return nil, err
	}
	if err := storage.CheckID("id", id); err != nil {
		return nil, gwerr.BadRequest("id", "%v", err)
	}
	name, err := stringField("name", req.Name)
	if err != nil {
		return nil, err
	}
	tmpl, err := promptTemplate(req.Template)
	if err != nil {
		return nil, err
	}
	p.promptWrites.Lock()
	defer p.promptWrites.Unlock()
	_, err = p.store.Prompts.Get(caller.WorkspaceID, id)
	if err == nil {
		return nil, &gwerr.Error{Status: http.StatusConflict, Code: gwerr.CodeConflict, Param: "id",
			Message: fmt.Sprintf("a prompt with id %q exists already: add a version with POST /v1/prompts/%s/versions, or choose another id", id, id)}
	}
	if !errors.Is(err, storage.ErrNotFound) {
		return nil, gwerr.Internal(err)
	}
	rec := &storage.Prompt{ID: id, WorkspaceID: caller.WorkspaceID, Name: name,
		Versions: []storage.PromptVersion{{Version: 1, Published: true, Template: tmpl}}}
	if _, err := p.store.Prompts.Put(caller.WorkspaceID, id, rec); err != nil {
		return nil, gwerr.Internal(err)
	}
	p.log.Info("prompt created", "trace_id", caller.TraceID, "prompt_id", id, "workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	return rec, nil
}

// AddPromptVersion makes the template the next version of the caller's workspace's prompt id, published when
// req.Publish is true.
func (p *Plane) AddPromptVersion(_ context.Context, caller Caller, id string, req NewPromptVersion) (*storage.Prompt, error) {
	tmpl, err := promptTemplate(req.Template)
	if err != nil {
		return nil, err
	}
	publish := false
	if present(req.Publish) {
		if err := json.Unmarshal(req.Publish, &publish); err != nil {
			return nil, gwerr.BadRequest("publish", "publish must be a boolean, not %s", config.Kind(req.Publish))
		}
	}
	p.promptWrites.Lock()
	defer p.promptWrites.Unlock()
	rec, err := p.findPrompt(caller.WorkspaceID, id)
	if err != nil {
		return nil, err
	}
	n := LatestVersion(rec) + 1
	if publish {
		for i := range rec.Versions {
			rec.Versions[i].Published = false
		}
	}
	rec.Versions = append(rec.Versions, storage.PromptVersion{Version: n, Published: publish, Template: tmpl})
	if _, err := p.store.Prompts.Put(caller.WorkspaceID, rec.ID, rec); err != nil {
		return nil, gwerr.Internal(err)
	}
	p.log.Info("prompt version added", "trace_id", caller.TraceID, "prompt_id", rec.ID, "version", n, "published", publish,
		"workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	return rec, nil
}

// PublishPromptVersion makes version n the one "<id>" alone selects; the one published before is not any more.
// Publishing the published version again changes nothing.
func (p *Plane) PublishPromptVersion(_ context.Context, caller Caller, id string, n int) (*storage.Prompt, error) {
	p.promptWrites.Lock()
	defer p.promptWrites.Unlock()
	rec, err := p.findPrompt(caller.WorkspaceID, id)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(rec.Versions, func(v storage.PromptVersion) bool { return v.Version == n })
	if i < 0 {
		return nil, gwerr.Newf(http.StatusNotFound, gwerr.CodeNotFound, "prompt %q has no version %d (its latest is %d)", rec.ID, n, LatestVersion(rec))
	}
	for j := range rec.Versions {
		rec.Versions[j].Published = j == i
	}
	changed, err := p.store.Prompts.Put(caller.WorkspaceID, rec.ID, rec)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	if changed {
		p.log.Info("prompt version published", "trace_id", caller.TraceID, "prompt_id", rec.ID, "version", n,
			"workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	}
	return rec, nil
}

// DeletePrompt deletes the caller's workspace's prompt id with all its versions.
func (p *Plane) DeletePrompt(_ context.Context, caller Caller, id string) error {
	p.promptWrites.Lock()
	defer p.promptWrites.Unlock()
	err := p.store.Prompts.Delete(caller.WorkspaceID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return gwerr.NotFound("prompt", id)
	}
	if err != nil {
		return gwerr.Internal(err)
	}
	p.log.Info("prompt deleted", "trace_id", caller.TraceID, "prompt_id", id, "workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	return nil
}

// findPrompt returns the workspace's prompt with the id, or a 404. An id that is not a valid identifier names
// no prompt.
func (p *Plane) findPrompt(workspaceID, id string) (*storage.Prompt, error) {
	rec, err := p.store.Prompts.Get(workspaceID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, gwerr.NotFound("prompt", id)
	}
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	return rec, nil
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

// promptTemplate checks a body's "template" with prompt's rules and returns it compacted, as it is
// stored. The 400 names the first problem's field as template.<path> and every problem in its message.
func promptTemplate(raw json.RawMessage) (json.RawMessage, error) {
	if !present(raw) {
		return nil, gwerr.BadRequest("template", "template is required: an object with messages, such as {\"messages\": [{\"role\": \"user\", \"content\": \"Hi {{name}}\"}]}")
	}
	err := prompt.CheckTemplate(raw)
	var te *jsoncheck.Error
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

// PromptTemplate finds the prompt version that ref ("id", "id@3", "id@latest", path-escaped or not) names in
// the workspace and returns it compiled, with the parsed ref. Rendering calls it on every prompt request, so
// both the decoded record and the compiled version are cached; any write to the prompt store, through the
// Plane or not, makes the record cache stale. The param of its errors is "promptId".
func (p *Plane) PromptTemplate(workspaceID, refText string) (*prompt.Template, prompt.Ref, error) {
	// The id becomes a key of the record cache and the ref outlives the call: neither may alias a caller's
	// buffer (fiber's path parameters are reused once the handler returns).
	refText = strings.Clone(refText)
	if unescaped, err := url.PathUnescape(refText); err == nil {
		refText = unescaped // welcome%40latest
	}
	ref, err := prompt.ParseRef(refText)
	if err != nil {
		return nil, ref, gwerr.BadRequest("promptId", "%v", err)
	}
	rec, err := p.promptRecords.get(p.store, workspaceID, ref.ID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, ref, &gwerr.Error{Status: http.StatusNotFound, Code: gwerr.CodeNotFound, Param: "promptId",
			Message: `prompt "` + ref.ID + `" not found in this workspace`}
	}
	if err != nil {
		return nil, ref, gwerr.Internal(err)
	}
	v, err := prompt.Select(rec, ref)
	if err != nil {
		return nil, ref, &gwerr.Error{Status: http.StatusNotFound, Code: gwerr.CodeNotFound, Param: "promptId", Message: strings.TrimPrefix(err.Error(), prompt.ErrNoVersion.Error()+": ")}
	}
	t, err := p.promptTemplates.Compile(v.Template)
	if err != nil {
		return nil, ref, gwerr.Internal(err) // stored templates were checked when they were written
	}
	return t, ref, nil
}

// promptRecords keeps decoded prompt records for rendering, which would otherwise decode a prompt with all its
// versions on every call. The copies are shared and read-only; any write to the prompt store (its generation
// changes) empties the cache, so the bootstrap file's writes are seen as the Plane's are.
type promptRecords struct {
	mu  sync.RWMutex
	gen uint64
	m   map[[2]string]*storage.Prompt
}

const maxPromptRecords = 4096

func (c *promptRecords) get(st *storage.Store, workspaceID, id string) (*storage.Prompt, error) {
	gen := st.Prompts.Generation() // read before the record, so that a racing write leaves the copy stale
	k := [2]string{workspaceID, id}
	c.mu.RLock()
	p, ok := c.m[k]
	fresh := c.gen == gen
	c.mu.RUnlock()
	if ok && fresh {
		return p, nil
	}
	p, err := st.Prompts.Get(workspaceID, id)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.gen != gen || c.m == nil || len(c.m) >= maxPromptRecords {
		c.m, c.gen = map[[2]string]*storage.Prompt{}, gen
	}
	c.m[k] = p
	c.mu.Unlock()
	return p, nil
}
