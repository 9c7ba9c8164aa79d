package routes

//lint:file-ignore SA1019 the SDK deprecates MCP logging from protocol 2026-07-28 on; issue 22 asks for it to be relayed meanwhile

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmgw/gateway/storage"
)

// mcpWait guards the waits of these tests against hangs; it is never a measure.
const mcpWait = 30 * time.Second

// streamRoute serves h through serveStreaming at /test/stream, before the fixture serves.
func streamRoute(f *fixture, h http.HandlerFunc) {
	f.srv.app.All("/test/stream", func(c *fiber.Ctx) error { return f.srv.serveStreaming(c, h) })
}

func awaitOrFail(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(mcpWait):
		t.Fatal(what)
	}
}

// A handler that returns without flushing is answered with one body, its status and headers as written.
func TestServeStreamingWholeBody(t *testing.T) {
	f := newFixture(t, Options{})
	streamRoute(f, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Echo", r.Header.Get("X-Test"))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Header().Set("X-Too-Late", "1") // after the status: ignored, as net/http does
		fmt.Fprintf(w, `{"got":%q}`, body)
	})
	base, _ := f.serve(t)
	req, _ := http.NewRequest("POST", base+"/test/stream?q=1", strings.NewReader("ping"))
	req.Header.Set("X-Test", "seven")
	resp, err := (&http.Client{Timeout: mcpWait}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	a := readAnswer(t, resp)
	if a.status != 201 || string(a.body) != `{"got":"ping"}` || a.header.Get("X-Echo") != "seven" ||
		a.header.Get("Content-Type") != "application/json" || a.header.Get("X-Too-Late") != "" || resp.ContentLength != int64(len(a.body)) {
		t.Errorf("answer %d %v %s (length %d)", a.status, a.header, a.body, resp.ContentLength)
	}
}

// What a handler flushes reaches the caller while it runs; what it writes past streamChunkBytes does too,
// flushed or not.
func TestServeStreamingRelaysAsWritten(t *testing.T) {
	tests := []struct {
		name  string
		write func(w http.ResponseWriter)
		first string // what the caller must read before the handler goes on
	}{
		{"flushed", func(w http.ResponseWriter) {
			io.WriteString(w, "data: first\n\n")
			w.(http.Flusher).Flush()
		}, "data: first\n\n"},
		{"past the chunk size, unflushed", func(w http.ResponseWriter) {
			line := strings.Repeat("x", 1023) + "\n"
			for range 4 * streamChunkBytes / len(line) {
				io.WriteString(w, line)
			}
		}, strings.Repeat("x", 1023) + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			release := make(chan struct{})
			streamRoute(f, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				tc.write(w)
				select {
				case <-release: // a bridge that held the answer back would never get here
				case <-r.Context().Done():
					return
				}
				io.WriteString(w, "data: last\n\n")
			})
			base, _ := f.serve(t)
			ctx, cancel := context.WithTimeout(context.Background(), mcpWait) // a bridge that buffers answers after it
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", base+"/test/stream", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Errorf("content type %q", resp.Header.Get("Content-Type"))
			}
			br := bufio.NewReader(resp.Body)
			got := make([]byte, len(tc.first))
			if _, err := io.ReadFull(br, got); err != nil || string(got) != tc.first {
				t.Fatalf("first bytes %q: %v", got, err)
			}
			close(release)
			rest, err := io.ReadAll(br)
			if err != nil || !strings.HasSuffix(string(rest), "data: last\n\n") {
				t.Errorf("rest (%d bytes, ends %q): %v", len(rest), rest[max(0, len(rest)-20):], err)
			}
		})
	}
}

// A caller that goes away mid-stream ends the handler's context; a handler that panics is answered 500.
func TestServeStreamingCallerGoneAndPanic(t *testing.T) {
	f := newFixture(t, Options{})
	ended := make(chan struct{})
	streamRoute(f, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("panic") != "" {
			panic("handler bug")
		}
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		for {
			select {
			case <-r.Context().Done():
				close(ended)
				return
			case <-time.After(10 * time.Millisecond): // writes that fail once the caller is gone, if unnoticed before
				io.WriteString(w, ": keep-alive\n\n")
				w.(http.Flusher).Flush()
			}
		}
	})
	base, _ := f.serve(t)
	client := &http.Client{Timeout: mcpWait} // a guard against hangs
	resp, err := client.Get(base + "/test/stream")
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "data: one\n" {
		t.Fatalf("first line %q: %v", line, err)
	}
	resp.Body.Close() // mid-stream: the connection closes
	awaitOrFail(t, ended, "the handler's context did not end when its caller went away")

	resp, err = client.Get(base + "/test/stream?panic=1")
	if err != nil {
		t.Fatal(err)
	}
	if a := readAnswer(t, resp); a.status != http.StatusInternalServerError {
		t.Errorf("panic: %d %s", a.status, a.body)
	}
}

// mcpUpstream is an MCP server of the SDK's on 127.0.0.1 with one tool, add, whose handler is the test's; it
// reports every DELETE (a session the gateway closed) on deletes.
func mcpUpstream(t *testing.T, handler mcp.ToolHandler) (url string, deletes <-chan struct{}) {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "add", InputSchema: json.RawMessage(`{"type":"object"}`)}, handler)
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	d := make(chan struct{}, 64)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sdk.ServeHTTP(w, r)
		if r.Method == http.MethodDelete {
			select {
			case d <- struct{}{}:
			default:
			}
		}
	}))
	t.Cleanup(up.Close)
	return up.URL, d
}

