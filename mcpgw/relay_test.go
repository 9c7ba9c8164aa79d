package mcpgw

//lint:file-ignore SA1019 the SDK deprecates MCP logging from protocol 2026-07-28 on; issue 22 asks for it to be relayed meanwhile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectWith is connect with client options of the test's own.
func connectWith(t *testing.T, url, key string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: keyTransport{key}}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// notes collects what a caller's client is sent during calls.
type notes struct {
	progress chan *mcp.ProgressNotificationParams
	logs     chan *mcp.LoggingMessageParams
}

func newNotes() (*notes, *mcp.ClientOptions) {
	n := &notes{progress: make(chan *mcp.ProgressNotificationParams, 2000), logs: make(chan *mcp.LoggingMessageParams, 100)}
	return n, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { n.progress <- r.Params },
		LoggingMessageHandler:       func(_ context.Context, r *mcp.LoggingMessageRequest) { n.logs <- r.Params },
	}
}

// reportingTool sends three progress notifications and log messages, then waits for the caller to have
// received them before it answers: a gateway that held them back until the result would never see it answer.
func reportingTool(seen <-chan struct{}) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		token := req.Params.GetProgressToken()
		if token == nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no progress token"}}}, nil
		}
		for i := 1; i <= 3; i++ {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
				Progress: float64(i), Total: 3, Message: fmt.Sprintf("step %d", i)}); err != nil {
				return nil, err
			}
		}
		req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "debug", Data: "below the caller's level"})
		req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Logger: "worker", Data: "halfway"})
		select {
		case <-seen:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
			return nil, errors.New("the caller never received the notifications")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	}
}

// callWithProgress calls name with a progress token and, while the call runs, waits for three progress
// notifications and one log message, checks them, and closes seen; it answers the call's result.
func callWithProgress(t *testing.T, cs *mcp.ClientSession, n *notes, name string, seen chan<- struct{}) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		params := &mcp.CallToolParams{Name: name, Arguments: map[string]any{}}
		params.SetProgressToken("caller-token-7")
		res, err := cs.CallTool(ctx, params)
		done <- answer{res, err}
	}()
	for i := 1; i <= 3; i++ {
		select {
		case p := <-n.progress:
			if p.ProgressToken != "caller-token-7" || p.Progress != float64(i) || p.Total != 3 || p.Message != fmt.Sprintf("step %d", i) {
				t.Errorf("progress %d: %+v", i, p)
			}
		case a := <-done:
			t.Fatalf("the call ended before its progress reached the caller: %v, %+v", a.err, a.res)
		case <-ctx.Done():
			t.Fatal("no progress reached the caller")
		}
	}
	select {
	case l := <-n.logs:
		if l.Level != "warning" || l.Logger != "alpha__worker" || l.Data != "halfway" {
			t.Errorf("log message %+v", l)
		}
	case <-ctx.Done():
		t.Fatal("no log message reached the caller")
	}
	close(seen)
	a := <-done
	select {
	case l := <-n.logs:
		t.Errorf("a log message below the caller's level was relayed: %+v", l)
	default:
	}
	return a.res, a.err
}

// An upstream's progress and log messages during a call reach the caller while the call runs, under the
// caller's progress token and level.
func TestProgressAndLogRelayed(t *testing.T) {
	seen := make(chan struct{})
	reg, _, _, _ := twoServers(t, map[string]mcp.ToolHandler{"echo": reportingTool(seen)})
	n, opts := newNotes()
	cs := connectWith(t, newFront(t, reg).URL, "gw-key-one-5d1f", opts)
	res, err := callWithProgress(t, cs, n, "alpha__echo", seen)
	if err != nil || res.IsError || text(res) != "done" {
		t.Errorf("call: %v, %+v", err, res)
	}
}

// A caller that asks for no progress gets none, even from a server that sends some; a server's progress
// under a token of its own making is not relayed either.
func TestNoProgressUnasked(t *testing.T) {
	handlers := map[string]mcp.ToolHandler{
		"echo": func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.GetProgressToken() != nil {
				return nil, errors.New("a progress token reached the server")
			}
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "made-up", Progress: 1})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		},
		"add": func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "made-up", Progress: 1})
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 2})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		},
	}
	reg, _, _, _ := twoServers(t, handlers)
	n, opts := newNotes()
	cs := connectWith(t, newFront(t, reg).URL, "gw-key-one-5d1f", opts)
	if res, err := call(t, cs, "alpha__echo", map[string]any{}); err != nil || res.IsError {
		t.Fatalf("call: %v, %+v", err, res)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	params := &mcp.CallToolParams{Name: "beta__add", Arguments: map[string]any{}}
	params.SetProgressToken("marker")
	if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
		t.Fatalf("call with progress: %v, %+v", err, res)
	}
	// Notifications reach the client in order: anything relayed before the marker should not have been.
	select {
	case p := <-n.progress:
		if p.ProgressToken != "marker" || p.Progress != 2 {
			t.Errorf("relayed %+v, want only the marker", p)
		}
	case <-ctx.Done():
		t.Fatal("the marker never came")
	}
}

