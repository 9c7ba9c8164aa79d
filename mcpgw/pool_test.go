package mcpgw

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmgw/gateway/storage"
)

// swappableUpstream is an MCP server whose handler a test can replace (a restart: every session forgotten),
// counting the sessions opened, the calls run and the sessions deleted.
type swappableUpstream struct {
	srv              *httptest.Server
	handler          atomic.Pointer[http.Handler]
	inits, calls     atomic.Int32 // sessions opened, tools run
	deletes, expired atomic.Int32
}

func newSwappableUpstream(t *testing.T) *swappableUpstream {
	t.Helper()
	u := &swappableUpstream{}
	u.restart()
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			u.deletes.Add(1)
		}
		rec := &statusRecorder{ResponseWriter: w, notFound: &u.expired}
		if r.Header.Get("Mcp-Session-Id") == "" {
			rec.opened = &u.inits
		}
		(*u.handler.Load()).ServeHTTP(rec, r)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// restart replaces the server: the sessions it had are unknown to the new one (404).
func (u *swappableUpstream) restart() {
	server := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			u.calls.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	u.handler.Store(&h)
}

// statusRecorder counts the answers 404 and, for a request without a session, the sessions opened (an answer
// that hands out an Mcp-Session-Id).
type statusRecorder struct {
	http.ResponseWriter
	notFound, opened *atomic.Int32
	wrote            bool
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	if !s.wrote {
		s.WriteHeader(http.StatusOK)
	}
	return s.ResponseWriter.Write(p)
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.wrote {
		return
	}
	s.wrote = true
	if code == http.StatusNotFound {
		s.notFound.Add(1)
	}
	if s.opened != nil && s.Header().Get("Mcp-Session-Id") != "" {
		s.opened.Add(1)
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Flush() {
	if !s.wrote {
		s.WriteHeader(http.StatusOK)
	}
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Calls and lists on one server share one upstream session; a changed record opens another; a session the
// server forgot (a restart) is replaced and the call runs once; Close ends the idle sessions.
func TestUpstreamSessionsAreReused(t *testing.T) {
	u := newSwappableUpstream(t)
	reg := &registry{}
	srv := &storage.MCPServer{ID: "up", WorkspaceID: "ws-one", URL: u.srv.URL, Stamps: storage.Stamps{UpdatedAt: time.Unix(1, 0)}}
	reg.add(srv)
	g := New(reg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.Serve(w, r, &Caller{WorkspaceID: "ws-one"})
	}))
	defer front.Close()
	cs := connect(t, front, "gw-key-one-5d1f")

	for i := range 3 {
		if res, err := call(t, cs, "up__echo", map[string]int{"i": i}); err != nil || res.IsError {
			t.Fatalf("call %d: %v %+v", i, err, res)
		}
	}
	if names := toolNames(t, cs); len(names) != 1 {
		t.Fatalf("tools: %v", names)
	}
	if n := u.inits.Load(); n != 1 {
		t.Errorf("%d upstream sessions opened for 3 calls and a list, want 1", n)
	}

	// The record changes (new headers): the kept session is not used for it.
	changed := *srv
	changed.Headers = map[string]string{"X-Token": "two"}
	changed.Stamps.UpdatedAt = time.Unix(2, 0)
	reg.mu.Lock()
	*srv = changed
	reg.mu.Unlock()
	if res, err := call(t, cs, "up__echo", nil); err != nil || res.IsError {
		t.Fatalf("call after the change: %v %+v", err, res)
	}
	if n := u.inits.Load(); n != 2 {
		t.Errorf("%d sessions after the record changed, want 2", n)
	}

	// The server restarts: its sessions are gone; the call is sent again on a new session and runs once.
	u.restart()
	before := u.calls.Load()
	if res, err := call(t, cs, "up__echo", map[string]int{"after": 1}); err != nil || res.IsError {
		t.Fatalf("call after the restart: %v %+v", err, res)
	}
	if got := u.calls.Load() - before; got != 1 || u.expired.Load() == 0 {
		t.Errorf("after the restart: %d runs (want 1), %d answers 404", got, u.expired.Load())
	}

	deletes := u.deletes.Load()
	g.Close()
	waitUntil(t, func() bool { return u.deletes.Load() > deletes })
}

// Parallel calls each take their own session; sessions go back to the pool, at most PoolIdlePerServer kept.
func TestPooledSessionsParallel(t *testing.T) {
	u := newSwappableUpstream(t)
	reg := &registry{}
	reg.add(&storage.MCPServer{ID: "up", WorkspaceID: "ws-one", URL: u.srv.URL})
	front := newFront(t, reg)
	cs := connect(t, front, "gw-key-one-5d1f")
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			if res, err := call(t, cs, "up__echo", map[string]int{"i": i}); err != nil || res.IsError {
				t.Errorf("call %d: %v %+v", i, err, res)
			}
		})
	}
	wg.Wait()
	if u.calls.Load() != 16 {
		t.Errorf("%d calls ran, want 16", u.calls.Load())
	}
	inits := u.inits.Load()
	for i := range 4 {
		if res, err := call(t, cs, "up__echo", map[string]int{"again": i}); err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
	}
	if u.inits.Load() != inits {
		t.Errorf("sequential calls opened %d new sessions with idle ones kept", u.inits.Load()-inits)
	}
}

// waitUntil polls cond for up to 10 s: what it waits for happens in the background.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
	}
}
