package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/routes"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// pluginWatcher deploys plugins from a folder (--plugins DIR): DIR/<workspace>/<id>.wasm, where <workspace> is
// a workspace's slug or ID. A new or changed file is validated, loaded, stored (so that a restart reloads it)
// and swapped in, in that order: a file that does not load is not stored, and the plugin's previous module keeps
// serving. A removed file unloads and deletes its plugin. It polls: file-system notifications miss changes on
// network and container mounts, and a scan of a few files is cheap.
//
// A problem is logged once, when it appears or changes, not at every scan: a folder that names no workspace
// would otherwise repeat its warning every interval.
type pluginWatcher struct {
	dir   string
	store *storage.Store
	host  routes.PluginHost
	// plane stores and deletes the plugins, so that what a write must invalidate (compiled checks naming a
	// deleted plugin) is invalidated as for the admin API.
	plane  *control.Plane
	log    *slog.Logger
	seen   map[string]watchedFile // path → what was last loaded from it
	warned map[string]string      // problem key → the text last logged for it
	still  map[string]bool        // problem keys seen in the scan under way
}

type watchedFile struct {
	workspaceID, id string
	size            int64
	modTime         time.Time
	sum             [sha256.Size]byte
}

func newPluginWatcher(dir string, store *storage.Store, host routes.PluginHost, plane *control.Plane, log *slog.Logger) *pluginWatcher {
	return &pluginWatcher{dir: dir, store: store, host: host, plane: plane, log: log.With("component", "plugin-watcher", "dir", dir),
		seen: map[string]watchedFile{}, warned: map[string]string{}}
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

// warn logs msg about key unless the same text was logged for key since the problem last went away.
func (w *pluginWatcher) warn(key, msg string, args ...any) {
	w.still[key] = true
	text := fmt.Sprint(append([]any{msg}, args...)...)
	if w.warned[key] == text {
		return
	}
	w.warned[key] = text
	w.log.Warn(msg, args...)
}

// errText is err for a log line: a *gwerr.Error's message without its status and code.
func errText(err error) string {
	var ge *gwerr.Error
	if errors.As(err, &ge) {
		return ge.Message
	}
	return err.Error()
}

// scan loads what changed since the last scan and unloads what disappeared.
func (w *pluginWatcher) scan(ctx context.Context) {
	w.still = map[string]bool{}
	defer func() {
		for key := range w.warned {
			if !w.still[key] { // the problem went away: warn again if it comes back
				delete(w.warned, key)
			}
		}
	}()
	present := map[string]bool{}
	workspaces, err := os.ReadDir(w.dir)
	if err != nil {
		w.warn("dir", "cannot read the plugins folder", "err", errText(err))
		return
	}
	for _, wsDir := range workspaces {
		if !wsDir.IsDir() {
			continue
		}
		ws, err := w.store.Workspaces.Resolve(wsDir.Name())
		if err != nil {
			w.warn("folder:"+wsDir.Name(), "folder names no workspace; skipped", "folder", wsDir.Name(), "err", errText(err))
			continue
		}
		files, err := os.ReadDir(filepath.Join(w.dir, wsDir.Name()))
		if err != nil {
			w.warn("folder:"+wsDir.Name(), "cannot read a workspace's plugin folder", "folder", wsDir.Name(), "err", errText(err))
			continue
		}
		for _, f := range files {
			id, ok := strings.CutSuffix(f.Name(), ".wasm")
			if !ok || f.IsDir() {
				continue
			}
			path := filepath.Join(w.dir, wsDir.Name(), f.Name())
			if !storage.ValidID(id) {
				w.warn("file:"+path, "file name is not a valid plugin id; skipped", "file", path)
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
		if err := w.plane.DeletePlugin(ctx, control.Caller{WorkspaceID: f.workspaceID}, f.id); err != nil && statusOf(err) != http.StatusNotFound {
			w.log.Warn("cannot delete a removed plugin", "plugin", f.id, "err", errText(err))
		}
		w.log.Info("plugin file removed: plugin unloaded", "plugin", f.id, "workspace_id", f.workspaceID)
	}
}

// consider loads the file at path when it is new or changed. A file that fails is not tried again until it
// changes, so its warning is logged once per change.
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
		w.warn("file:"+path, "cannot read plugin file", "file", path, "err", errText(err))
		return
	}
	cur := watchedFile{workspaceID: workspaceID, id: id, size: info.Size(), modTime: info.ModTime(), sum: sha256.Sum256(wasm)}
	w.seen[path] = cur // a bad file is not retried until it changes
	if known && prev.sum == cur.sum && prev.workspaceID == workspaceID {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := w.host.Validate(lctx, wasm); err != nil {
		w.log.Warn("plugin file refused; the plugin's previous module, if any, keeps serving", "file", path, "err", errText(err))
		return
	}
	_, err = w.plane.UpsertPlugin(lctx, control.Caller{WorkspaceID: workspaceID}, id, wasm)
	switch {
	case err != nil && statusOf(err) >= 500:
		w.warn("file:"+path, "cannot store plugin; the plugin's previous module, if any, keeps serving", "file", path, "err", errText(err))
		delete(w.seen, path) // not the file's fault: try again at the next scan
	case err != nil:
		w.log.Warn("plugin file did not load; the plugin's previous module, if any, keeps serving", "file", path, "err", errText(err))
	default:
		w.log.Info("plugin loaded from file", "plugin", id, "workspace_id", workspaceID, "file", path)
	}
}

// statusOf is the HTTP status an error of the control plane stands for: 500 for one that is not a *gwerr.Error.
func statusOf(err error) int {
	var ge *gwerr.Error
	if errors.As(err, &ge) {
		return ge.Status
	}
	return http.StatusInternalServerError
}
