package routes

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmgw/gateway/reqlog"
	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/ratelimit"
	"github.com/llmgw/gateway/storage"
)

// headerTransport sends a gateway key as a bearer token and the given gateway headers, as an MCP client
// configured with extra headers does.
type headerTransport struct {
	key     string
	headers map[string]string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+h.key)
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// toolsFixture is a gateway with a request log, a rate limiter and budgets, and an upstream MCP server "files"
// with read_file (its answer carries a card number), echo, structured (a harmless text, a card number in its
// structured content only) and fail (a JSON-RPC error carrying a card number), counting the calls it gets.
type toolsFixture struct {
	*fixture
	base  string
	logs  *reqlog.Writer
	mu    sync.Mutex
	calls map[string]int
}

func newToolsFixture(t *testing.T) *toolsFixture {
	t.Helper()
	f := newFixtureWith(t, Options{}, func(st *storage.Store) runtime.Options {
		lim := ratelimit.New(st, ratelimit.Options{FlushInterval: time.Hour})
		t.Cleanup(func() { lim.Close() })
		budgets := ratelimit.NewBudgets(st, ratelimit.BudgetOptions{FlushInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
		t.Cleanup(func() { budgets.Close() })
		return runtime.Options{RateLimiter: lim, Budgets: budgets}
	})
	tf := &toolsFixture{fixture: f, calls: map[string]int{}}
	tf.logs = reqlog.New(f.store.Logs, reqlog.Options{Bodies: true, FlushWindow: time.Millisecond})
	t.Cleanup(func() { tf.logs.Close() })
	f.srv.logs = tf.logs

	upstream := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
	count := func(name string) {
		tf.mu.Lock()
		tf.calls[name]++
		tf.mu.Unlock()
	}
	upstream.AddTool(&mcp.Tool{Name: "read_file", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			count("read_file")
			var args struct{ Path string }
			json.Unmarshal(req.Params.Arguments, &args)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "contents of " + args.Path + ": card 4111-1111-1111-1111"}},
				StructuredContent: map[string]string{"card": "4111-1111-1111-1111"}}, nil
		})
	upstream.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			count("echo")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	upstream.AddTool(&mcp.Tool{Name: "structured", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			count("structured")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}},
				StructuredContent: map[string]string{"card": "4111-1111-1111-1111"}}, nil
		})
	upstream.AddTool(&mcp.Tool{Name: "fail", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			count("fail")
			return nil, &jsonrpc.Error{Code: -32000, Message: "no access to card 4111-1111-1111-1111", Data: json.RawMessage(`{"card":"4111-1111-1111-1111"}`)}
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return upstream }, nil))
	t.Cleanup(up.Close)
	if _, err := f.store.MCPServers.Put(&storage.MCPServer{ID: "files", WorkspaceID: f.ws.ID, URL: up.URL}); err != nil {
		t.Fatal(err)
	}
	tf.base, _ = f.serve(t)
	return tf
}

