package routes

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmgw/gateway/mcpgw"
	"github.com/llmgw/gateway/storage"
)

// /mcp through the whole gateway against a hostile caller: a body past mcpgw.MaxRequestBytes is refused
// before it is copied, a batch past mcpgw.MaxBatchMessages reaches no server, GET is 405 with Allow, and
// another workspace's key can neither use nor close a session.
func TestMCPHostileRequests(t *testing.T) {
	f := newFixture(t, Options{})
	var calls atomic.Int32
	url, _ := mcpUpstream(t, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		calls.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	if _, err := f.store.MCPServers.Put(&storage.MCPServer{ID: "up", WorkspaceID: f.ws.ID, URL: url}); err != nil {
		t.Fatal(err)
	}
	f.serve(t)
	mcpHeaders := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream", HeaderAPIKey, f.plain}

	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", mcpgw.MaxRequestBytes) + `"}}`
	checkError(t, f.do(t, "POST", "/mcp", big, mcpHeaders...), 413, "request_too_large", "body")

	init := f.do(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`, mcpHeaders...)
	session := init.header.Get("Mcp-Session-Id")
	if init.status != 200 || session == "" {
		t.Fatalf("initialize: %d %s", init.status, init.body)
	}
	onSession := append(slices.Clone(mcpHeaders), "Mcp-Session-Id", session)
	f.do(t, "POST", "/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, onSession...)
	var batch []string
	for i := range mcpgw.MaxBatchMessages + 1 {
		batch = append(batch, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__add","arguments":{}}}`, i+10))
	}
	checkError(t, f.do(t, "POST", "/mcp", "["+strings.Join(batch, ",")+"]", onSession...), 400, "batch_too_large", "body")
	if n := calls.Load(); n != 0 {
		t.Errorf("a refused batch made %d calls", n)
	}

	if a := f.do(t, "GET", "/mcp", "", HeaderAPIKey, f.plain, "Accept", "text/event-stream", "Mcp-Session-Id", session); a.status != 405 ||
		a.header.Get("Allow") == "" {
		t.Errorf("GET: %d, Allow %q", a.status, a.header.Get("Allow"))
	}

	foreign := []string{HeaderAPIKey, f.otherKey, "Mcp-Session-Id", session, "Content-Type", "application/json",
		"Accept", "application/json, text/event-stream"}
	if a := f.do(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, foreign...); a.status != 403 {
		t.Errorf("another workspace's key on the session: %d %s", a.status, a.body)
	}
	if a := f.do(t, "DELETE", "/mcp", "", foreign...); a.status != 403 {
		t.Errorf("DELETE with another workspace's key: %d %s", a.status, a.body)
	}
	if a := f.do(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, onSession...); a.status != 200 ||
		!strings.Contains(string(a.body), "up__add") {
		t.Errorf("the session after a foreign DELETE: %d %s", a.status, a.body)
	}
	if a := f.do(t, "DELETE", "/mcp", "", onSession...); a.status != 204 {
		t.Errorf("DELETE by its owner: %d %s", a.status, a.body)
	}
}
