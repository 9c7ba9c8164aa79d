package bootstrap

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/netguard"
	"github.com/llmgw/gateway/storage"
)

// Result counts what Apply wrote. Applying the same file twice yields Changed == 0 the second time.
type Result struct {
	Changed   int
	Unchanged int
}

func (r *Result) count(changed bool) {
	if changed {
		r.Changed++
	} else {
		r.Unchanged++
	}
}

// Apply writes the file's entries to the store, idempotently: an entry equal to what is stored changes nothing,
// a changed entry updates the record (keeping its creation time). Entries the file does not name are left alone.
//
// Workspace references are resolved before anything is written: a reference to a workspace that neither the
// file nor the store has fails the whole file, naming the entry, except "default", which is created when
// missing. So does a check of a guardrail or config that names a plugin neither the file (same workspace) nor
// the store has. A write can still fail midway on an I/O error; applying the file again then completes it.
//
// The entries of the resources the control plane owns (API keys, rate-limit policies, prompts, saved guardrails,
// plugins and MCP servers) are written through a control.Plane over st, without a wasm engine, that logs nothing;
// ApplyThrough takes the gateway's.
func Apply(st *storage.Store, f *File) (Result, error) {
	return ApplyWith(st, f, Options{})
}

// Plane is what Apply needs of the control plane (*control.Plane): the operations that apply one record of
// the resources it owns, with its validation, write serialisation and cache invalidation. Each reports
// whether it wrote. The caller's WorkspaceID is the entry's workspace, stored by then.
type Plane interface {
	UpsertAPIKey(ctx context.Context, caller control.Caller, secret, name string, admin, organisationAdmin bool) (bool, error)
	UpsertPolicy(ctx context.Context, caller control.Caller, pol *storage.RateLimitPolicy) (bool, error)
	UpsertUsageLimit(ctx context.Context, caller control.Caller, pol *storage.UsageLimitPolicy) (bool, error)
	UpsertPrompt(ctx context.Context, caller control.Caller, id, name string, versions []storage.PromptVersion) (bool, error)
	UpsertGuardrail(ctx context.Context, caller control.Caller, id string, obj json.RawMessage) (bool, error)
	UpsertPlugin(ctx context.Context, caller control.Caller, id string, wasm []byte) (bool, error)
	// CheckMCPServer checks an MCP server entry as UpsertMCPServer will, against the plane's address policy,
	// so that a refused url fails the file before the first write.
	CheckMCPServer(ctx context.Context, srv *storage.MCPServer) error
	UpsertMCPServer(ctx context.Context, caller control.Caller, srv *storage.MCPServer) (bool, error)
}

var _ Plane = (*control.Plane)(nil)

// Options change what ApplyWith does.
type Options struct {
	// LoadPlugin, when set, loads a plugin's module into the wasm engine (plugins.Engine.Load) before anything
	// is written. It is called for each module the store does not hold already (the engine loads those from
	// the store), and a module it refuses fails the whole file as a ValidationError naming the entry: a module
	// that does not load is never stored, so it never replaces a stored one that does. Without it, modules are
	// stored unloaded, and a bad one is logged and skipped when the engine loads the store.
	LoadPlugin func(workspaceID, id string, wasm []byte) error
	// HostPolicy is the address policy MCP server URLs pass in ApplyWith (ApplyThrough uses its plane's).
	// Nil: the default policy.
	HostPolicy *netguard.Policy
}

// ApplyWith is Apply with options: with Options.LoadPlugin, plugin modules are loaded before anything is
// written, like workspace references are resolved.
func ApplyWith(st *storage.Store, f *File, opts Options) (Result, error) {
	// Apply runs before the gateway serves and has no request to take a context from.
	plane := control.New(st, nil, control.Options{Logger: slog.New(slog.DiscardHandler), HostPolicy: opts.HostPolicy})
	return ApplyThrough(context.Background(), plane, st, f, opts)
}

