package routes

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"

	"github.com/llmgw/gateway/mcpgw"
	"github.com/llmgw/gateway/reqlog"
	"github.com/llmgw/gateway/storage"
)

// Attempts to get a tool call past the Interceptor, its hooks, its limits or its bounds.

// rawMCP is an MCP client over plain HTTP, for what the SDK's client never sends (batches, calls before the
// initialized notification).
type rawMCP struct {
	t       *testing.T
	url     string
	headers map[string]string
	session string
	version string
}

// post sends one JSON-RPC message (or batch) and returns the JSON-RPC messages of the answer's event stream.
func (c *rawMCP) post(body string) (int, []string) {
	c.t.Helper()
	req, err := http.NewRequest("POST", c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", c.version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		c.session = id
	}
	var msgs []string
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				msgs = append(msgs, data)
			}
		}
	} else {
		b, _ := io.ReadAll(resp.Body)
		if len(b) > 0 {
			msgs = append(msgs, string(b))
		}
	}
	return resp.StatusCode, msgs
}

func (tf *toolsFixture) raw(t *testing.T, version string, headers map[string]string) *rawMCP {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + tf.plain}
	for k, v := range headers {
		h[k] = v
	}
	c := &rawMCP{t: t, url: tf.base + "/mcp", headers: h, version: version}
	status, msgs := c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version +
		`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if status != 200 || c.session == "" || len(msgs) != 1 || !strings.Contains(msgs[0], `"result"`) {
		t.Fatalf("initialize: %d %q (session %q)", status, msgs, c.session)
	}
	return c
}

func toolCount(t *testing.T, tf *toolsFixture, tool, status string) float64 {
	t.Helper()
	v, _ := metricValue(t, tf.srv.Metrics().Registry(), "gateway_tool_calls_total", map[string]string{"server": "files", "tool": tool, "status": status})
	return v
}

// A JSON-RPC batch (protocol 2025-03-26 allows them) and a call sent before notifications/initialized go
// through the Interceptor like any call: the denied one never reaches the server, each is counted once.
func TestMCPToolCallsBatchAndEarlyIntercepted(t *testing.T) {
	tf := newToolsFixture(t)
	compact := strings.Join(strings.Fields(toolHooksConfig), " ")
	c := tf.raw(t, "2025-03-26", map[string]string{HeaderConfig: compact})

	// Before notifications/initialized: whatever the SDK answers, the Interceptor is not bypassed.
	c.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"files__read_file","arguments":{"path":"/etc/shadow"}}}`)
	if n := tf.upstreamCalls("read_file"); n != 0 {
		t.Fatalf("a call before initialized reached the server %d times", n)
	}
	if status, _ := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("initialized: %d", status)
	}
	status, msgs := c.post(`[{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"files__read_file","arguments":{"path":"/etc/shadow"}}},` +
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"files__echo","arguments":{"say":"hi"}}},` +
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"files__echo","arguments":{"say":"again"}}}]`)
	if status != 200 {
		t.Fatalf("batch: %d %q", status, msgs)
	}
	joined := strings.Join(msgs, "\n")
	if !strings.Contains(joined, `no-secrets`) || !strings.Contains(joined, `again`) {
		t.Errorf("batch answers: %q", msgs)
	}
	if n := tf.upstreamCalls("read_file"); n != 0 {
		t.Errorf("a denied call in a batch reached the server %d times", n)
	}
	if n := tf.upstreamCalls("echo"); n != 2 {
		t.Errorf("echo reached the server %d times, want 2 (once per call)", n)
	}
	if v := toolCount(t, tf, "echo", "ok"); v != 2 {
		t.Errorf("echo ok count %v, want 2", v)
	}
	if v := toolCount(t, tf, "read_file", "denied"); v < 1 {
		t.Errorf("read_file denied count %v", v)
	}
}

