package mcpgw

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmgw/gateway/storage"
)

// Lists sent in parallel by one workspace run at most ListsPerWorkspace at once against its servers; the rest
// wait their turn and then answer.
func TestListsPerWorkspaceBounded(t *testing.T) {
	var running, most atomic.Int32
	gate := make(chan struct{})
	server := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				n := running.Add(1)
				defer running.Add(-1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				<-gate
			}
			return next(ctx, method, req)
		}
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer up.Close()
	reg := &registry{}
	reg.add(&storage.MCPServer{ID: "slow", WorkspaceID: "ws-one", URL: up.URL})
	front := newFront(t, reg)

	const lists = ListsPerWorkspace + 4
	var wg sync.WaitGroup
	results := make(chan int, lists)
	for range lists {
		cs := connect(t, front, "gw-key-one-5d1f")
		wg.Go(func() {
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Error(err)
				return
			}
			results <- len(res.Tools)
		})
	}
	waitUntil(t, func() bool { return running.Load() == ListsPerWorkspace })
	close(gate)
	wg.Wait()
	close(results)
	for n := range results {
		if n != 1 {
			t.Errorf("a list answered %d tools, want 1", n)
		}
	}
	if m := most.Load(); m > ListsPerWorkspace {
		t.Errorf("%d lists ran at once, want at most %d", m, ListsPerWorkspace)
	}
}
