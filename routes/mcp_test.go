package routes

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmgw/gateway/storage"
)

// bearerTransport sends a gateway key as MCP clients do, in Authorization, and records nothing else.
type bearerTransport struct{ key string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// /mcp through the whole gateway: a key is required, as a bearer token or in x-gateway-api-key; the tools of
// the key's workspace's server are listed and called, with the server's stored header and never the key.
func TestMCPEndpoint(t *testing.T) {
	f := newFixture(t, Options{})
	var mu sync.Mutex
	var seen []http.Header
	upstream := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	upstream.AddTool(&mcp.Tool{Name: "ping", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong " + string(req.Params.Arguments)}}}, nil
		})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return upstream }, nil)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		sdk.ServeHTTP(w, r)
	}))
	defer up.Close()
	if _, err := f.store.MCPServers.Put(&storage.MCPServer{ID: "up", WorkspaceID: f.ws.ID, URL: up.URL,
		Headers: map[string]string{"Authorization": "Bearer upstream-token-91"}}); err != nil {
		t.Fatal(err)
	}
	base, _ := f.serve(t)

	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	mcpHeaders := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}
	for _, tc := range []struct {
		headers []string
		code    string
	}{{nil, "missing_api_key"}, {[]string{"Authorization", "Bearer nope"}, "invalid_api_key"},
		{[]string{"Authorization", "Basic " + f.plain}, "missing_api_key"}} {
		a := f.do(t, "POST", "/mcp", initialize, append(slices.Clone(mcpHeaders), tc.headers...)...)
		checkError(t, a, 401, tc.code, HeaderAPIKey)
	}
	if a := f.do(t, "POST", "/mcp", initialize, append(slices.Clone(mcpHeaders), HeaderAPIKey, f.plain)...); a.status != 200 ||
		a.header.Get("Mcp-Session-Id") == "" || !strings.Contains(string(a.body), `"protocolVersion":"2025-06-18"`) {
		t.Errorf("initialize with x-gateway-api-key: %d %s", a.status, a.body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	connect := func(key string) *mcp.ClientSession {
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp",
			HTTPClient: &http.Client{Transport: bearerTransport{key}}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	cs := connect(f.plain)
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "up__ping" {
		t.Fatalf("tools: %v, %+v", err, tools)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__ping", Arguments: map[string]int{"n": 1}})
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != `pong {"n":1}` {
		t.Errorf("call: %v, %+v", err, res)
	}
	if tools, err := connect(f.otherKey).ListTools(ctx, nil); err != nil || len(tools.Tools) != 0 {
		t.Errorf("other workspace's tools: %v, %+v", err, tools)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, h := range seen {
		if h.Get("Authorization") != "Bearer upstream-token-91" {
			t.Errorf("upstream Authorization %q", h.Get("Authorization"))
		}
		for name, v := range h {
			if strings.Contains(strings.Join(v, ","), f.plain) || strings.HasPrefix(name, "X-Gateway") {
				t.Errorf("upstream got %s: %v", name, v)
			}
		}
	}
}
