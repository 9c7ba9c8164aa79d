package mcpgw

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmgw/gateway/storage"
)

// The resources and prompts of the workspace's servers, under the naming rule of tools: a prompt is
// "<serverId>__<name>", a resource's URI and a template's URI template are "<serverId>__<uri>". A caller
// expands a template with the prefix in front, and the gateway strips it.

// anyName lets every bare name through: allow_tools and deny_tools are about tools only.
func anyName(*storage.MCPServer, string) bool { return true }

// prefixed names something of srv in the aggregated lists.
func prefixed(srv *storage.MCPServer, name string) string { return srv.ID + toolSeparator + name }

// offers reports whether the server declared the capability: a server without it is not asked.
func offers(session *mcp.ClientSession, capability func(*mcp.ServerCapabilities) bool) bool {
	init := session.InitializeResult()
	return init != nil && init.Capabilities != nil && capability(init.Capabilities)
}

func hasResources(c *mcp.ServerCapabilities) bool { return c.Resources != nil }
func hasPrompts(c *mcp.ServerCapabilities) bool   { return c.Prompts != nil }

// listResources is every server's resources, their URIs prefixed. No cursor: the whole list, bounded.
func (g *Gateway) listResources(ctx context.Context, workspaceID string) (*mcp.ListResourcesResult, error) {
	resources, err := fromEachServer(ctx, g, workspaceID, "resources/list", func(ctx context.Context, srv *storage.MCPServer, session *mcp.ClientSession) ([]*mcp.Resource, error) {
		if !offers(session, hasResources) {
			return nil, nil
		}
		return take(g, srv, "resources", MaxListedPerServer, pages(g, srv, "resources", func(cursor string) ([]*mcp.Resource, string, error) {
			res, err := session.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return res.Resources, res.NextCursor, nil
		}), func(r *mcp.Resource) *mcp.Resource {
			renamed := *r
			renamed.URI = prefixed(srv, r.URI)
			return &renamed
		})
	})
	if err != nil {
		return nil, err
	}
	return &mcp.ListResourcesResult{Resources: resources, Cacheable: perWorkspace}, nil
}

// listResourceTemplates is every server's resource templates, their URI templates prefixed.
func (g *Gateway) listResourceTemplates(ctx context.Context, workspaceID string) (*mcp.ListResourceTemplatesResult, error) {
	templates, err := fromEachServer(ctx, g, workspaceID, "resources/templates/list", func(ctx context.Context, srv *storage.MCPServer, session *mcp.ClientSession) ([]*mcp.ResourceTemplate, error) {
		if !offers(session, hasResources) {
			return nil, nil
		}
		return take(g, srv, "resource templates", MaxListedPerServer, pages(g, srv, "resource templates", func(cursor string) ([]*mcp.ResourceTemplate, string, error) {
			res, err := session.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return res.ResourceTemplates, res.NextCursor, nil
		}), func(t *mcp.ResourceTemplate) *mcp.ResourceTemplate {
			renamed := *t
			renamed.URITemplate = prefixed(srv, t.URITemplate)
			return &renamed
		})
	})
	if err != nil {
		return nil, err
	}
	return &mcp.ListResourceTemplatesResult{ResourceTemplates: templates, Cacheable: perWorkspace}, nil
}

// listPrompts is every server's prompts, their names prefixed.
func (g *Gateway) listPrompts(ctx context.Context, workspaceID string) (*mcp.ListPromptsResult, error) {
	prompts, err := fromEachServer(ctx, g, workspaceID, "prompts/list", func(ctx context.Context, srv *storage.MCPServer, session *mcp.ClientSession) ([]*mcp.Prompt, error) {
		if !offers(session, hasPrompts) {
			return nil, nil
		}
		return take(g, srv, "prompts", MaxListedPerServer, pages(g, srv, "prompts", func(cursor string) ([]*mcp.Prompt, string, error) {
			res, err := session.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			return res.Prompts, res.NextCursor, nil
		}), func(p *mcp.Prompt) *mcp.Prompt {
			renamed := *p
			renamed.Name = prefixed(srv, p.Name)
			return &renamed
		})
	})
	if err != nil {
		return nil, err
	}
	return &mcp.ListPromptsResult{Prompts: prompts, Cacheable: perWorkspace}, nil
}

// readResource sends the bare URI to its server, once, and prefixes the URIs of the contents it answers, so
// that they name what the caller can read. A URI of no server of the workspace reaches none.
func (g *Gateway) readResource(ctx context.Context, workspaceID string, params *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	if params == nil || params.URI == "" {
		return nil, invalidParams("resources/read needs a uri")
	}
	srv, uri, err := g.resolvePrefixed(workspaceID, params.URI, anyName)
	if err != nil {
		return nil, fmt.Errorf("mcpgw: find server: %w", err)
	}
	if srv == nil {
		return nil, invalidParams(fmt.Sprintf("unknown resource %q: a uri is <serverId>__<uri>", clipName(params.URI)))
	}
	forwarded := *params
	forwarded.Meta, forwarded.URI = nil, uri // the caller's _meta (its progress token) is for the gateway
	res, err := onServer(ctx, g, srv, func(ctx context.Context, session *mcp.ClientSession) (*mcp.ReadResourceResult, error) {
		return session.ReadResource(ctx, &forwarded)
	})
	if err != nil {
		return nil, err
	}
	renamed := *res
	renamed.Contents = make([]*mcp.ResourceContents, 0, len(res.Contents))
	for _, c := range res.Contents {
		if c == nil {
			continue
		}
		content := *c
		if content.URI != "" {
			content.URI = prefixed(srv, content.URI)
		}
		renamed.Contents = append(renamed.Contents, &content)
	}
	return &renamed, nil
}

// getPrompt sends the bare name and the arguments to its server, once.
func (g *Gateway) getPrompt(ctx context.Context, workspaceID string, params *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	if params == nil || params.Name == "" {
		return nil, invalidParams("prompts/get needs a name")
	}
	srv, name, err := g.resolvePrefixed(workspaceID, params.Name, anyName)
	if err != nil {
		return nil, fmt.Errorf("mcpgw: find server: %w", err)
	}
	if srv == nil {
		return nil, invalidParams(fmt.Sprintf("unknown prompt %q: a prompt is <serverId>__<name>", clipName(params.Name)))
	}
	forwarded := *params
	forwarded.Meta, forwarded.Name = nil, name
	return onServer(ctx, g, srv, func(ctx context.Context, session *mcp.ClientSession) (*mcp.GetPromptResult, error) {
		return session.GetPrompt(ctx, &forwarded)
	})
}

// onServer runs one request on a session of srv's, within Options.CallTimeout. An error the server answers
// is passed on as it is; a failure of the server is an error that names it.
func onServer[T any](ctx context.Context, g *Gateway, srv *storage.MCPServer, do func(context.Context, *mcp.ClientSession) (T, error)) (T, error) {
	var none T
	ctx, cancel := context.WithTimeout(ctx, g.callTimeout)
	defer cancel()
	res, err := withPooledSession(ctx, g, srv, do)
	if err == nil {
		return res, nil
	}
	if rpcErr := answeredError(err); rpcErr != nil {
		return none, rpcErr
	}
	if ctx.Err() != nil {
		return none, ctx.Err()
	}
	err = hideURL(err, srv.URL)
	g.log.Warn("MCP request failed upstream", "mcp_server", srv.ID, "err", err)
	return none, fmt.Errorf("MCP server %s failed: %v", srv.ID, err)
}