// A call whose caller has gone before it is forwarded is not forwarded and costs nothing; the budget's room
// is whole for the next call.
func TestMCPToolCancelledBeforeForwardCostsNothing(t *testing.T) {
	tf := newToolsFixture(t)
	srv := &storage.MCPServer{ID: "files", WorkspaceID: tf.ws.ID, URL: "http://127.0.0.1:1/mcp", CostPerCall: 1}
	var forwarded atomic.Int64
	forward := func(ctx context.Context, _ json.RawMessage) (*mcp.CallToolResult, error) {
		forwarded.Add(1)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}
	for i, config := range []string{"", toolHooksConfig} {
		forwarded.Store(0)
		budget := fmt.Sprintf("echo-budget-%d", i)
		if _, err := tf.store.UsageLimits.Put(tf.ws.ID, budget, &storage.UsageLimitPolicy{ID: budget, WorkspaceID: tf.ws.ID,
			OrganisationID: tf.ws.OrganisationID, Type: "cost", CreditLimit: 1, Status: "active",
			Conditions: []storage.PolicyMatch{{Key: "tool", Value: "echo"}}}); err != nil {
			t.Fatal(err)
		}
		caller := &mcpgw.Caller{WorkspaceID: tf.ws.ID, APIKeyID: "k", TraceID: "t", Config: config}
		call := &mcpgw.ToolCall{Caller: caller, Server: srv, Tool: "echo", Name: "files__echo", Arguments: json.RawMessage(`{}`)}
		gone, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := tf.srv.interceptToolCall(gone, call, forward); !errors.Is(err, context.Canceled) {
			t.Errorf("config %q: cancelled call: %v", config, err)
		}
		if n := forwarded.Load(); n != 0 {
			t.Errorf("config %q: a call cancelled before its forward was forwarded", config)
		}
		res, err := tf.srv.interceptToolCall(context.Background(), call, forward)
		if err != nil || res.IsError {
			t.Fatalf("config %q: the next call was refused: %v %+v (the cancelled one cost)", config, err, res)
		}
		// Spent now: the next is refused, which proves the budget counts.
		res, err = tf.srv.interceptToolCall(context.Background(), call, forward)
		if err != nil || !res.IsError || !strings.Contains(textOf(t, res), budget) {
			t.Fatalf("config %q: past the budget: %v %+v", config, err, res)
		}
		if err := tf.store.UsageLimits.Delete(tf.ws.ID, budget); err != nil {
			t.Fatal(err)
		}
	}
	if v := toolCount(t, tf, "echo", "cancelled"); v != 2 {
		t.Errorf("cancelled count %v, want 2", v)
	}
}

// Structured content is what after_tool_call checks see too, when no text item carries it: a card number in it
// is denied, or redacted, like one in the text.
func TestMCPToolStructuredContentChecked(t *testing.T) {
	tf := newToolsFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deny := tf.connect(t, ctx, tf.plain, map[string]string{HeaderConfig: `{"after_tool_call": [{"id": "no-cards", "checks": [{"id": "default.regexMatch", "parameters": {"rule": "\\d{4}-\\d{4}", "not": true}}], "on_fail": {"deny": true}}]}`})
	res, err := deny.CallTool(ctx, &mcp.CallToolParams{Name: "files__structured"})
	if err != nil || !res.IsError || !strings.Contains(textOf(t, res), "no-cards") || res.StructuredContent != nil {
		t.Errorf("structured content past a deny: %v %+v %v", err, res, res.StructuredContent)
	}
	compact := strings.Join(strings.Fields(toolHooksConfig), " ")
	redact := tf.connect(t, ctx, tf.plain, map[string]string{HeaderConfig: compact})
	res, err = redact.CallTool(ctx, &mcp.CallToolParams{Name: "files__structured"})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(res)
	if strings.Contains(string(raw), "4111") || !strings.Contains(textOf(t, res), "done") {
		t.Errorf("structured content past a redaction: %s", raw)
	}
}

