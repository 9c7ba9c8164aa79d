package routes

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// mcpRoutes serves /mcp, the MCP endpoint (package mcpgw), to callers with a gateway key. The adaptor buffers
// the whole answer, which mcpgw allows for: it answers in JSON, never with an event stream.
func (s *Server) mcpRoutes() {
	s.app.All("/mcp", s.authenticateMCP, func(c *fiber.Ctx) error {
		workspaceID := callerKey(c).WorkspaceID
		return adaptor.HTTPHandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.mcp.Serve(w, r, workspaceID)
		})(c)
	})
}

// authenticateMCP is authenticate for MCP clients, which send their key as a bearer token more often than in
// x-gateway-api-key.
func (s *Server) authenticateMCP(c *fiber.Ctx) error {
	secret := c.Get(HeaderAPIKey)
	if secret == "" {
		if token, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer "); ok {
			secret = strings.TrimSpace(token)
		}
	}
	if secret == "" {
		return &gwerr.Error{Status: fiber.StatusUnauthorized, Code: gwerr.CodeMissingAPIKey, Param: HeaderAPIKey,
			Message: "missing gateway API key: send it in the x-gateway-api-key header or as Authorization: Bearer <key>"}
	}
	k, err := s.store.APIKeys.Lookup(secret)
	if errors.Is(err, storage.ErrNotFound) {
		return &gwerr.Error{Status: fiber.StatusUnauthorized, Code: gwerr.CodeInvalidAPIKey, Param: HeaderAPIKey,
			Message: "invalid gateway API key"}
	}
	if err != nil {
		return gwerr.Internal(err)
	}
	c.Locals(localAPIKey, k)
	return c.Next()
}
