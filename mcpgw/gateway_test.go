package mcpgw

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmgw/gateway/storage"
)

// wait bounds the tests' waits for an event that must come; it is a guard against hangs, never a measure.
const wait = 30 * time.Second

// registry is an in-memory Registry.
type registry struct {
	mu      sync.Mutex
	servers map[string][]*storage.MCPServer // by workspace
}

func (r *registry) add(srv *storage.MCPServer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.servers == nil {
		r.servers = map[string][]*storage.MCPServer{}
	}
	r.servers[srv.WorkspaceID] = append(r.servers[srv.WorkspaceID], srv)
}

func (r *registry) Get(ws, id string) (*storage.MCPServer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.servers[ws] {
		if s.ID == id {
			return s, nil
		}
	}
	return nil, storage.ErrNotFound
}

func (r *registry) List(ws string) ([]*storage.MCPServer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.servers[ws]), nil
}

// upstream is an MCP server of the go-sdk on 127.0.0.1 that records what reaches it.
type upstream struct {
	srv *httptest.Server

	mu      sync.Mutex
	headers []http.Header     // every HTTP request's
	calls   []string          // tools/call names
	args    []json.RawMessage // tools/call arguments

	deletes chan struct{} // a value for each DELETE (a session closed by the gateway), when there is room
}

func (u *upstream) callCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.calls)
}

// newUpstream serves tools that echo their name and arguments; handlers may replace a tool's behaviour.
func newUpstream(t *testing.T, tools []string, handlers map[string]mcp.ToolHandler) *upstream {
	t.Helper()
	u := &upstream{deletes: make(chan struct{}, 64)}
	server := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	for _, name := range tools {
		server.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				u.mu.Lock()
				u.calls = append(u.calls, req.Params.Name)
				u.args = append(u.args, slices.Clone(req.Params.Arguments))
				u.mu.Unlock()
				if h := handlers[name]; h != nil {
					return h(ctx, req)
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + ":" + string(req.Params.Arguments)}}}, nil
			})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.headers = append(u.headers, r.Header.Clone())
		u.mu.Unlock()
		h.ServeHTTP(w, r)
		if r.Method == http.MethodDelete {
			select {
			case u.deletes <- struct{}{}:
			default:
			}
		}
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// keys maps the test's gateway keys to workspaces, as the HTTP front does.
var keys = map[string]string{"gw-key-one-5d1f": "ws-one", "gw-key-two-8c2e": "ws-two"}

// newFront serves the gateway on 127.0.0.1 behind a stand-in for the HTTP front's key check.
func newFront(t *testing.T, reg Registry) *httptest.Server {
	t.Helper()
	return newFrontWith(t, reg, Options{})
}

func newFrontWith(t *testing.T, reg Registry, opts Options) *httptest.Server {
	t.Helper()
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	g := New(reg, opts)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, ok := keys[r.Header.Get("X-Gateway-Api-Key")]
		if !ok {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		g.Serve(w, r, &Caller{WorkspaceID: ws})
	}))
	t.Cleanup(front.Close)
	return front
}

// keyTransport sends a gateway key with every request.
type keyTransport struct{ key string }

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Gateway-Api-Key", k.key)
	return http.DefaultTransport.RoundTrip(r)
}

func connect(t *testing.T, front *httptest.Server, key string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: front.URL,
		HTTPClient: &http.Client{Transport: keyTransport{key}}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "|")
}

// twoServers registers alpha (echo, secret denied) and beta (only add allowed) in ws-one, gamma in ws-two.
func twoServers(t *testing.T, handlers map[string]mcp.ToolHandler) (reg *registry, alpha, beta, gamma *upstream) {
	alpha = newUpstream(t, []string{"echo", "secret"}, handlers)
	beta = newUpstream(t, []string{"add", "sub"}, handlers)
	gamma = newUpstream(t, []string{"hidden"}, handlers)
	reg = &registry{}
	reg.add(&storage.MCPServer{ID: "alpha", WorkspaceID: "ws-one", URL: alpha.srv.URL,
		Headers: map[string]string{"Authorization": "Bearer alpha-upstream-token"}, DenyTools: []string{"secret"}})
	reg.add(&storage.MCPServer{ID: "beta", WorkspaceID: "ws-one", URL: beta.srv.URL,
		Headers: map[string]string{"X-Beta-Key": "beta-upstream-key"}, AllowTools: []string{"add"}})
	reg.add(&storage.MCPServer{ID: "gamma", WorkspaceID: "ws-two", URL: gamma.srv.URL})
	return reg, alpha, beta, gamma
}