// resultText: text items joined; structured content added unless a text item is its JSON already (what the
// SDK's typed tools send), so that a check sees each once.
func TestResultText(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  *mcp.CallToolResult
		want string
	}{
		{"texts", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.ImageContent{Data: []byte("x")}, &mcp.TextContent{Text: "b"}}}, "a\nb"},
		{"structured only", &mcp.CallToolResult{StructuredContent: map[string]any{"k": 1}}, `{"k":1}`},
		{"structured echoed in text", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{\"k\": 1}\n"}},
			StructuredContent: map[string]any{"k": 1}}, "{\"k\": 1}\n"},
		{"structured apart", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}},
			StructuredContent: map[string]any{"k": 1}}, "done\n{\"k\":1}"},
		{"embedded text resource", &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a", Text: "r"}}}}, "r"},
	} {
		if got := resultText(tc.res); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A before_tool_call transformer's arguments are what the server gets, and what the log keeps; a transformer
// that leaves something else than a JSON object refuses the call before the server.
func TestMCPToolBeforeTransformerForwarded(t *testing.T) {
	tf := newToolsFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := tf.connect(t, ctx, tf.plain, map[string]string{HeaderConfig: `{"before_tool_call": [{"id": "hide", "checks": [{"id": "default.regexReplace", "parameters": {"rule": "secret", "replacement": "hidden"}}]}]}`})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__echo", Arguments: map[string]string{"say": "secret"}})
	if err != nil || res.IsError || !strings.Contains(textOf(t, res), `"hidden"`) || strings.Contains(textOf(t, res), "secret") {
		t.Fatalf("transformed call: %v %+v", err, res)
	}
	broken := tf.connect(t, ctx, tf.plain, map[string]string{HeaderConfig: `{"before_tool_call": [{"id": "quotes", "checks": [{"id": "default.regexReplace", "parameters": {"rule": "\"", "replacement": "'"}}]}]}`})
	res, err = broken.CallTool(ctx, &mcp.CallToolParams{Name: "files__echo", Arguments: map[string]string{"say": "x"}})
	if err != nil || !res.IsError || !strings.Contains(textOf(t, res), "not a JSON object") {
		t.Fatalf("arguments made invalid: %v %+v", err, res)
	}
	if n := tf.upstreamCalls("echo"); n != 1 {
		t.Errorf("echo reached %d times, want 1", n)
	}
	tf.logs.Close()
	page, err := tf.store.Logs.List(storage.LogQuery{WorkspaceID: tf.ws.ID, Tool: "echo"})
	if err != nil || len(page.Entries) != 2 {
		t.Fatalf("entries: %v %d", err, len(page.Entries))
	}
	forwarded := page.Entries[1] // oldest last
	if err := tf.store.Logs.GetBodies(forwarded); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(forwarded.Request), "hidden") || strings.Contains(string(forwarded.Request), "secret") {
		t.Errorf("logged call %s, want the arguments the server got", forwarded.Request)
	}
}

