package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// WorkspaceStore holds workspaces and their slug index.
type WorkspaceStore struct {
	s     *Store
	cache readCache[[]byte] // encoded records: the semantic cache reads its workspace's settings per request
}

// Get returns the workspace with the given ID. The encoded record is kept in memory after the first read;
// each Get decodes its own copy.
func (w *WorkspaceStore) Get(id string) (*Workspace, error) {
	if !ValidID(id) {
		return nil, ErrNotFound
	}
	k := key(tableWorkspace, id)
	raw, err := w.cache.get(string(k), func() ([]byte, error) { return w.s.get(k) })
	if err != nil {
		return nil, err
	}
	ws := new(Workspace)
	if err := json.Unmarshal(raw, ws); err != nil {
		return nil, fmt.Errorf("storage: decode %s: %w", k, err)
	}
	return ws, nil
}

// Resolve returns the workspace named by ref, a workspace ID or slug.
func (w *WorkspaceStore) Resolve(ref string) (*Workspace, error) {
	if _, err := uuid.Parse(ref); err == nil {
		ws, err := w.Get(ref)
		if !errors.Is(err, ErrNotFound) {
			return ws, err
		}
	}
	return w.bySlug(ref)
}

func (w *WorkspaceStore) bySlug(slug string) (*Workspace, error) {
	if !ValidID(slug) {
		return nil, ErrNotFound
	}
	id, err := w.s.get(key(tableWSSlug, slug))
	if err != nil {
		return nil, err
	}
	return w.Get(string(id))
}

// List returns every workspace, ordered by ID.
func (w *WorkspaceStore) List() ([]*Workspace, error) {
	return listJSON[Workspace](w.s, prefix(tableWorkspace))
}

// Put creates or updates the workspace with ws.ID (a UUID). A slug held by another workspace is ErrConflict.
// It reports whether anything changed.
func (w *WorkspaceStore) Put(ws *Workspace) (changed bool, err error) {
	w.s.writeMu.Lock()
	defer w.s.writeMu.Unlock()
	b := w.s.db.NewBatch()
	changed, err = w.stage(b, ws)
	if err != nil {
		b.Close()
		return false, err
	}
	err = w.s.commit(b)
	w.cache.forget(string(key(tableWorkspace, ws.ID))) // after the commit: a read racing it is dropped, not kept
	return changed, err
}

// stage adds the writes of Put to b. The caller holds writeMu.
func (w *WorkspaceStore) stage(b kvBatch, ws *Workspace) (bool, error) {
	if _, err := uuid.Parse(ws.ID); err != nil {
		return false, fmt.Errorf("workspace id %q is not a UUID", ws.ID)
	}
	if err := CheckID("workspace slug", ws.Slug); err != nil {
		return false, err
	}
	if _, err := uuid.Parse(ws.OrganisationID); err != nil {
		return false, fmt.Errorf("workspace organisation_id %q is not a UUID", ws.OrganisationID)
	}
	holder, err := w.s.get(key(tableWSSlug, ws.Slug))
	switch {
	case err == nil && string(holder) != ws.ID:
		return false, fmt.Errorf("%w: slug %q belongs to workspace %s", ErrConflict, ws.Slug, holder)
	case err != nil && !errors.Is(err, ErrNotFound):
		return false, err
	}
	if old, err := w.Get(ws.ID); err == nil && old.Slug != ws.Slug {
		if err := b.Delete(key(tableWSSlug, old.Slug), nil); err != nil {
			return false, err
		}
	} else if err != nil && !errors.Is(err, ErrNotFound) {
		return false, err
	}
	if string(holder) != ws.ID { // an unchanged index is not written again, so a no-op Put syncs nothing
		if err := b.Set(key(tableWSSlug, ws.Slug), []byte(ws.ID), nil); err != nil {
			return false, err
		}
	}
	return upsert(w.s, b, key(tableWorkspace, ws.ID), ws)
}

// Create stores a new workspace; an ID or slug that is taken is ErrConflict.
func (w *WorkspaceStore) Create(ws *Workspace) error {
	w.s.writeMu.Lock()
	defer w.s.writeMu.Unlock()
	if _, err := w.Get(ws.ID); err == nil {
		return fmt.Errorf("%w: workspace %s exists", ErrConflict, ws.ID)
	} else if !errors.Is(err, ErrNotFound) {
		return err
	}
	b := w.s.db.NewBatch()
	if _, err := w.stage(b, ws); err != nil {
		b.Close()
		return err
	}
	err := w.s.commit(b)
	w.cache.forget(string(key(tableWorkspace, ws.ID)))
	return err
}

// ErrBusy is returned by WorkspaceStore.Delete while the workspace's batches still run.
var ErrBusy = errors.New("storage: busy")

// Holding is one kind of resource a workspace holds, and how many of it.
type Holding struct {
	Kind  string // "api_keys", "providers", "configs", ...
	Count int
}

