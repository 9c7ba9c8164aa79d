package routes

import (
	"mime"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/plugins"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// Wasm plugins of the caller's workspace (admin keys only); the operations, and the unloading and cache
// invalidation a delete needs, are control.Plane's.

// PluginHost is what the plugin endpoints need of the wasm engine; see control.PluginHost.
type PluginHost = control.PluginHost

// PluginStats is what the plugin views show of the engine's figures (plugins.Engine has it); a PluginHost
// without it shows none.
type PluginStats interface {
	Stats(workspaceID, id string) (plugins.Stats, bool)
}

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
	// What loading the stored module cost this gateway, when it serves it (absent otherwise: not loaded yet,
	// failed, or another module loaded): its compile time, whether the compiled code came from the compilation
	// cache (absent when the engine has no cache folder to tell), and its instances' instantiation times.
	CompileMS         *float64         `json:"compile_ms,omitempty"`
	CompiledFromCache *bool            `json:"compiled_from_cache,omitempty"`
	InstantiateMS     *instantiateView `json:"instantiate_ms,omitempty"`
}

type instantiateView struct {
	Last  float64 `json:"last"`
	Max   float64 `json:"max"`
	Count uint64  `json:"count"`
}

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func viewPlugin(p *storage.Plugin) pluginView {
	return pluginView{ID: p.ID, Object: "plugin", WorkspaceID: p.WorkspaceID, SHA256: p.SHA256, Size: p.Size,
		CreatedAt: p.CreatedAt.UTC().Format(time.RFC3339), UpdatedAt: p.UpdatedAt.UTC().Format(time.RFC3339),
		LoadError: p.LoadError}
}

// viewPluginFigures is viewPlugin with the engine's figures of the stored module, when the engine serves that module.
func (s *Server) viewPluginFigures(p *storage.Plugin) pluginView {
	v := viewPlugin(p)
	if s.pluginStats == nil {
		return v
	}
	st, ok := s.pluginStats.Stats(p.WorkspaceID, p.ID)
	if !ok || st.SHA256 != p.SHA256 {
		return v
	}
	compile := millis(st.Compile)
	v.CompileMS = &compile
	if st.CompileCache == plugins.CacheHit || st.CompileCache == plugins.CacheMiss {
		hit := st.CompileCache == plugins.CacheHit
		v.CompiledFromCache = &hit
	}
	v.InstantiateMS = &instantiateView{Last: millis(st.InstantiateLast), Max: millis(st.InstantiateMax), Count: st.Instantiations}
	return v
}

// putPlugin answers PUT /v1/plugins/:id with the module's bytes as the body (application/wasm or
// application/octet-stream): the module is validated and loaded, then stored, then swapped in for the
// workspace. A module that does not load (400) or does not fit the workspace's bounds (409) is not stored,
// and the plugin's previous module keeps serving. Admin only.
func (s *Server) putPlugin(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	p, err := s.plane.PutPlugin(c.UserContext(), caller, strings.Clone(c.Params("id")), func() ([]byte, error) {
		mt, _, _ := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
		if mt != "application/wasm" && mt != "application/octet-stream" {
			return nil, &gwerr.Error{Status: fiber.StatusUnsupportedMediaType, Code: gwerr.CodeUnsupportedMediaType, Param: "content-type",
				Message: "send the module's bytes as application/wasm (or application/octet-stream)"}
		}
		return append([]byte(nil), c.Body()...), nil
	})
	if err != nil {
		return err
	}
	return c.JSON(s.viewPluginFigures(p))
}

// listPlugins answers GET /v1/plugins: the caller's workspace's plugins. Admin only.
func (s *Server) listPlugins(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	list, err := s.plane.ListPlugins(c.UserContext(), caller)
	if err != nil {
		return err
	}
	return pagedList(c, list, func(p *storage.Plugin) string { return p.ID }, s.viewPluginFigures)
}

// deletePlugin answers DELETE /v1/plugins/:id: the plugin is unloaded and deleted. Admin only.
func (s *Server) deletePlugin(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	id := strings.Clone(c.Params("id"))
	if err := s.plane.DeletePlugin(c.UserContext(), caller, id); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": id, "object": "plugin", "deleted": true})
}
