package routes

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmgw/gateway/mcpgw"
	"github.com/llmgw/gateway/storage"
)

// BenchmarkToolCallIntercept is the gateway's own work around one MCP tool call (the upstream answers at once):
// config lookup, policies, hooks, the log entry and the metrics. "bare" has no config; "hooks" runs the
// toolHooksConfig (a contains check before, a regexReplace after).
func BenchmarkToolCallIntercept(b *testing.B) {
	f := newFixture(b, Options{})
	srv := &storage.MCPServer{ID: "files", WorkspaceID: f.ws.ID, URL: "http://127.0.0.1:1/mcp"}
	result := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "contents: card 4111-1111-1111-1111"}}}
	forward := func(context.Context, json.RawMessage) (*mcp.CallToolResult, error) { return result, nil }
	for _, bc := range []struct{ name, config string }{{"bare", ""}, {"hooks", toolHooksConfig}} {
		b.Run(bc.name, func(b *testing.B) {
			caller := &mcpgw.Caller{WorkspaceID: f.ws.ID, APIKeyID: "k", Config: bc.config, TraceID: "t"}
			call := &mcpgw.ToolCall{Caller: caller, Server: srv, Tool: "read_file", Name: "files__read_file",
				Arguments: json.RawMessage(`{"path":"/tmp/a"}`)}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.srv.interceptToolCall(ctx, call, forward); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