// ApplyThrough is ApplyWith writing the control plane's resources through plane, which must be over st (cmd
// passes the gateway's, with its wasm engine). Workspaces, providers and configs, which no plane owns yet, are
// written to st. Everything is validated before the first write, plane or not.
func ApplyThrough(ctx context.Context, plane Plane, st *storage.Store, f *File, opts Options) (Result, error) {
	var res Result
	p := &problems{}
	plan, err := planWorkspaces(st, f, p)
	if err != nil {
		return res, err
	}
	ws := func(path, ref string) *storage.Workspace {
		w, ok := plan.bySlugOrID[ref]
		if ok {
			return w
		}
		w, err := st.Workspaces.Resolve(ref)
		if err == nil {
			plan.bySlugOrID[ref] = w
			return w
		}
		if !errors.Is(err, storage.ErrNotFound) {
			p.Add(path+".workspace", "%v", err)
			return nil
		}
		if ref == storage.DefaultWorkspaceSlug {
			w = &storage.Workspace{ID: storage.NewUUID(), Slug: ref, OrganisationID: storage.NewUUID(), Name: "Default"}
			plan.bySlugOrID[ref] = w
			plan.writes = append(plan.writes, w)
			return w
		}
		p.Add(path+".workspace", "no workspace %q: define it under \"workspaces\" or create it first", ref)
		return nil
	}
	// Resolve every reference before the first write.
	refs := map[string]*storage.Workspace{}
	resolve := func(path, ref string) { refs[path] = ws(path, ref) }
	// Two entries that name one workspace two ways (slug and ID, or "default" implied and by ID) can name the
	// same record twice, which Parse cannot see: the later would overwrite the earlier on every run.
	seen := map[string]string{}
	dup := func(path, field, what, id string) {
		w := refs[path]
		if w == nil || id == "" { // a missing id is reported by Parse already
			return
		}
		k := what + "\x00" + w.ID + "\x00" + id
		if first, ok := seen[k]; ok {
			p.Add(path+"."+field, "duplicate %s in workspace %s: %s already defines it", what, w.Slug, first)
			return
		}
		seen[k] = path + "." + field
	}
	for _, x := range f.APIKeys {
		resolve(x.Path, x.Workspace)
	}
	for _, x := range f.Providers {
		resolve(x.Path, x.Workspace)
		dup(x.Path, "slug", "provider slug", x.Slug)
	}
	for _, x := range f.Configs {
		resolve(x.Path, x.Workspace)
		dup(x.Path, "id", "config id", x.ID)
	}
	for _, x := range f.Prompts {
		resolve(x.Path, x.Workspace)
		dup(x.Path, "id", "prompt id", x.ID)
	}
	for _, x := range f.RateLimitPolicies {
		resolve(x.Path, x.Workspace)
	}
	for _, x := range f.UsageLimits {
		resolve(x.Path, x.Workspace)
	}
	for _, x := range f.Guardrails {
		resolve(x.Path, x.Workspace)
		dup(x.Path, "id", "guardrail id", x.ID)
	}
	for _, x := range f.Plugins {
		resolve(x.Path, x.Workspace)
		dup(x.Path, "id", "plugin id", x.ID)
	}
	for _, x := range f.MCPServers {
		resolve(x.Path, x.Workspace)
		dup(x.Path, "id", "MCP server id", x.Server.ID)
	}
	if err := checkPlugins(st, f, refs, p); err != nil {
		return res, err
	}
	checkMCPServers(ctx, plane, f, p)
	if len(p.List) > 0 {
		return res, &ValidationError{Problems: p.List}
	}
	if opts.LoadPlugin != nil {
		for _, x := range f.Plugins {
			loadPlugin(st, refs[x.Path], x, opts.LoadPlugin, p)
		}
		if len(p.List) > 0 {
			return res, &ValidationError{Problems: p.List}
		}
	}

	fail := func(path string, err error) (Result, error) {
		return res, fmt.Errorf("bootstrap %s: %w", path, err)
	}
	for _, w := range plan.writes {
		changed, err := st.Workspaces.Put(w)
		if err != nil {
			return fail("workspace "+w.Slug, err)
		}
		res.count(changed)
	}
	caller := func(path string) control.Caller {
		return control.Caller{WorkspaceID: refs[path].ID, KeyID: "bootstrap"}
	}
	for _, x := range f.APIKeys {
		changed, err := plane.UpsertAPIKey(ctx, caller(x.Path), x.Key, x.Name, x.Admin, x.OrganisationAdmin)
		if err != nil {
			return fail(x.Path, err)
		}
		res.count(changed)
	}
	for _, x := range f.Providers {
		changed, err := st.Providers.Put(&storage.Provider{WorkspaceID: refs[x.Path].ID, Slug: x.Slug, Provider: x.Provider,
			Name: x.Name, Fields: x.Fields})
		if err != nil {
			return fail(x.Path, err)
		}
		res.count(changed)
	}
	for _, x := range f.Configs {
		w := refs[x.Path]
		changed, err := st.Configs.Put(w.ID, x.ID, &storage.Config{ID: x.ID, WorkspaceID: w.ID, Config: x.Config})
		if err != nil {
			return fail(x.Path, err)
		}
		res.count(changed)
	}
	for _, x := range f.Prompts {
		changed, err := plane.UpsertPrompt(ctx, caller(x.Path), x.ID, x.Name, x.Versions)
		if err != nil {
			return fail(x.Path, err)
		}
		res.count(changed)
	}
	for _, x := range f.RateLimitPolicies {
		changed, err := plane.UpsertPolicy(ctx, caller(x.Path), &storage.RateLimitPolicy{ID: x.ID, Type: x.Type, Unit: x.Unit,
			Value: x.Value, Status: x.Status, Name: x.Name, Conditions: x.Conditions, GroupBy: x.GroupBy})
		if err != nil {
			return fail(x.Path, err)
		}
		res.count(changed)
	}
	for _, x := range f.UsageLimits {
		changed, err := plane.UpsertUsageLimit(ctx, caller(x.Path), x.Policy)
		if err != nil {
			return fail(x.Path, err)
		}
		res.count(changed)
	}
	// Plugins before guardrails: a saved guardrail's plugin checks need their plugin stored.
	for _, x := range f.Plugins {
		changed, err := plane.UpsertPlugin(ctx, caller(x.Path), x.ID, x.Wasm)
		if err != nil {
			return fail(x.Path, err)
		}
		res.count(changed)
	}
	for _, x := range f.Guardrails {
		changed, err := plane.UpsertGuardrail(ctx, caller(x.Path), x.ID, x.Object)
		if err != nil {
			return fail(x.Path, err)
		}
		res.count(changed)
	}
	for _, x := range f.MCPServers {
		changed, err := plane.UpsertMCPServer(ctx, caller(x.Path), x.Server)
		if err != nil {
			return fail(x.Path, err)
		}
		res.count(changed)
	}
	return res, nil
}