// mcpClient connects to the gateway's /mcp with the key, and client options of the test's own.
func mcpClient(t *testing.T, base, key string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), mcpWait)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{key}},
			DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// Through the whole gateway (fiber, then the streaming bridge): an upstream's progress and log messages
// reach the caller while the call runs, before its result.
func TestMCPStreamsNotifications(t *testing.T) {
	f := newFixture(t, Options{})
	seen := make(chan struct{})
	url, _ := mcpUpstream(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		token := req.Params.GetProgressToken()
		if token == nil {
			return nil, errors.New("no progress token forwarded")
		}
		for i := 1; i <= 3; i++ {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: 3})
		}
		req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "halfway"})
		select {
		case <-seen: // the caller has them all: they were not held back until the result
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(mcpWait):
			return nil, errors.New("the caller never received the notifications")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	if _, err := f.store.MCPServers.Put(&storage.MCPServer{ID: "up", WorkspaceID: f.ws.ID, URL: url}); err != nil {
		t.Fatal(err)
	}
	base, _ := f.serve(t)
	progress, logs := make(chan *mcp.ProgressNotificationParams, 10), make(chan *mcp.LoggingMessageParams, 10)
	cs := mcpClient(t, base, f.plain, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progress <- r.Params },
		LoggingMessageHandler:       func(_ context.Context, r *mcp.LoggingMessageRequest) { logs <- r.Params },
	})
	ctx, cancel := context.WithTimeout(context.Background(), mcpWait)
	defer cancel()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "up__add", Arguments: map[string]any{}}
		params.SetProgressToken(42)
		res, err := cs.CallTool(ctx, params)
		done <- result{res, err}
	}()
	for i := 1; i <= 3; i++ {
		select {
		case p := <-progress:
			if p.Progress != float64(i) || p.Total != 3 || fmt.Sprint(p.ProgressToken) != "42" {
				t.Errorf("progress %d: %+v", i, p)
			}
		case r := <-done:
			t.Fatalf("the call ended before its progress reached the caller: %v, %+v", r.err, r.res)
		case <-ctx.Done():
			t.Fatal("no progress reached the caller")
		}
	}
	select {
	case l := <-logs:
		if l.Data != "halfway" || l.Logger != "up" {
			t.Errorf("log %+v", l)
		}
	case <-ctx.Done():
		t.Fatal("no log message reached the caller")
	}
	close(seen)
	if r := <-done; r.err != nil || r.res.IsError || r.res.Content[0].(*mcp.TextContent).Text != "done" {
		t.Errorf("call: %v, %+v", r.err, r.res)
	}
}

// rawToolCall posts a tools/call on the session with ctx and reads the answer, as a client that can drop its
// connection without a cancellation notice would.
func rawToolCall(ctx context.Context, base, key string, cs *mcp.ClientSession, tool string) error {
	body := `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/mcp", strings.NewReader(body))
	if err != nil {
		return err
	}
	for name, value := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Session-Id": cs.ID(), "Mcp-Protocol-Version": cs.InitializeResult().ProtocolVersion, HeaderAPIKey: key} {
		req.Header.Set(name, value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// blockingTool reports its start, then waits for its context to end and reports that.
func blockingTool(started, cancelled chan<- struct{}) mcp.ToolHandler {
	return func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
			cancelled <- struct{}{}
		case <-time.After(mcpWait):
		}
		return nil, ctx.Err()
	}
}

// A caller that drops its connection during a long call (no notifications/cancelled) cancels the upstream
// call, and the gateway's call ends: it closes its upstream session, which the upstream sees.
func TestMCPCallerGoneCancelsUpstream(t *testing.T) {
	f := newFixture(t, Options{})
	started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	url, deletes := mcpUpstream(t, blockingTool(started, cancelled))
	if _, err := f.store.MCPServers.Put(&storage.MCPServer{ID: "up", WorkspaceID: f.ws.ID, URL: url}); err != nil {
		t.Fatal(err)
	}
	base, _ := f.serve(t)
	cs := mcpClient(t, base, f.plain, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rawToolCall(ctx, base, f.plain, cs, "up__add") }()
	awaitOrFail(t, started, "the call never reached the upstream")
	cancel() // the connection closes, nothing else is said
	awaitOrFail(t, cancelled, "the upstream call was not cancelled when its caller went away")
	awaitOrFail(t, deletes, "the gateway's call did not end: its upstream session was never closed")
	if err := <-done; err == nil {
		t.Error("the dropped call succeeded")
	}
}

// Shutdown ends a call still running when its grace period is over, upstream included.
func TestMCPShutdownEndsCalls(t *testing.T) {
	f := newFixture(t, Options{})
	started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	url, _ := mcpUpstream(t, blockingTool(started, cancelled))
	if _, err := f.store.MCPServers.Put(&storage.MCPServer{ID: "up", WorkspaceID: f.ws.ID, URL: url}); err != nil {
		t.Fatal(err)
	}
	base, served := f.serve(t)
	cs := mcpClient(t, base, f.plain, nil)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "up__add", Arguments: map[string]any{}})
		done <- err
	}()
	awaitOrFail(t, started, "the call never reached the upstream")
	shut := make(chan error, 1)
	go func() { shut <- f.srv.Shutdown(10 * time.Millisecond) }()
	awaitOrFail(t, cancelled, "the upstream call was not cancelled at shutdown")
	select {
	case <-shut:
	case <-time.After(mcpWait):
		t.Fatal("Shutdown did not return")
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("the call cut by shutdown succeeded")
		}
	case <-time.After(mcpWait):
		t.Fatal("the caller's call never ended")
	}
}
