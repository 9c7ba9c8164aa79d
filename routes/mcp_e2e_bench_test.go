package routes

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmgw/gateway/storage"
)

// BenchmarkMCPToolCall is one tools/call of an SDK client on an open session, straight to an upstream SDK
// server ("direct") and through the gateway's /mcp ("gateway": the streaming bridge, the SDK server, the
// interceptor, and a new upstream session per call). All on loopback; the difference is the gateway's cost.
func BenchmarkMCPToolCall(b *testing.B) {
	upstream := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	upstream.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return upstream }, nil))
	defer up.Close()
	f := newFixture(b, Options{})
	if _, err := f.store.MCPServers.Put(&storage.MCPServer{ID: "up", WorkspaceID: f.ws.ID, URL: up.URL}); err != nil {
		b.Fatal(err)
	}
	base, _ := f.serve(b)
	ctx := context.Background()
	for _, bc := range []struct{ name, endpoint, tool, key string }{
		{"direct", up.URL, "echo", ""}, {"gateway", base + "/mcp", "up__echo", f.plain},
	} {
		b.Run(bc.name, func(b *testing.B) {
			client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: bc.endpoint,
				HTTPClient: &http.Client{Transport: headerTransport{key: bc.key}}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			args := map[string]string{"q": "hello"}
			b.ReportAllocs()
			for b.Loop() {
				if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: bc.tool, Arguments: args}); err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		})
	}
}
