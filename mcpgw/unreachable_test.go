package mcpgw

import (
	"net"
	"strings"
	"testing"

	"github.com/llmgw/gateway/storage"
)

// A server that cannot be reached is the call's tool error naming it, not a JSON-RPC error: the SDK's client
// wraps transport failures in a JSON-RPC error of its own, which must not pass for the server's answer.
func TestUnreachableServerIsAToolError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	reg := &registry{}
	reg.add(&storage.MCPServer{ID: "gone", WorkspaceID: "ws-one", URL: "http://" + addr + "/mcp?token=secret-q"})
	cs := connect(t, newFront(t, reg), "gw-key-one-5d1f")
	res, err := call(t, cs, "gone__anything", map[string]int{"n": 1})
	if err != nil {
		t.Fatalf("JSON-RPC error for an unreachable server: %v", err)
	}
	if !res.IsError || !strings.Contains(text(res), "MCP server gone failed") || strings.Contains(text(res), "secret-q") {
		t.Errorf("result: %+v %q", res, text(res))
	}
}
