package routes

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/mcpgw"
	"github.com/llmgw/gateway/runtime/gwerr"
)

// mcpRoutes serves /mcp, the MCP endpoint (package mcpgw), to callers with a gateway key. Its answers are
// event streams, relayed as they are written (serveStreaming), not buffered as fiber's adaptor would.
func (s *Server) mcpRoutes() {
	s.app.All("/mcp", s.authenticateMCP, func(c *fiber.Ctx) error {
		if n := len(c.Body()); n > mcpgw.MaxRequestBytes { // limitBody refused it already; a body set otherwise
			return mcpBodyTooLarge(n)
		}
		key := callerKey(c)
		metadata, err := readMetadata(c)
		if err != nil {
			return err
		}
		caller := &mcpgw.Caller{WorkspaceID: key.WorkspaceID, APIKeyID: key.ID, Metadata: metadata,
			Config: configTexts.intern(strings.TrimSpace(c.Get(HeaderConfig))), TraceID: ensureTraceID(c)}
		return s.serveStreaming(c, func(w http.ResponseWriter, r *http.Request) { // mcpstream.go
			s.mcp.Serve(w, r, caller)
		})
	})
}

// mcpBodyTooLarge is the 413 of an MCP request body past mcpgw.MaxRequestBytes; n is its length, -1 when
// unknown (a chunked body, refused once the limit is passed).
func mcpBodyTooLarge(n int) error {
	msg := fmt.Sprintf("an MCP request body holds at most %d bytes", mcpgw.MaxRequestBytes)
	if n >= 0 {
		msg += fmt.Sprintf("; this one has %d", n)
	}
	return &gwerr.Error{Status: fiber.StatusRequestEntityTooLarge, Code: gwerr.CodeRequestTooLarge, Param: "body", Message: msg}
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
