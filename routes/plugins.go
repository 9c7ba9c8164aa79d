package routes

import (
	"context"
	"errors"
	"mime"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// PluginHost is what the plugin endpoints need of the wasm engine: check a module, install it into a workspace
// (load it, then save it, then serve it: see plugins.Engine.Install), and unload it.
type PluginHost interface {
	Validate(ctx context.Context, wasm []byte) error
	// Install loads wasm as the workspace's plugin id, runs save once it has loaded, and serves it only if
	// save returns nil. On any failure the plugin's current version, if any, keeps serving.
	Install(ctx context.Context, workspaceID, id string, wasm []byte, save func() error) error
	Remove(workspaceID, id string) bool
}

// pluginLoadTimeout bounds compiling and instantiating an uploaded module (a cold Go guest compiles in seconds).
const pluginLoadTimeout = 60 * time.Second

type pluginView struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	WorkspaceID string `json:"workspace_id"`
	SHA256      string `json:"sha256"`
	Size        int    `json:"size"`
	CreatedAt   string `json:"created_at"`
	UpdatedAt   string `json:"updated_at"`
	// LoadError is why the stored module failed to load at a start (it is then not served).
	LoadError string `json:"load_error,omitempty"`
}

func viewPlugin(p *storage.Plugin) pluginView {
	return pluginView{ID: p.ID, Object: "plugin", WorkspaceID: p.WorkspaceID, SHA256: p.SHA256, Size: p.Size,
		CreatedAt: p.CreatedAt.UTC().Format(time.RFC3339), UpdatedAt: p.UpdatedAt.UTC().Format(time.RFC3339),
		LoadError: p.LoadError}
}

func (s *Server) pluginHost() (PluginHost, error) {
	if s.plugins == nil {
		return nil, gwerr.New(fiber.StatusServiceUnavailable, gwerr.CodeUnavailable, "plugins are not enabled on this gateway")
	}
	return s.plugins, nil
}

// putPlugin answers PUT /v1/plugins/:id with the module's bytes as the body (application/wasm or
// application/octet-stream): the module is validated and loaded, then stored with its SHA-256, then swapped in
// for the workspace. A module that does not load (400) or does not fit the workspace's bounds (409) is not
// stored, and the plugin's previous module keeps serving. Admin only.
func (s *Server) putPlugin(c *fiber.Ctx) error {
	caller, err := requireAdmin(c)
	if err != nil {
		return err
	}
	host, err := s.pluginHost()
	if err != nil {
		return err
	}
	id := strings.Clone(c.Params("id"))
	if err := storage.CheckID("plugin id", id); err != nil {
		return gwerr.BadRequest("id", "%v", err)
	}
	mt, _, _ := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
	if mt != "application/wasm" && mt != "application/octet-stream" {
		return &gwerr.Error{Status: fiber.StatusUnsupportedMediaType, Code: gwerr.CodeUnsupportedMediaType, Param: "content-type",
			Message: "send the module's bytes as application/wasm (or application/octet-stream)"}
	}
	wasm := append([]byte(nil), c.Body()...)
	if len(wasm) == 0 {
		return gwerr.BadRequest("body", "the body is empty: send the WebAssembly module")
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), pluginLoadTimeout)
	defer cancel()
	if err := host.Validate(ctx, wasm); err != nil {
		return asBadRequest(err, "body")
	}
	var p *storage.Plugin
	var saveErr error
	err = host.Install(ctx, caller.WorkspaceID, id, wasm, func() error {
		p, _, saveErr = s.store.Plugins.Put(caller.WorkspaceID, id, wasm)
		return saveErr
	})
	if saveErr != nil {
		return gwerr.Internal(saveErr)
	}
	if err != nil {
		return asBadRequest(err, "body")
	}
	s.log.Info("plugin loaded and stored", "trace_id", ensureTraceID(c), "plugin", id, "workspace_id", caller.WorkspaceID,
		"sha256", p.SHA256, "size", p.Size)
	return c.JSON(viewPlugin(p))
}

// asBadRequest keeps a *gwerr.Error as it is and makes any other error a 400 about param.
func asBadRequest(err error, param string) error {
	var ge *gwerr.Error
	if errors.As(err, &ge) {
		return ge
	}
	return gwerr.BadRequest(param, "%v", err)
}

// listPlugins answers GET /v1/plugins: the caller's workspace's plugins. Admin only.
func (s *Server) listPlugins(c *fiber.Ctx) error {
	caller, err := requireAdmin(c)
	if err != nil {
		return err
	}
	list, err := s.store.Plugins.List(caller.WorkspaceID)
	if err != nil {
		return gwerr.Internal(err)
	}
	data := make([]pluginView, 0, len(list))
	for _, p := range list {
		data = append(data, viewPlugin(p))
	}
	return c.JSON(fiber.Map{"object": "list", "data": data})
}

// getPlugin answers GET /v1/plugins/:id. Admin only; other workspaces' plugins are 404.
func (s *Server) getPlugin(c *fiber.Ctx) error {
	caller, err := requireAdmin(c)
	if err != nil {
		return err
	}
	id := c.Params("id")
	p, err := s.store.Plugins.Get(caller.WorkspaceID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return gwerr.NotFound("plugin", id)
	}
	if err != nil {
		return gwerr.Internal(err)
	}
	return c.JSON(viewPlugin(p))
}

// deletePlugin answers DELETE /v1/plugins/:id: the plugin is unloaded and deleted. Admin only.
func (s *Server) deletePlugin(c *fiber.Ctx) error {
	caller, err := requireAdmin(c)
	if err != nil {
		return err
	}
	id := strings.Clone(c.Params("id"))
	err = s.store.Plugins.Delete(caller.WorkspaceID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return gwerr.NotFound("plugin", id)
	}
	if err != nil {
		return gwerr.Internal(err)
	}
	if s.plugins != nil {
		s.plugins.Remove(caller.WorkspaceID, id)
	}
	// Compiled checks that name the plugin were accepted while it existed: compiled again, they are refused.
	s.engine.ForgetCompiledHooks()
	s.log.Info("plugin deleted", "trace_id", ensureTraceID(c), "plugin", id, "workspace_id", caller.WorkspaceID)
	return c.JSON(fiber.Map{"id": id, "object": "plugin", "deleted": true})
}
