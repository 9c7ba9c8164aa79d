package routes

import (
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/runtime/netguard"
	"github.com/llmgw/gateway/storage"
)

// The registry of upstream MCP servers of the caller's workspace, at /v1/mcp-servers. Admin keys only. A server
// reads back as the bootstrap item it was made from, with its url's userinfo redacted and its header values
// masked ("…" and the last four characters), plus object, workspace_id and its stamps; the operations are
// control.Plane's (control/mcpservers.go).

// mcpServerRoutes registers the endpoints of this file under /v1.
func (s *Server) mcpServerRoutes(v1 fiber.Router) {
	v1.Get("/mcp-servers", adminList(adminCaller, s.plane.ListMCPServers, viewMCPServer)) // ordered by id
	v1.Post("/mcp-servers", s.createMCPServer)
	v1.Get("/mcp-servers/:id", adminOne("id", s.plane.GetMCPServer, viewMCPServer))
	v1.Put("/mcp-servers/:id", s.replaceMCPServer)
	v1.Delete("/mcp-servers/:id", s.deleteMCPServer)
}

// mcpServerView is an MCP server as the endpoints show it. Header values never appear.
type mcpServerView struct {
	Object      string            `json:"object"`
	ID          string            `json:"id"`
	WorkspaceID string            `json:"workspace_id"`
	URL         string            `json:"url"`
	Headers     map[string]string `json:"headers"`
	AllowTools  []string          `json:"allow_tools"`
	DenyTools   []string          `json:"deny_tools"`
	CostPerCall float64           `json:"cost_per_call"` // USD per forwarded tools/call; 0 when free
	CreatedAt   string            `json:"created_at"`
	UpdatedAt   string            `json:"updated_at"`
}

func viewMCPServer(srv *storage.MCPServer) mcpServerView {
	v := mcpServerView{Object: "mcp_server", ID: srv.ID, WorkspaceID: srv.WorkspaceID, URL: netguard.RedactURL(srv.URL),
		Headers: control.MaskMCPHeaders(srv), AllowTools: srv.AllowTools, DenyTools: srv.DenyTools, CostPerCall: srv.CostPerCall,
		CreatedAt: srv.CreatedAt.UTC().Format(time.RFC3339), UpdatedAt: srv.UpdatedAt.UTC().Format(time.RFC3339)}
	if v.AllowTools == nil { // the lists read as [] rather than null, so that clients need not tell them apart
		v.AllowTools = []string{}
	}
	if v.DenyTools == nil {
		v.DenyTools = []string{}
	}
	return v
}

// createMCPServer answers POST /v1/mcp-servers with a bootstrap "mcp_servers" item without "workspace".
func (s *Server) createMCPServer(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	body, err := rawBody(c)
	if err != nil {
		return err
	}
	srv, err := s.plane.CreateMCPServer(c.UserContext(), caller, body)
	if err != nil {
		return err
	}
	return c.JSON(viewMCPServer(srv))
}

// replaceMCPServer answers PUT /v1/mcp-servers/:id: the body (as POST's; id optional) replaces the server.
func (s *Server) replaceMCPServer(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	body, err := rawBody(c)
	if err != nil {
		return err
	}
	srv, err := s.plane.ReplaceMCPServer(c.UserContext(), caller, strings.Clone(c.Params("id")), body)
	if err != nil {
		return err
	}
	return c.JSON(viewMCPServer(srv))
}

// deleteMCPServer answers DELETE /v1/mcp-servers/:id.
func (s *Server) deleteMCPServer(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	id := strings.Clone(c.Params("id"))
	if err := s.plane.DeleteMCPServer(c.UserContext(), caller, id); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": id, "object": "mcp_server", "deleted": true})
}
