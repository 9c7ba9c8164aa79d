package routes

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmgw/gateway/mcpgw"
	"github.com/llmgw/gateway/reqlog"
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

// BenchmarkToolCallInterceptHuge is one call with 4 MiB of arguments and a 16 MiB result (the bounds of
// mcpgw), through the toolHooksConfig hooks, into a request log that keeps no bodies (the default).
func BenchmarkToolCallInterceptHuge(b *testing.B) {
	f := newFixture(b, Options{})
	f.srv.logs = reqlog.New(f.store.Logs, reqlog.Options{FlushWindow: time.Millisecond})
	b.Cleanup(func() { f.srv.logs.Close() })
	srv := &storage.MCPServer{ID: "files", WorkspaceID: f.ws.ID, URL: "http://127.0.0.1:1/mcp"}
	result := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("contents ", (16<<20)/9)}}}
	forward := func(context.Context, json.RawMessage) (*mcp.CallToolResult, error) { return result, nil }
	caller := &mcpgw.Caller{WorkspaceID: f.ws.ID, APIKeyID: "k", Config: toolHooksConfig, TraceID: "t"}
	call := &mcpgw.ToolCall{Caller: caller, Server: srv, Tool: "read_file", Name: "files__read_file",
		Arguments: json.RawMessage(`{"blob":"` + strings.Repeat("a", 4<<20) + `"}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.srv.interceptToolCall(ctx, call, forward); err != nil {
			b.Fatal(err)
		}
	}
}
