package control

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// pluginLoadTimeout bounds compiling and instantiating an uploaded module (a cold Go guest compiles in seconds).
const pluginLoadTimeout = 60 * time.Second

// ListPlugins returns the caller's workspace's plugins.
func (p *Plane) ListPlugins(_ context.Context, caller Caller) ([]*storage.Plugin, error) {
	list, err := p.store.Plugins.List(caller.WorkspaceID)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	return list, nil
}

// GetPlugin returns the caller's workspace's plugin id; other workspaces' plugins are 404.
func (p *Plane) GetPlugin(_ context.Context, caller Caller, id string) (*storage.Plugin, error) {
	pl, err := p.store.Plugins.Get(caller.WorkspaceID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, gwerr.NotFound("plugin", id)
	}
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	return pl, nil
}

// PutPlugin makes module the caller's workspace's plugin id: it is validated and loaded, then stored with its
// SHA-256, then swapped in. A module that does not load (400) or does not fit the workspace's bounds (409) is
// not stored, and the plugin's previous module keeps serving.
//
// module returns the module's bytes (a copy the Plane may keep) or the transport's refusal of them (such as a
// 415). It is called once the engine and the id are checked, so that a request refused for those reasons is
// refused for them whatever its body.
func (p *Plane) PutPlugin(ctx context.Context, caller Caller, id string, module func() ([]byte, error)) (*storage.Plugin, error) {
	if p.plugins == nil {
		return nil, gwerr.New(http.StatusServiceUnavailable, gwerr.CodeUnavailable, "plugins are not enabled on this gateway")
	}
	if err := storage.CheckID("plugin id", id); err != nil {
		return nil, gwerr.BadRequest("id", "%v", err)
	}
	wasm, err := module()
	if err != nil {
		return nil, err
	}
	if len(wasm) == 0 {
		return nil, gwerr.BadRequest("body", "the body is empty: send the WebAssembly module")
	}
	ctx, cancel := context.WithTimeout(ctx, pluginLoadTimeout)
	defer cancel()
	if p.store.Shared() {
		// The other replicas start compiling the module now, alongside this one, rather than once it is stored.
		if err := p.store.Plugins.Stage(caller.WorkspaceID, id, wasm); err != nil {
			p.log.Warn("plugin not staged for the other replicas; they compile it once it is stored", "plugin", id, "err", err)
		} else {
			defer func() {
				if err := p.store.Plugins.Unstage(caller.WorkspaceID, id); err != nil {
					p.log.Warn("staged plugin module not dropped", "plugin", id, "err", err)
				}
			}()
		}
	}
	if err := p.plugins.Validate(ctx, wasm); err != nil {
		return nil, asBadRequest(err, "body")
	}
	var pl *storage.Plugin
	var saveErr error
	err = p.plugins.Install(ctx, caller.WorkspaceID, id, wasm, func() error {
		pl, _, saveErr = p.store.Plugins.Put(caller.WorkspaceID, id, wasm)
		return saveErr
	})
	if saveErr != nil {
		return nil, gwerr.Internal(saveErr)
	}
	if err != nil {
		return nil, asBadRequest(err, "body")
	}
	p.log.Info("plugin loaded and stored", "trace_id", caller.TraceID, "plugin", id, "workspace_id", caller.WorkspaceID,
		"sha256", pl.SHA256, "size", pl.Size)
	return pl, nil
}

// asBadRequest keeps a *gwerr.Error as it is and makes any other error a 400 about param.
func asBadRequest(err error, param string) error {
	var ge *gwerr.Error
	if errors.As(err, &ge) {
		return ge
	}
	return gwerr.BadRequest(param, "%v", err)
}

// DeletePlugin unloads and deletes the caller's workspace's plugin id, and makes the engine forget its
// compiled checks: those that name the plugin were accepted while it existed, and compiled again they are
// refused.
func (p *Plane) DeletePlugin(_ context.Context, caller Caller, id string) error {
	err := p.store.Plugins.Delete(caller.WorkspaceID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return gwerr.NotFound("plugin", id)
	}
	if err != nil {
		return gwerr.Internal(err)
	}
	if p.plugins != nil {
		p.plugins.Remove(caller.WorkspaceID, id)
	}
	p.forgetHooks()
	p.log.Info("plugin deleted", "trace_id", caller.TraceID, "plugin", id, "workspace_id", caller.WorkspaceID)
	return nil
}
