package plugins

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/llmgw/gateway/storage"
)

// Sync brings one plugin in line with the store, for a replica told that another one changed it (storage's
// change feed): a plugin no longer stored is removed, one whose stored module differs from the loaded one is
// loaded (the current version serves until the new one is ready), one already loaded with the stored bytes is
// left alone. It reports what it did: "removed", "loaded", "unchanged" or "absent".
func (e *Engine) Sync(ctx context.Context, st *storage.Store, workspaceID, id string) (string, error) {
	meta, err := st.Plugins.Get(workspaceID, id)
	if errors.Is(err, storage.ErrNotFound) {
		if e.Remove(workspaceID, id) {
			return "removed", nil
		}
		return "absent", nil
	}
	if err != nil {
		return "", err
	}
	if s, ok := e.Stats(workspaceID, id); ok && s.SHA256 == meta.SHA256 {
		return "unchanged", nil
	}
	wasm, err := st.Plugins.Wasm(workspaceID, id)
	if err != nil {
		return "", err
	}
	if sum := sha256.Sum256(wasm); fmt.Sprintf("%x", sum) != meta.SHA256 {
		// The record and the bytes are written in one batch; a mismatch is a write racing this read, whose
		// own change notice follows.
		return "unchanged", nil
	}
	if err := e.Load(ctx, workspaceID, id, wasm); err != nil {
		return "", err
	}
	return "loaded", nil
}

// SyncAll brings every plugin in line with the store: each stored plugin is synced, and each loaded plugin of a
// workspace that no longer stores it is removed. A replica runs it when its change feed was interrupted.
func (e *Engine) SyncAll(ctx context.Context, st *storage.Store) error {
	wss, err := st.Workspaces.List()
	if err != nil {
		return fmt.Errorf("plugins: list workspaces: %w", err)
	}
	seen := map[string]bool{}
	for _, ws := range wss {
		seen[ws.ID] = true
		stored := map[string]bool{}
		ps, err := st.Plugins.List(ws.ID)
		if err != nil {
			return fmt.Errorf("plugins: list stored plugins: %w", err)
		}
		for _, p := range ps {
			stored[p.ID] = true
			if p.LoadError != "" {
				continue
			}
			if _, err := e.Sync(ctx, st, ws.ID, p.ID); err != nil {
				e.log.Error("plugins: a stored plugin does not load", "workspace", ws.ID, "plugin", p.ID, "error", err)
			}
		}
		for _, id := range e.Loaded(ws.ID) {
			if !stored[id] {
				e.Remove(ws.ID, id)
			}
		}
	}
	e.mu.RLock()
	var gone []string
	for id := range e.workspaces {
		if !seen[id] {
			gone = append(gone, id)
		}
	}
	e.mu.RUnlock()
	for _, ws := range gone {
		for _, id := range e.Loaded(ws) {
			e.Remove(ws, id)
		}
	}
	return ctx.Err()
}
