package routes

import (
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"

	"github.com/llmgw/gateway/mcpgw"
	"github.com/llmgw/gateway/runtime/gwerr"
)

// mcpRoutes serves /mcp, the MCP endpoint (package mcpgw), to callers with a gateway key. The adaptor buffers
// the whole answer, which mcpgw allows for: it answers in JSON, never with an event stream.
func (s *Server) mcpRoutes() {
	s.app.All("/mcp", s.authenticateMCP, func(c *fiber.Ctx) error {
		key := callerKey(c)
		metadata, err := readMetadata(c)
		if err != nil {
			return err
		}
		caller := &mcpgw.Caller{WorkspaceID: key.WorkspaceID, APIKeyID: key.ID, Metadata: metadata,
			Config: configTexts.intern(strings.TrimSpace(c.Get(HeaderConfig))), TraceID: ensureTraceID(c)}
		return adaptor.HTTPHandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.mcp.Serve(w, r, caller)
		})(c)
	})
}

// authenticateMCP is authenticate for MCP clients, which send their key as a bearer token more often than in
// x-gateway-api-key: the token moves to x-gateway-api-key and authenticate judges it. Neither header reaches an
// upstream server (mcpgw builds its own requests).
func (s *Server) authenticateMCP(c *fiber.Ctx) error {
	if c.Get(HeaderAPIKey) == "" {
		token, bearer := bearerToken(c.Get(fiber.HeaderAuthorization))
		if !bearer || token == "" {
			return &gwerr.Error{Status: fiber.StatusUnauthorized, Code: gwerr.CodeMissingAPIKey, Param: HeaderAPIKey,
				Message: "missing gateway API key: send it in the x-gateway-api-key header or as Authorization: Bearer <key>"}
		}
		c.Request().Header.Set(HeaderAPIKey, strings.Clone(token))
	}
	return s.authenticate(c)
}
