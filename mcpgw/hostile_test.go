package mcpgw

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmgw/gateway/storage"
)

// post sends one raw /mcp request as a hostile caller would, and answers its status, headers and body.
func post(t *testing.T, url, key, session, body string, headers ...string) (int, http.Header, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-Gateway-Api-Key", key)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

const rawInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"%s","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`

// Concurrent initializes of one workspace open no more sessions than its bound: the count and the opening are
// one step, not a check followed by a race.
func TestConcurrentInitializesStayWithinBound(t *testing.T) {
	reg, _, _, _ := twoServers(t, nil)
	const bound = 2
	front := newFrontWith(t, reg, Options{SessionsPerWorkspace: bound})
	start := make(chan struct{})
	var opened atomic.Int32
	var wg sync.WaitGroup
	for range 24 {
		wg.Go(func() {
			<-start
			status, h, _ := post(t, front.URL, "gw-key-one-5d1f", "", fmt.Sprintf(rawInitialize, "2025-06-18"))
			if status == http.StatusOK && h.Get("Mcp-Session-Id") != "" {
				opened.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if n := opened.Load(); n > bound || n == 0 {
		t.Errorf("%d sessions opened concurrently, bound %d", n, bound)
	}
}

// A JSON-RPC batch (still accepted by the SDK for protocol 2025-03-26 and for requests that omit
// Mcp-Protocol-Version) is bounded: each of its calls may ask every server, so one request must not carry
// thousands.
func TestBatchBounded(t *testing.T) {
	reg, alpha, _, _ := twoServers(t, nil)
	front := newFront(t, reg)
	_, h, _ := post(t, front.URL, "gw-key-one-5d1f", "", fmt.Sprintf(rawInitialize, "2025-03-26"))
	session := h.Get("Mcp-Session-Id")
	post(t, front.URL, "gw-key-one-5d1f", session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	alpha.mu.Lock()
	before := len(alpha.headers)
	alpha.mu.Unlock()

	var batch []string
	for i := range MaxBatchMessages + 1 {
		batch = append(batch, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, i+10))
	}
	status, _, body := post(t, front.URL, "gw-key-one-5d1f", session, "["+strings.Join(batch, ",")+"]")
	if status != http.StatusBadRequest || !strings.Contains(body, "batch") {
		t.Errorf("batch of %d: %d %s", len(batch), status, body)
	}
	alpha.mu.Lock()
	reached := len(alpha.headers) - before
	alpha.mu.Unlock()
	if reached != 0 {
		t.Errorf("a refused batch reached a server %d times", reached)
	}
	// A small batch is still answered, as protocol 2025-03-26 requires.
	status, _, body = post(t, front.URL, "gw-key-one-5d1f", session, "["+strings.Join(batch[:2], ",")+"]")
	if status != http.StatusOK || strings.Count(body, "alpha__echo") != 2 {
		t.Errorf("batch of 2: %d %s", status, body)
	}
}

// DELETE of a session with another workspace's key is refused and leaves the session open; the owner's
// DELETE closes it; an unknown session is 404. GET is 405 with Allow.
func TestDeleteOtherWorkspacesSession(t *testing.T) {
	reg, _, _, _ := twoServers(t, nil)
	front := newFront(t, reg)
	cs := connect(t, front, "gw-key-one-5d1f")
	del := func(key, session string) int {
		req, _ := http.NewRequest("DELETE", front.URL, nil)
		req.Header.Set("X-Gateway-Api-Key", key)
		req.Header.Set("Mcp-Session-Id", session)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := del("gw-key-two-8c2e", cs.ID()); got != http.StatusForbidden {
		t.Errorf("DELETE by another workspace: %d", got)
	}
	if got := toolNames(t, cs); len(got) != 2 {
		t.Errorf("session after a foreign DELETE: %v", got)
	}
	if got := del("gw-key-one-5d1f", "no-such-session"); got != http.StatusNotFound {
		t.Errorf("DELETE of an unknown session: %d", got)
	}
	if got := del("gw-key-one-5d1f", cs.ID()); got != http.StatusNoContent {
		t.Errorf("DELETE by its owner: %d", got)
	}
	req, _ := http.NewRequest("GET", front.URL, nil)
	req.Header.Set("X-Gateway-Api-Key", "gw-key-one-5d1f")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") == "" {
		t.Errorf("GET: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

// Version negotiation: an old supported version is kept, an unknown one is answered with the gateway's own,
// and an unknown Mcp-Protocol-Version header is refused. Unknown methods and odd params are errors, never
// panics.
func TestProtocolEdges(t *testing.T) {
	reg, _, _, _ := twoServers(t, nil)
	front := newFront(t, reg)
	for _, tc := range []struct{ asked, want string }{{"2024-11-05", "2024-11-05"}, {"1999-01-01", ""}} {
		status, h, body := post(t, front.URL, "gw-key-one-5d1f", "", fmt.Sprintf(rawInitialize, tc.asked))
		if status != http.StatusOK || h.Get("Mcp-Session-Id") == "" || !strings.Contains(body, `"protocolVersion":"`+tc.want) ||
			strings.Contains(body, "1999") {
			t.Errorf("initialize %s: %d %s", tc.asked, status, body)
		}
	}
	if status, _, _ := post(t, front.URL, "gw-key-one-5d1f", "", fmt.Sprintf(rawInitialize, "2025-06-18"),
		"Mcp-Protocol-Version", "1999-01-01"); status != http.StatusBadRequest {
		t.Errorf("unknown Mcp-Protocol-Version header: %d", status)
	}

	cs := connect(t, front, "gw-key-one-5d1f")
	version := cs.InitializeResult().ProtocolVersion
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"no/such/method","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":null}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"alpha__echo","_meta":{"progressToken":{"a":[1]}}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"alpha__echo","_meta":"meta"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"alpha__echo","_meta":{"progressToken":true}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"alpha__echo","arguments":[1,2]}}`,
		`{"jsonrpc":"2.0","id":9,"method":"resources/read","params":null}`,
		`{"jsonrpc":"2.0","id":10,"method":"resources/read","params":{"uri":"alpha__%zz://\u0000"}}`,
		`{"jsonrpc":"2.0","id":11,"method":"prompts/get","params":{"name":"____"}}`,
		`{"jsonrpc":"2.0","id":12,"method":"logging/setLevel","params":{"level":"nonsense"}}`,
		`{"jsonrpc":"2.0","id":13,"method":"tools/list","params":{"cursor":{"x":1}}}`,
		`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"alpha__echo","_meta":{"progressToken":1e400}}}`,
	} {
		status, _, answer := post(t, front.URL, "gw-key-one-5d1f", cs.ID(), body, "Mcp-Protocol-Version", version)
		if status >= 500 {
			t.Errorf("%s: %d %s", body, status, answer)
		}
	}
	// The session survived all of it.
	if got := toolNames(t, cs); len(got) != 2 {
		t.Errorf("tools after the odd requests: %v", got)
	}
}

// A server that redirects the gateway elsewhere gets no redirect followed: its stored headers would reach
// the other host (the transport adds them to every request it sends, a redirected one included).
func TestUpstreamRedirectNotFollowed(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		http.Error(w, "no", http.StatusNotFound)
	}))
	t.Cleanup(other.Close)
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/steal", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirecting.Close)
	reg := &registry{}
	reg.add(&storage.MCPServer{ID: "redir", WorkspaceID: "ws-one", URL: redirecting.URL,
		Headers: map[string]string{"X-Api-Key": "stored-secret-77"}})
	cs := connect(t, newFront(t, reg), "gw-key-one-5d1f")
	if got := toolNames(t, cs); len(got) != 0 {
		t.Errorf("tools %v", got)
	}
	if res, err := call(t, cs, "redir__x", map[string]any{}); err == nil && (res == nil || !res.IsError) {
		t.Errorf("call through a redirect: %+v", res)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect was followed %d times", n)
	}
}

// logBuffer is a slog handler's sink that tests can read while the gateway writes to it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// An upstream URL may carry credentials in its userinfo, its path or its query: none of them appears in a
// tool error, a read's error or the log, whether the server cannot be reached or answers garbage.
func TestUpstreamURLSecretsNotShown(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	deadAddr := closed.Listener.Addr().String()
	closed.Close()
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"not":"json-rpc"`)
	}))
	t.Cleanup(garbage.Close)
	reg := &registry{}
	for id, host := range map[string]string{"dead": deadAddr, "garbage": garbage.Listener.Addr().String()} {
		reg.add(&storage.MCPServer{ID: id, WorkspaceID: "ws-one",
			URL: "http://tokenuser:passw0rd-ui@" + host + "/s/path-secret-55/mcp?api_key=query-secret-66"})
	}
	logs := &logBuffer{}
	g := New(reg, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.Serve(w, r, &Caller{WorkspaceID: keys[r.Header.Get("X-Gateway-Api-Key")]})
	}))
	t.Cleanup(front.Close)
	cs := connect(t, front, "gw-key-one-5d1f")
	var shown []string
	for _, id := range []string{"dead", "garbage"} {
		res, err := call(t, cs, id+"__tool", map[string]any{})
		if err != nil {
			shown = append(shown, err.Error())
		} else {
			shown = append(shown, text(res))
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: id + "__file:///x"})
		cancel()
		if err == nil {
			t.Errorf("%s: read succeeded", id)
		} else {
			shown = append(shown, err.Error())
		}
	}
	toolNames(t, cs)
	shown = append(shown, logs.String())
	for _, s := range shown {
		for _, secret := range []string{"tokenuser", "passw0rd-ui", "path-secret-55", "query-secret-66"} {
			if strings.Contains(s, secret) {
				t.Errorf("%q shown in %q", secret, s)
			}
		}
	}
}

