package bootstrap

import (
	"context"
	"errors"
	"strings"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// MCPServer is an entry of "mcp_servers": an upstream MCP server of a workspace.
type MCPServer struct {
	Path      string
	Workspace string
	Server    *storage.MCPServer // ID, URL, Headers (canonical names), AllowTools, DenyTools; no workspace or times
}

// parseMCPServer reads an entry of "mcp_servers": its workspace, and the rest as the admin API reads a body
// (control.ReadMCPServer), so that both accept and refuse the same things. The url's address policy, which is
// the gateway's, is checked by Apply (checkMCPServers).
func parseMCPServer(o *object) MCPServer {
	m := MCPServer{Path: o.Path, Server: control.ReadMCPServer(o), Workspace: workspaceRef(o)}
	o.Finish()
	return m
}

// checkMCPServers checks every entry as the plane will write it, address policy included, before anything is
// written: a problem names the entry's field.
func checkMCPServers(ctx context.Context, plane Plane, f *File, p *problems) {
	for _, x := range f.MCPServers {
		cp := *x.Server
		err := plane.CheckMCPServer(ctx, &cp)
		var ge *gwerr.Error
		switch {
		case err == nil:
		case errors.As(err, &ge) && ge.Param != "":
			p.Add(x.Path+"."+ge.Param, "%s", strings.TrimPrefix(ge.Message, "invalid MCP server: "+ge.Param+": "))
		default:
			p.Add(x.Path, "%v", err)
		}
	}
}