// Lists and calls across two servers, filtered by their lists, with each server's own headers and never the
// caller's key; another workspace sees only its own server.
func TestListAndCallAcrossServers(t *testing.T) {
	reg, alpha, beta, gamma := twoServers(t, nil)
	front := newFront(t, reg)
	cs := connect(t, front, "gw-key-one-5d1f")

	if got := toolNames(t, cs); !slices.Equal(got, []string{"alpha__echo", "beta__add"}) {
		t.Errorf("ws-one tools %v", got)
	}
	res, err := call(t, cs, "alpha__echo", json.RawMessage(`{"text": "hi",  "n": 1.50}`))
	if err != nil || res.IsError || text(res) != `echo:{"text":"hi","n":1.50}` {
		t.Errorf("alpha__echo: %v, %q", err, text(res))
	}
	res, err = call(t, cs, "beta__add", map[string]int{"a": 1})
	if err != nil || res.IsError || text(res) != `add:{"a":1}` {
		t.Errorf("beta__add: %v, %+v", err, res)
	}
	if alpha.callCount() != 1 || beta.callCount() != 1 || gamma.callCount() != 0 {
		t.Errorf("calls: alpha %v, beta %v, gamma %v", alpha.calls, beta.calls, gamma.calls)
	}

	for _, u := range []struct {
		up           *upstream
		header, want string
	}{{alpha, "Authorization", "Bearer alpha-upstream-token"}, {beta, "X-Beta-Key", "beta-upstream-key"}} {
		u.up.mu.Lock()
		for _, h := range u.up.headers {
			if h.Get(u.header) != u.want {
				t.Errorf("%s: %s = %q", u.up.srv.URL, u.header, h.Get(u.header))
			}
			for name, values := range h {
				if v := strings.Join(values, ","); strings.Contains(v, "gw-key") || strings.HasPrefix(name, "X-Gateway") ||
					strings.Contains(v, "alpha-upstream") && u.up == beta || strings.Contains(v, "beta-upstream") && u.up == alpha {
					t.Errorf("%s got %s: %s", u.up.srv.URL, name, v)
				}
			}
		}
		u.up.mu.Unlock()
	}

	other := connect(t, front, "gw-key-two-8c2e")
	if got := toolNames(t, other); !slices.Equal(got, []string{"gamma__hidden"}) {
		t.Errorf("ws-two tools %v", got)
	}
	if _, err := call(t, other, "alpha__echo", map[string]any{}); err == nil {
		t.Error("ws-two called ws-one's server")
	}
	if alpha.callCount() != 1 {
		t.Errorf("alpha calls %v", alpha.calls)
	}
}

