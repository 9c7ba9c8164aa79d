package mcpgw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmgw/gateway/storage"
)

// ToolCall is one tools/call that names a tool the workspace offers, about to be forwarded.
type ToolCall struct {
	Caller *Caller
	Server *storage.MCPServer
	// Tool is the bare name the server knows; Name is the one the caller used ("<server>__<tool>").
	Tool, Name string
	// Arguments is the call's arguments as the caller sent them (a JSON object, or empty for none).
	Arguments json.RawMessage
}

// Forward sends a call to its server once, with arguments (the call's own, or ones a hook rewrote), and returns
// the server's result. A server that fails (unreachable, gone mid-call) is an *UpstreamError, which the caller
// gets as a tool error; an error the server answers is a *jsonrpc.Error; a cancelled or timed-out call is the
// context's error.
type Forward func(ctx context.Context, arguments json.RawMessage) (*mcp.CallToolResult, error)

// UpstreamError is a server that could not be reached or failed mid-call (Err has no credentials or URL
// query). callTool answers it as the call's tool error, so that the agent reads it and the session goes on.
type UpstreamError struct {
	Server string
	Err    error
}

func (e *UpstreamError) Error() string {
	return fmt.Sprintf("MCP server %s failed: %v", e.Server, e.Err)
}

func (e *UpstreamError) Unwrap() error { return e.Err }

// result is the tool error the caller gets.
func (e *UpstreamError) result() *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: e.Error()}}}
}

// Interceptor wraps every tools/call that names an offered tool: rate limits, guardrails, the request log and
// metrics live there (routes wires them). It calls forward at most once; it may answer without calling it (a
// refused call), change the arguments it forwards, and change the result it returns.
type Interceptor func(ctx context.Context, call *ToolCall, forward Forward) (*mcp.CallToolResult, error)

// clipName keeps a caller's name fit for an error message, which echoes it.
func clipName(name string) string {
	const max = 160
	if len(name) <= max {
		return name
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return name[:cut] + "…"
}

// callTool resolves the prefixed name to its server and forwards the call through the Interceptor. A name that
// matches no offered tool reaches no server and no Interceptor: it is the caller's JSON-RPC error.
func (g *Gateway) callTool(ctx context.Context, caller *Caller, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	params := req.Params
	srv, tool, err := g.resolve(caller.WorkspaceID, params.Name)
	if err != nil {
		return nil, fmt.Errorf("mcpgw: find server: %w", err)
	}
	if srv == nil || !g.listsTool(ctx, srv, tool) {
		return nil, invalidParams(fmt.Sprintf("unknown tool %q: params.name must be a name tools/list gives", clipName(params.Name)))
	}
	forwarded := false
	forward := func(ctx context.Context, arguments json.RawMessage) (*mcp.CallToolResult, error) {
		if forwarded { // DESIGN.md: a call reaches its server once
			return nil, errors.New("mcpgw: a tool call is forwarded once")
		}
		forwarded = true
		return g.forward(ctx, req, srv, tool, arguments)
	}
	var res *mcp.CallToolResult
	if g.intercept == nil {
		res, err = forward(ctx, params.Arguments)
	} else {
		res, err = g.intercept(ctx, &ToolCall{Caller: caller, Server: srv, Tool: tool, Name: params.Name,
			Arguments: params.Arguments}, forward)
	}
	var upstream *UpstreamError
	if errors.As(err, &upstream) {
		return upstream.result(), nil
	}
	return res, err
}