// A tool name past maxToolNameBytes (any key holder can send one: the name reaches the Interceptor unchecked
// against the server's list) is refused before limits, hooks, the log and the metrics, which would keep it.
func TestMCPToolHugeNameRefused(t *testing.T) {
	tf := newToolsFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := tf.connect(t, ctx, tf.plain, nil)
	long := strings.Repeat("x", 64<<10)
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__" + long})
	if err == nil || !strings.Contains(err.Error(), "name") || len(err.Error()) > 1000 {
		t.Fatalf("huge name: %.300v", err)
	}
	mfs, err := tf.srv.Metrics().Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "gateway_tool_call") {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label(m, "tool") != "" && len(label(m, "tool")) > maxToolNameBytes {
				t.Errorf("%s has a tool label of %d bytes", mf.GetName(), len(label(m, "tool")))
			}
		}
	}
	tf.logs.Close()
	page, err := tf.store.Logs.List(storage.LogQuery{WorkspaceID: tf.ws.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Entries {
		if len(e.Tool) > maxToolNameBytes {
			t.Errorf("a log entry keeps a tool name of %d bytes", len(e.Tool))
		}
	}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// Config errors: a JSON-RPC error naming x-gateway-config (and the field), no server reached, a log entry
// with the config's status; an inline config's secrets are not quoted. A saved config is read per call.
func TestMCPToolConfigErrors(t *testing.T) {
	tf := newToolsFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct{ config, field string }{
		{"no-such-config", "not found"},
		{`{"api_key": "sk-SECRET-1", "provider": "nope", "before_tool_call": []}`, "provider"},
		{`{"api_key": "sk-SECRET-1", "provider": "openai", "before_tool_call": [{"id": "x", "checks": [{"id": "nope.check", "parameters": {}}]}]}`, "before_tool_call[0].checks[0].id"},
		{`{"api_key": "sk-SECRET-1", "after_tool_call": [{"id": "x", "checks": [{"id": "default.regexMatch", "parameters": {"rule": "("}}]}]}`, "after_tool_call[0].checks[0].parameters.rule"},
	} {
		cs := tf.connect(t, ctx, tf.plain, map[string]string{HeaderConfig: tc.config})
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__echo"})
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || !strings.Contains(rpc.Message, HeaderConfig) || !strings.Contains(rpc.Message, tc.field) || strings.Contains(rpc.Message, "SECRET") {
			t.Errorf("config %s: %v", tc.config, err)
		}
	}
	if n := tf.upstreamCalls("echo"); n != 0 {
		t.Errorf("a call with a bad config reached the server %d times", n)
	}

	// A saved config changed between two calls: the second call runs the new one.
	put := func(cfg string) {
		if _, err := tf.store.Configs.Put(tf.ws.ID, "tools", &storage.Config{ID: "tools", WorkspaceID: tf.ws.ID, Config: json.RawMessage(cfg)}); err != nil {
			t.Fatal(err)
		}
	}
	put(`{"before_tool_call": [{"id": "first", "checks": [{"id": "default.contains", "parameters": {"operator": "none", "words": ["alpha"]}}], "on_fail": {"deny": true}}]}`)
	cs := tf.connect(t, ctx, tf.plain, map[string]string{HeaderConfig: "tools"})
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__echo", Arguments: map[string]string{"w": "beta"}}); err != nil || res.IsError {
		t.Fatalf("first config: %v %+v", err, res)
	}
	put(`{"before_tool_call": [{"id": "second", "checks": [{"id": "default.contains", "parameters": {"operator": "none", "words": ["beta"]}}], "on_fail": {"deny": true}}]}`)
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__echo", Arguments: map[string]string{"w": "beta"}}); err != nil || !res.IsError || !strings.Contains(textOf(t, res), "second") {
		t.Fatalf("changed config: %v %+v", err, res)
	}

	tf.logs.Close()
	page, err := tf.store.Logs.List(storage.LogQuery{WorkspaceID: tf.ws.ID, Tool: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[int]int{}
	for _, e := range page.Entries {
		statuses[e.Status]++
	}
	if statuses[404] != 1 || statuses[400] != 3 {
		t.Errorf("log statuses %v, want one 404 and three 400", statuses)
	}
	if v := toolCount(t, tf, "echo", "invalid"); v != 4 {
		t.Errorf("invalid count %v, want 4", v)
	}
}

// Tool policies and model policies count apart, through the routes: a model request does not use up a tool
// policy, a tool call does not use up a model one.
func TestMCPToolPoliciesApartFromModelPolicies(t *testing.T) {
	tf := newToolsFixture(t)
	for id, p := range map[string]*storage.RateLimitPolicy{
		"tools-1":  {Conditions: []storage.PolicyMatch{{Key: "mcp_server", Value: "files"}}},
		"models-1": {GroupBy: []storage.PolicyGroup{{Key: "api_key"}}},
	} {
		p.ID, p.WorkspaceID, p.OrganisationID, p.Type, p.Unit, p.Value, p.Status = id, tf.ws.ID, tf.ws.OrganisationID, "requests", "rpm", 1, "active"
		if _, err := tf.store.Policies.Put(tf.ws.ID, id, p); err != nil {
			t.Fatal(err)
		}
	}
	up := newUpstream(t, nil)
	if a := tf.chat(t, chatBody, upstreamHeaders(up)...); a.status != 200 {
		t.Fatalf("first model request: %d %s", a.status, a.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := tf.connect(t, ctx, tf.plain, nil)
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__echo"}); err != nil || res.IsError {
		t.Fatalf("first tool call, after a model request: %v %+v", err, res)
	}
	checkError(t, tf.chat(t, chatBody, upstreamHeaders(up)...), 429, "rate_limited", nil)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__read_file"})
	if err != nil || !res.IsError || !strings.Contains(textOf(t, res), "tools-1") || strings.Contains(textOf(t, res), "models-1") {
		t.Fatalf("second tool call: %v %+v", err, res)
	}
	if up.calls.Load() != 1 || tf.upstreamCalls("read_file") != 0 {
		t.Errorf("upstream calls: model %d, read_file %d", up.calls.Load(), tf.upstreamCalls("read_file"))
	}
}

// Arguments of 4 MiB and a result of 16 MiB go through hooks (a deny check sees the result's last bytes); the
// stored entry is cut at MaxBodyBytes. (A transformer on such a result: BenchmarkToolCallInterceptHuge.)
func TestMCPToolHugePayloadsBounded(t *testing.T) {
	tf := newToolsFixture(t)
	srv := &storage.MCPServer{ID: "files", WorkspaceID: tf.ws.ID, URL: "http://127.0.0.1:1/mcp"}
	args := json.RawMessage(`{"blob":"` + strings.Repeat("a", 4<<20) + `"}`)
	big := strings.Repeat("a", 16<<20-20) + " PRIVATE KEY"
	var got json.RawMessage
	forward := func(_ context.Context, a json.RawMessage) (*mcp.CallToolResult, error) {
		got = a
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: big}}}, nil
	}
	config := `{"before_tool_call": [{"id": "args", "checks": [{"id": "default.contains", "parameters": {"operator": "none", "words": ["PRIVATE KEY"]}}], "on_fail": {"deny": true}}],
		"after_tool_call": [{"id": "keys", "checks": [{"id": "default.contains", "parameters": {"operator": "none", "words": ["PRIVATE KEY"]}}], "on_fail": {"deny": true}}]}`
	caller := &mcpgw.Caller{WorkspaceID: tf.ws.ID, APIKeyID: "k", TraceID: "t", Config: config}
	res, err := tf.srv.interceptToolCall(context.Background(), &mcpgw.ToolCall{Caller: caller, Server: srv, Tool: "echo",
		Name: "files__echo", Arguments: args}, forward)
	if err != nil || len(got) != len(args) {
		t.Fatalf("huge call: %v, forwarded %d bytes", err, len(got))
	}
	if !res.IsError || !strings.Contains(textOf(t, res), `"keys"`) {
		t.Errorf("huge result not denied: %.100q", textOf(t, res))
	}
	tf.logs.Close()
	page, err := tf.store.Logs.List(storage.LogQuery{WorkspaceID: tf.ws.ID, Tool: "echo"})
	if err != nil || len(page.Entries) != 1 {
		t.Fatalf("entries: %v", err)
	}
	e := page.Entries[0]
	if err := tf.store.Logs.GetBodies(e); err != nil {
		t.Fatal(err)
	}
	if len(e.Request) > reqlog.DefaultMaxBodyBytes+64 || len(e.Response) > reqlog.DefaultMaxBodyBytes+64 {
		t.Errorf("stored bodies of %d and %d bytes", len(e.Request), len(e.Response))
	}
}

