package routes

import (
	"mime"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// Wasm plugins of the caller's workspace (admin keys only); the operations, and the unloading and cache
// invalidation a delete needs, are control.Plane's.

// PluginHost is what the plugin endpoints need of the wasm engine; see control.PluginHost.
type PluginHost = control.PluginHost

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
	return c.JSON(viewPlugin(p))
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
	return pagedList(c, list, func(p *storage.Plugin) string { return p.ID }, viewPlugin)
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