// workspaceResources are the tables whose records are the resources a workspace holds, by the kind a refused
// delete names.
var workspaceResources = []struct{ kind, table string }{
	{"api_keys", tableAPIKeyID}, {"providers", tableProvider}, {"configs", tableConfig}, {"prompts", tablePrompt},
	{"guardrails", tableGuardrail}, {"policies", tablePolicy}, {"plugins", tablePlugin}, {"files", tableFile},
	{"batches", tableBatch}, {"fine_tuning_jobs", tableFTJob}, {"responses", tableResponse},
	{"usage_limit_policies", tableUsageLimit}, {"mcp_servers", tableMCPServer}, {"plugin_kv", tablePluginKV},
}

// workspaceTables are every table whose keys start with a workspace ID: a deleted workspace's records in all of
// them go with it. A new workspace-scoped table belongs here.
var workspaceTables = []string{tableAPIKeyID, tableProvider, tableConfig, tablePrompt, tableGuardrail, tablePolicy,
	tablePlugin, tablePluginWasm, tableCounter, tableCache, tableSemCache, tableFile, tableFileChunk, tableFilePending,
	tableFTFile, tableFTJob, tableBatch, tableBatchOpen, tableBatchLine, tableBatchCID, tableResponse,
	tableResponseInput, tableUsageLimit, tableBudget, tableMCPServer, tablePluginKV}

// Holdings returns the kinds of resources the workspace holds, in a fixed order, leaving out those it has none of.
func (w *WorkspaceStore) Holdings(id string) ([]Holding, error) {
	if !ValidID(id) {
		return nil, ErrNotFound
	}
	var out []Holding
	for _, r := range workspaceResources {
		n := 0
		if err := w.s.scan(prefix(r.table, id), func(_, _ []byte) error { n++; return nil }); err != nil {
			return nil, err
		}
		if n > 0 {
			out = append(out, Holding{Kind: r.kind, Count: n})
		}
	}
	return out, nil
}

// Delete removes the workspace. While it holds resources (Holdings) it is refused with ErrConflict and the
// holdings, unless force, which removes them all (its API keys stop working at once) in the same synced batch.
// While batches of it are not final, even force is refused, with ErrBusy and their count.
func (w *WorkspaceStore) Delete(id string, force bool) ([]Holding, error) {
	ws, err := w.Get(id)
	if err != nil {
		return nil, err
	}
	w.s.writeMu.Lock()
	defer w.s.writeMu.Unlock()
	held, err := w.Holdings(id)
	if err != nil {
		return nil, err
	}
	if len(held) > 0 && !force {
		return held, fmt.Errorf("%w: workspace %s holds resources", ErrConflict, id)
	}
	running := 0
	if err := w.s.scan(prefix(tableBatchOpen, id), func(_, _ []byte) error { running++; return nil }); err != nil {
		return nil, err
	}
	if running > 0 { // the runner is still writing them: not even force removes them under its feet
		return []Holding{{Kind: "running_batches", Count: running}},
			fmt.Errorf("%w: workspace %s has %d batches still running", ErrBusy, id, running)
	}
	b := w.s.db.NewBatch()
	err = w.s.scan(prefix(tableAPIKeyID, id), func(_, h []byte) error {
		return b.Delete(key(tableAPIKey, string(h)), nil)
	})
	for _, t := range workspaceTables {
		if err != nil {
			break
		}
		p := prefix(t, id)
		err = b.DeleteRange(p, prefixEnd(p), nil)
	}
	if err == nil {
		err = b.Delete(key(tableWorkspace, id), nil)
	}
	if err == nil {
		err = b.Delete(key(tableWSSlug, ws.Slug), nil)
	}
	if err != nil {
		b.Close()
		return nil, err
	}
	err = w.s.commit(b)
	w.forgetWorkspace(id) // after the commit: a read racing it is dropped, not kept
	return held, err
}

// forgetWorkspace drops every cached record of the workspace, its API keys included.
func (w *WorkspaceStore) forgetWorkspace(id string) {
	s := w.s
	s.Cache.hot.clear() // rare enough to drop every workspace's hot answers
	w.cache.forget(string(key(tableWorkspace, id)))
	forgetUnder(&s.Providers.cache, prefix(tableProvider, id))
	forgetUnder(&s.MCPServers.cache, prefix(tableMCPServer, id))
	s.PluginKV.cache.forget(id)
	for _, d := range []interface {
		forgetWorkspace(id string)
	}{s.Configs, s.Prompts, s.Guardrails, s.Policies, &s.Plugins.docs} {
		d.forgetWorkspace(id)
	}
	a := s.APIKeys
	a.mu.Lock()
	for h, k := range a.cache {
		if k.WorkspaceID == id {
			delete(a.cache, h)
		}
	}
	a.gen++
	a.mu.Unlock()
}

// forgetWorkspace drops the workspace's cached records and starts a new generation.
func (d *DocStore[T, P]) forgetWorkspace(id string) {
	forgetUnder(&d.cache, prefix(d.table, id))
	d.gen.Add(1)
}

// forgetUnder drops the cached records whose keys start with p.
func forgetUnder[V any](c *readCache[V], p []byte) {
	c.mu.Lock()
	for k := range c.m {
		if strings.HasPrefix(k, string(p)) {
			delete(c.m, k)
		}
	}
	c.gen++
	c.mu.Unlock()
}