// A JSON-RPC error the server answers reaches the agent as a result would: after_tool_call sees its message
// and data, and may deny or redact it.
func TestMCPToolServerErrorChecked(t *testing.T) {
	tf := newToolsFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	plain := tf.connect(t, ctx, tf.plain, nil)
	if _, err := plain.CallTool(ctx, &mcp.CallToolParams{Name: "files__fail"}); err == nil || !strings.Contains(err.Error(), "4111") {
		t.Fatalf("without hooks the server's error passes as it is: %v", err)
	}
	redact := tf.connect(t, ctx, tf.plain, map[string]string{HeaderConfig: strings.Join(strings.Fields(toolHooksConfig), " ")})
	_, err := redact.CallTool(ctx, &mcp.CallToolParams{Name: "files__fail"})
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || strings.Contains(err.Error(), "4111") || len(rpc.Data) != 0 || !strings.Contains(rpc.Message, "[card]") {
		t.Errorf("redacted server error: %v (data %s)", err, rpc.Data)
	}
	deny := tf.connect(t, ctx, tf.plain, map[string]string{HeaderConfig: `{"after_tool_call": [{"id": "no-cards", "checks": [{"id": "default.regexMatch", "parameters": {"rule": "\\d{4}-\\d{4}", "not": true}}], "on_fail": {"deny": true}}]}`})
	res, err := deny.CallTool(ctx, &mcp.CallToolParams{Name: "files__fail"})
	if err != nil || !res.IsError || !strings.Contains(textOf(t, res), "no-cards") || strings.Contains(textOf(t, res), "4111") {
		t.Errorf("denied server error: %v %+v", err, res)
	}
	if v := toolCount(t, tf, "fail", "denied"); v != 1 {
		t.Errorf("denied count %v", v)
	}
}

// logText keeps one line of at most 300 bytes, cut between runes.
func TestLogTextCutsBetweenRunes(t *testing.T) {
	got := logText(strings.Repeat("é", 200) + "\nsecond line")
	if !utf8.ValidString(got) || len(got) > 300+len("…") || strings.Contains(got, "second") {
		t.Errorf("logText: %q", got)
	}
}