// Filtered, unknown and malformed names reach no server: a JSON-RPC invalid-params error.
func TestUnknownToolReachesNoServer(t *testing.T) {
	reg, alpha, beta, gamma := twoServers(t, nil)
	cs := connect(t, newFront(t, reg), "gw-key-one-5d1f")
	for _, name := range []string{"alpha__secret", "beta__sub", "alpha__nope", "nope__echo", "echo", "alpha__", "__echo",
		"gamma__hidden", "alpha_echo"} {
		_, err := call(t, cs, name, map[string]any{"x": 1})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
			// alpha__nope passes the lists: the server itself answers that it does not know it.
			if name != "alpha__nope" || err == nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	if beta.callCount() != 0 || gamma.callCount() != 0 || alpha.callCount() != 0 {
		t.Errorf("calls reached: alpha %v, beta %v, gamma %v", alpha.calls, beta.calls, gamma.calls)
	}
}

// A session opened by a key of one workspace is refused to a key of another.
func TestSessionBelongsToItsWorkspace(t *testing.T) {
	reg, _, _, _ := twoServers(t, nil)
	front := newFront(t, reg)
	cs := connect(t, front, "gw-key-one-5d1f")
	if cs.ID() == "" {
		t.Fatal("no session id")
	}
	post := func(key string) int {
		req, _ := http.NewRequest("POST", front.URL, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		req.Header.Set("X-Gateway-Api-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post("gw-key-two-8c2e"); got != http.StatusForbidden {
		t.Errorf("other workspace's key on the session: %d", got)
	}
	if got := post("gw-key-one-5d1f"); got != http.StatusOK {
		t.Errorf("own key on the session: %d", got)
	}
	// GET, the server-to-client stream, is not offered.
	req, _ := http.NewRequest("GET", front.URL, nil)
	req.Header.Set("X-Gateway-Api-Key", "gw-key-one-5d1f")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", resp.StatusCode)
	}
}

// A server that dies during a call fails that call with a tool error; the gateway goes on serving.
func TestServerDiesMidCall(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	// The upstream's handler outlives its connections (the SDK's session does): release lets it end, so that
	// the test server can close.
	handlers := map[string]mcp.ToolHandler{"echo": func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
		case <-release:
		}
		return nil, errors.New("released")
	}}
	reg, alpha, _, _ := twoServers(t, handlers)
	cs := connect(t, newFront(t, reg), "gw-key-one-5d1f")
	go func() {
		select {
		case <-started:
			alpha.srv.CloseClientConnections()
		case <-time.After(wait):
		}
	}()
	res, err := call(t, cs, "alpha__echo", map[string]any{})
	if err == nil && (res == nil || !res.IsError || !strings.Contains(text(res), "alpha")) {
		t.Errorf("call on a dying server: %+v", res)
	}
	close(release)
	alpha.srv.Close()
	if got := toolNames(t, cs); !slices.Equal(got, []string{"beta__add"}) {
		t.Errorf("tools after alpha died: %v", got)
	}
	if res, err := call(t, cs, "beta__add", map[string]any{}); err != nil || res.IsError {
		t.Errorf("beta__add after alpha died: %v, %+v", err, res)
	}
}

// The caller's cancellation ends the upstream handler's context.
func TestCancellationReachesUpstream(t *testing.T) {
	started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	handlers := map[string]mcp.ToolHandler{"add": func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
			cancelled <- struct{}{}
		case <-time.After(wait):
		}
		return nil, ctx.Err()
	}}
	reg, _, _, _ := twoServers(t, handlers)
	cs := connect(t, newFront(t, reg), "gw-key-one-5d1f")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "beta__add", Arguments: map[string]any{}})
		done <- err
	}()
	select {
	case <-started:
	case <-time.After(wait):
		t.Fatal("the call never reached the upstream")
	}
	cancel()
	select {
	case <-cancelled:
	case <-time.After(wait):
		t.Fatal("the upstream handler's context was not cancelled")
	}
	if err := <-done; err == nil {
		t.Error("cancelled call succeeded")
	}
}

// TestSessionsPerWorkspaceBounded: a workspace may hold SessionsPerWorkspace open sessions; one more is refused
// with 429 until one is closed, and another workspace is not held back by it.
func TestSessionsPerWorkspaceBounded(t *testing.T) {
	reg, _, _, _ := twoServers(t, nil)
	front := newFrontWith(t, reg, Options{SessionsPerWorkspace: 2})
	first := connect(t, front, "gw-key-one-5d1f")
	connect(t, front, "gw-key-one-5d1f")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	if cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: front.URL,
		HTTPClient: &http.Client{Transport: keyTransport{"gw-key-one-5d1f"}}, DisableStandaloneSSE: true, MaxRetries: -1}, nil); err == nil {
		cs.Close()
		t.Fatal("a third session of the workspace was opened past the bound of 2")
	}
	connect(t, front, "gw-key-two-8c2e") // another workspace has its own bound
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	connect(t, front, "gw-key-one-5d1f") // a closed session frees its place
}