// pagingServer is an upstream whose tools/list never ends: every page is empty and names a next one.
func pagingServer(t *testing.T) (url string, pages *atomic.Int64) {
	pages = &atomic.Int64{}
	server := mcp.NewServer(&mcp.Implementation{Name: "pager", Version: "1"},
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{},
			Resources: &mcp.ResourceCapabilities{}, Prompts: &mcp.PromptCapabilities{}}})
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			cursor := fmt.Sprint(pages.Add(1))
			switch method {
			case "tools/list":
				return &mcp.ListToolsResult{Tools: []*mcp.Tool{}, NextCursor: cursor}, nil
			case "resources/list":
				return &mcp.ListResourcesResult{Resources: []*mcp.Resource{}, NextCursor: cursor}, nil
			case "prompts/list":
				return &mcp.ListPromptsResult{Prompts: []*mcp.Prompt{}, NextCursor: cursor}, nil
			}
			pages.Add(-1)
			return next(ctx, method, req)
		}
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close)
	return srv.URL, pages
}

// A server whose cursors never end is asked a bounded number of pages, and the other servers' items are still
// listed.
func TestEndlessCursorsBounded(t *testing.T) {
	reg, _, _, _ := twoServers(t, nil)
	url, pages := pagingServer(t)
	reg.add(&storage.MCPServer{ID: "pager", WorkspaceID: "ws-one", URL: url})
	cs := connect(t, newFront(t, reg), "gw-key-one-5d1f")
	if got := toolNames(t, cs); len(got) != 2 {
		t.Errorf("tools %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := cs.ListResources(ctx, nil); err != nil {
		t.Error(err)
	}
	if _, err := cs.ListPrompts(ctx, nil); err != nil {
		t.Error(err)
	}
	if n := pages.Load(); n > 3*MaxPagesPerList {
		t.Errorf("%d pages asked of an endless list, bound %d a list", n, MaxPagesPerList)
	}
}

// goroutines waits (bounded polling) for the goroutine count to fall to at most want, and answers the last
// count seen.
func goroutines(want int) int {
	n := runtime.NumGoroutine()
	for i := 0; i < 300 && n > want; i++ {
		time.Sleep(10 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

// Calls that end (answered, cancelled by their caller, or cut by Close) leave no goroutine behind once their
// sessions are closed.
func TestNoGoroutineLeak(t *testing.T) {
	started, cancelled := make(chan struct{}, 8), make(chan struct{}, 8)
	reg, _, _, _ := twoServers(t, blockingAdd(started, cancelled))
	front := newFront(t, reg)
	// Warm up what lives for the test's whole run (the servers' listeners, idle connections' pools).
	warm := connect(t, front, "gw-key-one-5d1f")
	toolNames(t, warm)
	warm.Close()
	http.DefaultClient.CloseIdleConnections()
	before := goroutines(0)

	for range 3 {
		cs := connect(t, front, "gw-key-one-5d1f")
		toolNames(t, cs)
		if _, err := call(t, cs, "alpha__echo", map[string]any{}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			cs.CallTool(ctx, &mcp.CallToolParams{Name: "beta__add", Arguments: map[string]any{}})
		}()
		awaitSignal(t, started, "the call never reached the upstream")
		cancel()
		awaitSignal(t, cancelled, "the upstream call was not cancelled")
		<-done
		cs.Close()
	}
	http.DefaultClient.CloseIdleConnections()
	if after := goroutines(before + 2); after > before+2 {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines %d before, %d after:\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
}

// FuzzResolve: whatever name or uri a caller sends, resolution never panics, never answers a server of another
// workspace, and answers only a split that gives the name back: "<serverId>__<bare>" with a bare part.
func FuzzResolve(f *testing.F) {
	reg := &registry{}
	for _, s := range []struct{ ws, id string }{{"ws-one", "a"}, {"ws-one", "a__b"}, {"ws-one", "x_y"},
		{"ws-one", "srv"}, {"ws-two", "a"}, {"ws-two", "other"}} {
		reg.add(&storage.MCPServer{ID: s.id, WorkspaceID: s.ws, URL: "http://127.0.0.1:1/mcp", DenyTools: []string{"denied"}})
	}
	g := New(reg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	f.Cleanup(g.Close)
	f.Fuzz(func(t *testing.T, name string) {
		for _, accept := range []func(*storage.MCPServer, string) bool{anyName, offered} {
			srv, bare, err := g.resolvePrefixed("ws-one", name, accept)
			if err != nil {
				t.Fatal(err)
			}
			if srv == nil {
				continue
			}
			if srv.WorkspaceID != "ws-one" || bare == "" || srv.ID+toolSeparator+bare != name || !accept(srv, bare) {
				t.Fatalf("%q resolved to %s/%s and %q", name, srv.WorkspaceID, srv.ID, bare)
			}
		}
	})
}
