package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmgw/gateway/routes"
	"github.com/llmgw/gateway/storage"
)

// pluginWatcher deploys plugins from a folder (--plugins DIR): DIR/<workspace>/<id>.wasm, where <workspace> is
// a workspace's slug or ID. A new or changed file is validated, stored (so that a restart reloads it) and swapped
// in; a removed file unloads and deletes its plugin. It polls: file-system notifications miss changes on
// network and container mounts, and a scan of a few files is cheap.
type pluginWatcher struct {
	dir   string
	store *storage.Store
	host  routes.PluginHost
	log   *slog.Logger
	seen  map[string]watchedFile // path → what was last loaded from it
}

type watchedFile struct {
	workspaceID, id string
	size            int64
	modTime         time.Time
	sum             [sha256.Size]byte
}

func newPluginWatcher(dir string, store *storage.Store, host routes.PluginHost, log *slog.Logger) *pluginWatcher {
	return &pluginWatcher{dir: dir, store: store, host: host, log: log.With("component", "plugin-watcher", "dir", dir),
		seen: map[string]watchedFile{}}
}

// run scans every interval until ctx ends.
func (w *pluginWatcher) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		w.scan(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// scan loads what changed since the last scan and unloads what disappeared.
func (w *pluginWatcher) scan(ctx context.Context) {
	present := map[string]bool{}
	workspaces, err := os.ReadDir(w.dir)
	if err != nil {
		w.log.Warn("cannot read the plugins folder", "err", err)
		return
	}
	for _, wsDir := range workspaces {
		if !wsDir.IsDir() {
			continue
		}
		ws, err := w.store.Workspaces.Resolve(wsDir.Name())
		if err != nil {
			w.log.Warn("folder names no workspace; skipped", "folder", wsDir.Name(), "err", err)
			continue
		}
		files, err := os.ReadDir(filepath.Join(w.dir, wsDir.Name()))
		if err != nil {
			w.log.Warn("cannot read a workspace's plugin folder", "folder", wsDir.Name(), "err", err)
			continue
		}
		for _, f := range files {
			id, ok := strings.CutSuffix(f.Name(), ".wasm")
			if !ok || f.IsDir() {
				continue
			}
			path := filepath.Join(w.dir, wsDir.Name(), f.Name())
			if !storage.ValidID(id) {
				w.log.Warn("file name is not a valid plugin id; skipped", "file", path)
				continue
			}
			present[path] = true
			w.consider(ctx, path, ws.ID, id)
		}
	}
	for path, f := range w.seen {
		if present[path] {
			continue
		}
		delete(w.seen, path)
		w.host.Remove(f.workspaceID, f.id)
		if err := w.store.Plugins.Delete(f.workspaceID, f.id); err != nil && !errors.Is(err, storage.ErrNotFound) {
			w.log.Warn("cannot delete a removed plugin", "plugin", f.id, "err", err)
		}
		w.log.Info("plugin file removed: plugin unloaded", "plugin", f.id, "workspace_id", f.workspaceID)
	}
}

// consider loads the file at path when it is new or changed.
func (w *pluginWatcher) consider(ctx context.Context, path, workspaceID, id string) {
	info, err := os.Stat(path)
	if err != nil || !info.Mode().IsRegular() {
		return
	}
	prev, known := w.seen[path]
	if known && prev.size == info.Size() && prev.modTime.Equal(info.ModTime()) && prev.workspaceID == workspaceID {
		return
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		w.log.Warn("cannot read plugin file", "file", path, "err", err)
		return
	}
	cur := watchedFile{workspaceID: workspaceID, id: id, size: info.Size(), modTime: info.ModTime(), sum: sha256.Sum256(wasm)}
	w.seen[path] = cur // a bad file is not retried until it changes
	if known && prev.sum == cur.sum {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := w.host.Validate(lctx, wasm); err != nil {
		w.log.Warn("plugin file refused", "file", path, "err", err)
		return
	}
	if _, _, err := w.store.Plugins.Put(workspaceID, id, wasm); err != nil {
		w.log.Error("cannot store plugin", "file", path, "err", err)
		return
	}
	if err := w.host.Load(lctx, workspaceID, id, wasm); err != nil {
		w.log.Warn("plugin file did not load", "file", path, "err", err)
		return
	}
	w.log.Info("plugin loaded from file", "plugin", id, "workspace_id", workspaceID, "file", path)
}