// loadPlugin loads the entry's module with load unless the store holds it already, adding a problem at the
// entry's "wasm" when it does not load.
func loadPlugin(st *storage.Store, w *storage.Workspace, x Plugin, load func(workspaceID, id string, wasm []byte) error, p *problems) {
	sum := sha256.Sum256(x.Wasm)
	if meta, err := st.Plugins.Get(w.ID, x.ID); err == nil && meta.SHA256 == hex.EncodeToString(sum[:]) && meta.LoadError == "" {
		return
	}
	err := load(w.ID, x.ID, x.Wasm)
	if err == nil {
		return
	}
	msg := err.Error()
	var ge *gwerr.Error
	if errors.As(err, &ge) {
		msg = ge.Message
	}
	p.Add(x.Path+".wasm", "%s does not load: %s", x.File, msg)
}

type workspacePlan struct {
	bySlugOrID map[string]*storage.Workspace
	writes     []*storage.Workspace
}

// planWorkspaces turns the file's workspaces into records, keeping the IDs of workspaces that exist, and checks
// that no slug would move from one workspace to another.
func planWorkspaces(st *storage.Store, f *File, p *problems) (*workspacePlan, error) {
	plan := &workspacePlan{bySlugOrID: map[string]*storage.Workspace{}}
	for _, x := range f.Workspaces {
		w := &storage.Workspace{ID: x.ID, Slug: x.Slug, OrganisationID: x.OrganisationID, Name: x.Name, SemanticCache: x.SemanticCache}
		existing, err := st.Workspaces.Resolve(x.Slug)
		switch {
		case err == nil:
			if w.ID != "" && w.ID != existing.ID {
				p.Add(x.Path+".id", "slug %q already belongs to workspace %s; a workspace's ID cannot change", x.Slug, existing.ID)
				continue
			}
			w.ID = existing.ID
			if w.OrganisationID == "" {
				w.OrganisationID = existing.OrganisationID
			}
		case errors.Is(err, storage.ErrNotFound):
			if w.ID == "" {
				w.ID = storage.NewUUID()
			}
			if w.OrganisationID == "" {
				w.OrganisationID = storage.NewUUID()
			}
		default:
			return nil, err
		}
		plan.bySlugOrID[w.Slug] = w
		plan.bySlugOrID[w.ID] = w
		plan.writes = append(plan.writes, w)
	}
	if len(p.List) > 0 {
		return nil, &ValidationError{Problems: p.List}
	}
	return plan, nil
}
