package storage

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
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
func (w *WorkspaceStore) stage(b *pebble.Batch, ws *Workspace) (bool, error) {
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
