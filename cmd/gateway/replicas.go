package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/llmgw/gateway/plugins"
	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/storage"
)

// openStore opens the durable store: PostgreSQL with --postgres (shared by the replicas), else the data
// folder's embedded one. A PostgreSQL that cannot be reached at start is an error, so the process exits with a
// message saying so instead of serving without its records.
func openStore(ctx context.Context, cfg settings, master []byte, log *slog.Logger) (*storage.Store, error) {
	if cfg.postgresURL == "" {
		return storage.Open(filepath.Join(cfg.dataDir, "db"), storage.Options{MasterKey: master, Logger: log})
	}
	connect, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	store, err := storage.OpenPostgres(connect, cfg.postgresURL, storage.Options{MasterKey: master, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("--postgres: %w", err)
	}
	return store, nil
}

// pendingUploadAge is how old an unfinished upload must be before a replica sharing the store drops its chunks
// at start: another replica may be writing it now.
const pendingUploadAge = 6 * time.Hour

// replicaFollower applies on this replica what another one changed in the shared store: the store has dropped
// its cached records already; what the gateway built from them is rebuilt here. Compiled hooks are dropped at
// once; plugins are reloaded by one goroutine in order (a module may take seconds to compile), so the feed is
// never held up.
type replicaFollower struct {
	store  *storage.Store
	wasm   *plugins.Engine
	engine *runtime.Engine
	log    *slog.Logger

	mu      sync.Mutex
	pending map[[2]string]bool // plugins to sync: workspace, id
	staged  map[[2]string]bool // uploads another replica is checking: compile their modules meanwhile
	all     bool               // sync every plugin
	wake    chan struct{}
}

// maxPendingPlugins bounds the queue of plugin changes; past it the follower syncs every plugin instead.
const maxPendingPlugins = 4096

func followReplicas(store *storage.Store, wasm *plugins.Engine, engine *runtime.Engine, log *slog.Logger) *replicaFollower {
	f := &replicaFollower{store: store, wasm: wasm, engine: engine, log: log, pending: map[[2]string]bool{},
		staged: map[[2]string]bool{}, wake: make(chan struct{}, 1)}
	store.OnChange(f.changed)
	return f
}

func (f *replicaFollower) changed(c storage.Change) {
	switch {
	case c.All:
		f.engine.ForgetCompiledHooks()
		f.mu.Lock()
		f.all = true
		f.mu.Unlock()
	case c.Table == "guardrail":
		f.engine.ForgetCompiledHooks()
		return
	case c.Table == "pluginstage":
		f.mu.Lock()
		if len(f.staged) < maxPendingPlugins {
			f.staged[[2]string{c.WorkspaceID, c.ID}] = true
		}
		f.mu.Unlock()
	case c.Table == "plugin": // its module's key changes in the same commit: one reload is enough
		f.engine.ForgetCompiledHooks()
		f.mu.Lock()
		if len(f.pending) >= maxPendingPlugins {
			f.all = true
		} else {
			f.pending[[2]string{c.WorkspaceID, c.ID}] = true
		}
		f.mu.Unlock()
	default:
		return
	}
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// run reloads the plugins other replicas changed until ctx ends.
func (f *replicaFollower) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
		}
		f.mu.Lock()
		all, pending, staged := f.all, f.pending, f.staged
		f.all, f.pending, f.staged = false, map[[2]string]bool{}, map[[2]string]bool{}
		f.mu.Unlock()
		// Staged modules first: the store that follows loads them from the compilation cache. An upload that is
		// refused leaves only a compiled module in the cache.
		for k := range staged {
			if pending[k] || all {
				continue // stored already: the sync below compiles it anyway
			}
			wasm, err := f.store.Plugins.Staged(k[0], k[1])
			if err != nil {
				continue // the upload is over
			}
			start := time.Now()
			if err := f.wasm.Validate(ctx, wasm); err != nil && ctx.Err() == nil {
				f.log.Debug("replica: a module another replica is checking does not compile here either", "workspace", k[0], "plugin", k[1], "err", err)
				continue
			}
			f.log.Debug("replica: compiled a module another replica is uploading", "workspace", k[0], "plugin", k[1],
				"took", time.Since(start))
		}
		if all {
			f.log.Info("replica: the change feed was interrupted or a workspace went away; syncing every plugin with the store")
			if err := f.wasm.SyncAll(ctx, f.store); err != nil && ctx.Err() == nil {
				f.log.Error("replica: plugins not synced with the store", "err", err)
			}
			continue
		}
		for k := range pending {
			did, err := f.wasm.Sync(ctx, f.store, k[0], k[1])
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				f.log.Error("replica: a plugin another replica stored does not load here", "workspace", k[0], "plugin", k[1], "err", err)
				continue
			}
			if did != "unchanged" && did != "absent" {
				f.log.Info("replica: plugin "+did+" (changed on another replica)", "workspace", k[0], "plugin", k[1])
			}
		}
	}
}