// At most MaxRelayedPerCall notifications of one call are relayed.
func TestRelayBounded(t *testing.T) {
	const sent = MaxRelayedPerCall + 3
	handlers := map[string]mcp.ToolHandler{
		"echo": func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for i := range sent {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: req.Params.GetProgressToken(), Progress: float64(i)}); err != nil {
					return nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "flooded"}}}, nil
		},
		"add": func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "one"}}}, nil
		},
	}
	reg, _, _, _ := twoServers(t, handlers)
	n, opts := newNotes()
	cs := connectWith(t, newFront(t, reg).URL, "gw-key-one-5d1f", opts)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for _, c := range []struct{ tool, token string }{{"alpha__echo", "flood"}, {"beta__add", "marker"}} {
		params := &mcp.CallToolParams{Name: c.tool, Arguments: map[string]any{}}
		params.SetProgressToken(c.token)
		if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
			t.Fatalf("%s: %v, %+v", c.tool, err, res)
		}
	}
	// Notifications reach the client in order: the marker, relayed after the flood's result, comes last.
	flood := 0
	for {
		select {
		case p := <-n.progress:
			if p.ProgressToken == "marker" {
				if flood != MaxRelayedPerCall {
					t.Errorf("%d of %d notifications relayed, want %d", flood, sent, MaxRelayedPerCall)
				}
				return
			}
			flood++
		case <-ctx.Done():
			t.Fatalf("the marker never came (%d relayed)", flood)
		}
	}
}

// rawCall posts a tools/call on the session with ctx, as a client that can go away without a word would.
func rawCall(ctx context.Context, url, key string, cs *mcp.ClientSession, tool string) error {
	body := `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
	req.Header.Set("X-Gateway-Api-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// blockingAdd is a tool that reports its start, then waits for its context to end and reports that.
func blockingAdd(started, cancelled chan<- struct{}) map[string]mcp.ToolHandler {
	return map[string]mcp.ToolHandler{"add": func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
			cancelled <- struct{}{}
		case <-time.After(wait):
		}
		return nil, ctx.Err()
	}}
}

// awaitSignal waits for one value of ch, failing the test with what after the guard.
func awaitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(wait):
		t.Fatal(what)
	}
}

// A caller that drops its connection mid-call, without a cancellation notice, cancels the upstream call,
// and the gateway's call ends: it closes its upstream session (the server sees the DELETE).
func TestCallerGoneCancelsUpstream(t *testing.T) {
	started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	reg, _, beta, _ := twoServers(t, blockingAdd(started, cancelled))
	front := newFront(t, reg)
	cs := connect(t, front, "gw-key-one-5d1f")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rawCall(ctx, front.URL, "gw-key-one-5d1f", cs, "beta__add") }()
	awaitSignal(t, started, "the call never reached the upstream")
	cancel() // the client closes its connection
	awaitSignal(t, cancelled, "the upstream call was not cancelled")
	awaitSignal(t, beta.deletes, "the gateway never closed its upstream session: its call goroutine is still running")
	if err := <-done; err == nil {
		t.Error("the dropped call succeeded")
	}
}

// Close ends the calls in flight and refuses requests after it.
func TestCloseEndsCalls(t *testing.T) {
	started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	reg, _, beta, _ := twoServers(t, blockingAdd(started, cancelled))
	g := New(reg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.Serve(w, r, &Caller{WorkspaceID: keys[r.Header.Get("X-Gateway-Api-Key")]})
	}))
	t.Cleanup(front.Close)
	cs := connect(t, front, "gw-key-one-5d1f")
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := call(t, cs, "beta__add", map[string]any{}); err == nil {
			t.Error("a call in flight at Close succeeded")
		}
	})
	awaitSignal(t, started, "the call never reached the upstream")
	g.Close()
	awaitSignal(t, cancelled, "Close did not cancel the upstream call")
	awaitSignal(t, beta.deletes, "the call's upstream session was not closed")
	wg.Wait()
	req, _ := http.NewRequest("POST", front.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("X-Gateway-Api-Key", "gw-key-one-5d1f")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("after Close: %d", resp.StatusCode)
	}
}