// connect opens a session with the key, sending headers (x-gateway-config, x-gateway-metadata) on every request.
func (tf *toolsFixture) connect(t *testing.T, ctx context.Context, key string, headers map[string]string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: tf.base + "/mcp",
		HTTPClient: &http.Client{Transport: headerTransport{key, headers}}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func (tf *toolsFixture) upstreamCalls(tool string) int {
	tf.mu.Lock()
	defer tf.mu.Unlock()
	return tf.calls[tool]
}

func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// toolHooksConfig denies reading /etc/shadow before the call and redacts card numbers from results.
const toolHooksConfig = `{
	"before_tool_call": [{"id": "no-secrets", "checks": [{"id": "default.contains", "parameters": {"operator": "none", "words": ["/etc/shadow"]}}], "on_fail": {"deny": true}}],
	"after_tool_call": [{"id": "redact-cards", "checks": [{"id": "default.regexReplace", "parameters": {"rule": "\\d{4}-\\d{4}-\\d{4}-\\d{4}", "replacement": "[card]"}}]}]
}`

// Tool hooks from an inline config: a deny by the arguments is a tool error naming the hook and reaches no
// server; a transformer redacts the result (structured content included); each call is a log entry and a count.
func TestMCPToolHooks(t *testing.T) {
	tf := newToolsFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	compact := strings.Join(strings.Fields(toolHooksConfig), " ")
	cs := tf.connect(t, ctx, tf.plain, map[string]string{HeaderConfig: compact, HeaderMetadata: `{"agent": "a1"}`})

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__read_file", Arguments: map[string]string{"path": "/etc/shadow"}})
	if err != nil || !res.IsError || !strings.Contains(textOf(t, res), `"no-secrets"`) {
		t.Fatalf("denied call: %v, %+v", err, res)
	}
	if n := tf.upstreamCalls("read_file"); n != 0 {
		t.Fatalf("a denied call reached the server %d times", n)
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__read_file", Arguments: map[string]string{"path": "/tmp/a"}})
	if err != nil || res.IsError {
		t.Fatalf("allowed call: %v, %+v", err, res)
	}
	text := textOf(t, res)
	// The structured content (which no text item carries) was checked with the text, and is in it, redacted.
	if text != "contents of /tmp/a: card [card]\n{\"card\":\"[card]\"}" || res.StructuredContent != nil {
		t.Errorf("redacted result: %q, structured %v", text, res.StructuredContent)
	}
	if n := tf.upstreamCalls("read_file"); n != 1 {
		t.Errorf("server calls %d, want 1", n)
	}

	// Without the config nothing is checked or changed.
	plain := tf.connect(t, ctx, tf.plain, nil)
	res, err = plain.CallTool(ctx, &mcp.CallToolParams{Name: "files__read_file", Arguments: map[string]string{"path": "/etc/shadow"}})
	if err != nil || res.IsError || !strings.Contains(textOf(t, res), "4111-1111-1111-1111") {
		t.Errorf("call without config: %v, %+v", err, res)
	}

	// An invalid config fails the call, naming the header and the field, and reaches no server.
	bad := tf.connect(t, ctx, tf.plain, map[string]string{HeaderConfig: `{"before_tool_call": [{"id": "x", "checks": [{"id": "default.nope", "parameters": {}}]}]}`})
	if _, err := bad.CallTool(ctx, &mcp.CallToolParams{Name: "files__echo"}); err == nil ||
		!strings.Contains(err.Error(), "x-gateway-config") || !strings.Contains(err.Error(), "before_tool_call[0].checks[0].id") {
		t.Errorf("invalid config: %v", err)
	}
	if n := tf.upstreamCalls("echo"); n != 0 {
		t.Errorf("a call with an invalid config reached the server")
	}

	tf.logs.Close() // writes what is queued
	page, err := tf.store.Logs.List(storage.LogQuery{WorkspaceID: tf.ws.ID, Tool: "read_file"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 3 {
		t.Fatalf("%d log entries for read_file, want 3", len(page.Entries))
	}
	statuses := map[int]int{}
	for _, e := range page.Entries {
		statuses[e.Status]++
		if e.Endpoint != "/mcp" || e.MCPServer != "files" || e.TraceID == "" {
			t.Errorf("entry %+v", e)
		}
	}
	if statuses[446] != 1 || statuses[200] != 2 {
		t.Errorf("statuses %v, want one 446 and two 200", statuses)
	}
	denied := page.Entries[len(page.Entries)-1] // oldest first is last
	if err := tf.store.Logs.GetBodies(denied); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(denied.Request), `"/etc/shadow"`) || !strings.Contains(string(denied.Response), `"isError":true`) {
		t.Errorf("denied entry's bodies: %s / %s", denied.Request, denied.Response)
	}
	if denied.Status != 446 || denied.Metadata["agent"] != "a1" || !strings.Contains(string(denied.HookResults), `{"before_tool_call":[{"id":"no-secrets"`) {
		t.Errorf("denied entry: %+v hooks %s", denied, denied.HookResults)
	}
	reg := tf.srv.Metrics().Registry()
	for status, want := range map[string]float64{"denied": 1, "ok": 2, "invalid": 1} {
		tool := "read_file"
		if status == "invalid" {
			tool = "echo"
		}
		if v, _ := metricValue(t, reg, "gateway_tool_calls_total", map[string]string{"server": "files", "tool": tool, "status": status}); v != want {
			t.Errorf("gateway_tool_calls_total{status=%q} = %v, want %v", status, v, want)
		}
	}
}

// A saved config's tool hooks apply as an inline one's; after_tool_call may deny a result.
func TestMCPToolHooksSavedConfigDeniesResult(t *testing.T) {
	tf := newToolsFixture(t)
	if _, err := tf.store.Configs.Put(tf.ws.ID, "tools", &storage.Config{ID: "tools", WorkspaceID: tf.ws.ID, Config: json.RawMessage(
		`{"after_tool_call": [{"id": "no-cards", "checks": [{"id": "default.regexMatch", "parameters": {"rule": "\\d{4}-\\d{4}", "not": true}}], "on_fail": {"deny": true}}]}`)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := tf.connect(t, ctx, tf.plain, map[string]string{HeaderConfig: "tools"})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__read_file", Arguments: map[string]string{"path": "/a"}})
	if err != nil || !res.IsError || !strings.Contains(textOf(t, res), `"no-cards"`) || strings.Contains(textOf(t, res), "4111") {
		t.Fatalf("denied result: %v, %+v", err, res)
	}
	if n := tf.upstreamCalls("read_file"); n != 1 {
		t.Errorf("server calls %d, want 1 (after hooks run on the result)", n)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__echo", Arguments: map[string]string{"say": "hi"}})
	if err != nil || res.IsError {
		t.Errorf("clean result: %v, %+v", err, res)
	}
}

// A rate-limit policy naming a tool counts that tool's calls only: past it the call is a tool error naming the
// policy, and the server is not called; other tools and model requests are not counted by it.
func TestMCPToolRateLimit(t *testing.T) {
	tf := newToolsFixture(t)
	if _, err := tf.store.Policies.Put(tf.ws.ID, "echo-2", &storage.RateLimitPolicy{ID: "echo-2", WorkspaceID: tf.ws.ID,
		OrganisationID: tf.ws.OrganisationID, Type: "requests", Unit: "rpm", Value: 2, Status: "active",
		Conditions: []storage.PolicyMatch{{Key: "tool", Value: "echo"}}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := tf.connect(t, ctx, tf.plain, nil)
	for i := range 3 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__echo", Arguments: map[string]int{"i": i}})
		if err != nil {
			t.Fatal(err)
		}
		if refused := res.IsError && strings.Contains(textOf(t, res), "echo-2"); refused != (i == 2) {
			t.Errorf("call %d: %+v", i, res)
		}
	}
	if n := tf.upstreamCalls("echo"); n != 2 {
		t.Errorf("server calls %d, want 2", n)
	}
	for range 3 {
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__read_file"}); err != nil || res.IsError {
			t.Fatalf("another tool: %v %+v", err, res)
		}
	}
	reg := tf.srv.Metrics().Registry()
	if v, _ := metricValue(t, reg, "gateway_tool_calls_total", map[string]string{"server": "files", "tool": "echo", "status": "rate_limited"}); v != 1 {
		t.Errorf("rate_limited count %v", v)
	}
}
