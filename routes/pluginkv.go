package routes

import (
	"net/url"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// The plugin key-value store of the caller's workspace, at /v1/plugin-kv: values the workspace's plugins read
// with the kv_get host function. Admin keys only. A key travels in the path, percent-encoded where it must be;
// the operations and their bounds are control.Plane's (control/pluginkv.go).

// pluginKVRoutes registers the endpoints of this file under /v1.
func (s *Server) pluginKVRoutes(v1 fiber.Router) {
	v1.Get("/plugin-kv", adminList(adminCaller, s.plane.ListPluginKV, viewPluginKVMeta)) // ordered by key, no values
	v1.Get("/plugin-kv/:key", s.getPluginKV)
	v1.Put("/plugin-kv/:key", s.putPluginKV)
	v1.Delete("/plugin-kv/:key", s.deletePluginKV)
}

// pluginKVMeta is an entry as lists and writes show it: without its value, which may be a megabyte.
type pluginKVMeta struct {
	Object    string `json:"object"`
	Key       string `json:"key"`
	Size      int    `json:"size"` // the value's length in bytes (UTF-8)
	UpdatedAt string `json:"updated_at"`
}

// pluginKVView is an entry with its value, as GET of one key shows it.
type pluginKVView struct {
	pluginKVMeta
	Value string `json:"value"`
}

func viewPluginKVMeta(e *storage.PluginKVEntry) pluginKVMeta {
	return pluginKVMeta{Object: "plugin_kv", Key: e.Key, Size: len(e.Value), UpdatedAt: e.UpdatedAt.UTC().Format(time.RFC3339)}
}

// pluginKVKey is the path's key, percent-decoded.
func pluginKVKey(c *fiber.Ctx) (string, error) {
	key, err := url.PathUnescape(c.Params("key"))
	if err != nil {
		return "", gwerr.BadRequest("key", "key: the path's percent-encoding is malformed: %v", err)
	}
	return key, nil
}

// getPluginKV answers GET /v1/plugin-kv/:key with the entry and its value.
func (s *Server) getPluginKV(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	key, err := pluginKVKey(c)
	if err != nil {
		return err
	}
	e, err := s.plane.GetPluginKV(c.UserContext(), caller, key)
	if err != nil {
		return err
	}
	return c.JSON(pluginKVView{pluginKVMeta: viewPluginKVMeta(e), Value: e.Value})
}

// putPluginKV answers PUT /v1/plugin-kv/:key, body {"value": "<string>"}: 201 when it created the key, 200
// when it replaced it.
func (s *Server) putPluginKV(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	key, err := pluginKVKey(c)
	if err != nil {
		return err
	}
	body, err := rawBody(c)
	if err != nil {
		return err
	}
	e, created, err := s.plane.PutPluginKV(c.UserContext(), caller, key, body)
	if err != nil {
		return err
	}
	if created {
		c.Status(fiber.StatusCreated)
	}
	return c.JSON(viewPluginKVMeta(e))
}

// deletePluginKV answers DELETE /v1/plugin-kv/:key.
func (s *Server) deletePluginKV(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	key, err := pluginKVKey(c)
	if err != nil {
		return err
	}
	if err := s.plane.DeletePluginKV(c.UserContext(), caller, key); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"object": "plugin_kv", "key": key, "deleted": true})
}
