package routes

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/reqlog"
	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
	"github.com/llmgw/gateway/storage"
)

// logsFixture is a fixture whose server stores request logs (bodies as asked), with its slog output.
type logsFixture struct {
	*fixture
	w    *reqlog.Writer
	slog *bytes.Buffer
}

func newLogsFixture(t *testing.T, bodies bool) *logsFixture {
	t.Helper()
	var lines bytes.Buffer
	f := newFixture(t, Options{Logger: slog.New(slog.NewTextHandler(&lines, nil))})
	w := reqlog.New(f.store.Logs, reqlog.Options{Bodies: bodies, FlushWindow: time.Millisecond})
	t.Cleanup(func() { w.Close() })
	f.srv.logs = w
	return &logsFixture{fixture: f, w: w, slog: &lines}
}

// logList answers GET /v1/logs?query with key, which must succeed.
func (f *logsFixture) list(t *testing.T, key, query string) (ids []string, entries []map[string]any, more bool, next string) {
	t.Helper()
	a := f.do(t, "GET", "/v1/logs?"+query, "", HeaderAPIKey, key)
	if a.status != 200 {
		t.Fatalf("GET /v1/logs?%s = %d %s", query, a.status, a.body)
	}
	var l struct {
		Object    string           `json:"object"`
		Data      []map[string]any `json:"data"`
		HasMore   bool             `json:"has_more"`
		NextAfter string           `json:"next_after"`
	}
	if err := json.Unmarshal(a.body, &l); err != nil || l.Object != "list" {
		t.Fatalf("list %s: %v", a.body, err)
	}
	for _, e := range l.Data {
		ids = append(ids, e["id"].(string))
	}
	return ids, l.Data, l.HasMore, l.NextAfter
}

func TestLogsThroughRoutes(t *testing.T) {
	f := newLogsFixture(t, true)
	up := newUpstream(t, nil)
	h := upstreamHeaders(up) // Authorization: Bearer sk-test
	if a := f.chat(t, chatBody, append(h, HeaderMetadata, `{"team":"red"}`, HeaderTraceID, "trace-red")...); a.status != 200 {
		t.Fatalf("chat: %d %s", a.status, a.body)
	}
	inline := `{"provider":"openai","api_key":"sk-inline-secret-1234","custom_host":"` + up.URL + `/v1"}`
	if a := f.chat(t, chatBody, HeaderConfig, inline, HeaderMetadata, `{"team":"blue"}`); a.status != 200 {
		t.Fatalf("chat with an inline config: %d %s", a.status, a.body)
	}
	// A request that fails before any provider answers.
	failed := f.chat(t, `{"model":"m-fail","messages":[{"role":"user","content":"Hi"}]}`, HeaderProvider, "no-such-provider")
	if failed.status < 400 {
		t.Fatalf("chat with an unknown provider: %d %s", failed.status, failed.body)
	}
	f.w.Close() // writes what is queued

	ids, entries, more, _ := f.list(t, f.admin, "")
	if len(ids) != 3 || more {
		t.Fatalf("%d entries (more %v), want 3", len(ids), more)
	}
	red := entries[2]
	for k, want := range map[string]any{"trace_id": "trace-red", "workspace_id": f.ws.ID, "endpoint": "chat/completions",
		"provider": "openai", "model": "gpt-4o-mini", "status": 200.0, "cache_status": red["cache_status"], "retries": 0.0} {
		if red[k] != want {
			t.Errorf("%s = %v, want %v", k, red[k], want)
		}
	}
	if u, _ := red["usage"].(map[string]any); u["input_tokens"] != 5.0 || u["output_tokens"] != 2.0 {
		t.Errorf("usage = %v", red["usage"])
	}
	if _, ok := red["request"]; ok {
		t.Error("a listed entry has its request")
	}
	if _, ok := red["latency_ms"].(float64); !ok {
		t.Errorf("latency_ms = %v", red["latency_ms"])
	}

	// Filters.
	tests := []struct {
		query string
		want  []string
	}{
		{"metadata.team=blue", ids[1:2]},
		{"metadata.team=red&status=200", ids[2:3]},
		{"metadata.team=red&status=500", nil},
		{"trace_id=trace-red", ids[2:3]},
		{"model=gpt-4o-mini", ids[1:]},
		{"model=m-fail&status=" + strconv.Itoa(failed.status), ids[:1]},
		{"status=200", ids[1:]},
		{"provider=openai&limit=1", ids[1:2]},
		{"from=" + url.QueryEscape("0") + "&to=4102444800", ids},
	}
	for _, tc := range tests {
		if got, _, _, _ := f.list(t, f.admin, tc.query); strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: %v, want %v", tc.query, got, tc.want)
		}
	}
	// Cursor.
	first, _, more, next := f.list(t, f.admin, "limit=1")
	if len(first) != 1 || !more || next != first[0] {
		t.Fatalf("limit=1: %v more %v next %q", first, more, next)
	}
	second, _, _, _ := f.list(t, f.admin, "limit=1&after="+next)
	if len(second) != 1 || second[0] != ids[1] {
		t.Fatalf("after %s: %v, want %s", next, second, ids[1])
	}

	// One entry, with its bodies.
	a := f.do(t, "GET", "/v1/logs/"+ids[2], "", HeaderAPIKey, f.admin)
	if a.status != 200 {
		t.Fatalf("GET one: %d %s", a.status, a.body)
	}
	one := a.json(t)
	if !bytes.Contains(a.body, []byte(`"request":`+chatBody)) {
		t.Errorf("GET %s = %s, want the request %s as it came", ids[2], a.body, chatBody)
	}
	if one["response"].(map[string]any)["id"] != "chatcmpl-1" {
		t.Errorf("response = %v", one["response"])
	}

	// Scope: a plain key, another workspace's admin, an organisation admin.
	checkError(t, f.do(t, "GET", "/v1/logs", "", HeaderAPIKey, f.plain), 403, gwerr.CodeForbidden, nil)
	checkError(t, f.do(t, "GET", "/v1/logs/"+ids[0], "", HeaderAPIKey, f.plain), 403, gwerr.CodeForbidden, nil)
	checkError(t, f.do(t, "GET", "/v1/logs/"+ids[0], "", HeaderAPIKey, f.otherKey), 404, gwerr.CodeNotFound, nil)
	if got, _, _, _ := f.list(t, f.otherKey, ""); len(got) != 0 {
		t.Errorf("another workspace's admin lists %v", got)
	}
	checkError(t, f.do(t, "GET", "/v1/logs?workspace_id=other", "", HeaderAPIKey, f.admin), 403, gwerr.CodeForbidden, nil)
	org := f.orgAdmin(t)
	if got, _, _, _ := f.list(t, org, "workspace_id=default"); len(got) != 3 {
		t.Errorf("organisation admin, workspace default: %v", got)
	}
	if got, _, _, _ := f.list(t, org, "workspace_id=other"); len(got) != 0 {
		t.Errorf("organisation admin, workspace other: %v", got)
	}
	if a := f.do(t, "GET", "/v1/logs/"+ids[0], "", HeaderAPIKey, org); a.status != 200 {
		t.Errorf("organisation admin GET: %d %s", a.status, a.body)
	}

	// Secrets: never in an entry, a body or the log line.
	all := f.do(t, "GET", "/v1/logs", "", HeaderAPIKey, f.admin).body
	for _, id := range ids {
		all = append(all, f.do(t, "GET", "/v1/logs/"+id, "", HeaderAPIKey, f.admin).body...)
	}
	all = append(all, f.slog.Bytes()...)
	for _, secret := range []string{"sk-test", "sk-inline-secret-1234", f.plain, "Bearer"} {
		if bytes.Contains(all, []byte(secret)) {
			t.Errorf("%q is stored or logged", secret)
		}
	}
}

func TestLogsBodiesOff(t *testing.T) {
	f := newLogsFixture(t, false)
	up := newUpstream(t, nil)
	if a := f.chat(t, chatBody, upstreamHeaders(up)...); a.status != 200 {
		t.Fatalf("chat: %d %s", a.status, a.body)
	}
	f.w.Close()
	ids, _, _, _ := f.list(t, f.admin, "")
	if len(ids) != 1 {
		t.Fatalf("entries %v", ids)
	}
	one := f.do(t, "GET", "/v1/logs/"+ids[0], "", HeaderAPIKey, f.admin).json(t)
	if _, ok := one["request"]; ok {
		t.Errorf("request stored without --log-bodies: %v", one)
	}
	if _, ok := one["response"]; ok {
		t.Errorf("response stored without --log-bodies: %v", one)
	}
}

func TestLogsQueryErrors(t *testing.T) {
	f := newLogsFixture(t, false)
	tests := []struct{ query, param string }{
		{"status=abc", "status"},
		{"status=99", "status"},
		{"status=600", "status"},
		{"limit=0", "limit"},
		{"limit=101", "limit"},
		{"from=yesterday", "from"},
		{"to=-1", "to"},
		{"from=20&to=10", "to"},
		{"after=file-1", "after"},
		{"metadata.a=1&metadata.a=2", "metadata.a"},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			checkError(t, f.do(t, "GET", "/v1/logs?"+tc.query, "", HeaderAPIKey, f.admin), 400, gwerr.CodeInvalidRequest, tc.param)
		})
	}
	checkError(t, f.do(t, "GET", "/v1/logs/log_nope", "", HeaderAPIKey, f.admin), 404, gwerr.CodeNotFound, nil)
}

// TestLogsWithoutWriter shows that a server without a log writer serves inference as before and lists nothing.
func TestLogsWithoutWriter(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, nil)
	if a := f.chat(t, chatBody, upstreamHeaders(up)...); a.status != 200 {
		t.Fatalf("chat: %d %s", a.status, a.body)
	}
	a := f.do(t, "GET", "/v1/logs", "", HeaderAPIKey, f.admin)
	if a.status != 200 || len(a.json(t)["data"].([]any)) != 0 {
		t.Fatalf("GET /v1/logs = %d %s", a.status, a.body)
	}
}

// BenchmarkObserveStoredLogs is BenchmarkObserveMetricsOnly with stored request logs on: the difference is
// storeLog's share of a request (the entry it makes, and Record). The writer stores in the background; what
// it cannot keep up with is dropped, as in production.
func BenchmarkObserveStoredLogs(b *testing.B) {
	f := newFixture(b, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	w := reqlog.New(f.store.Logs, reqlog.Options{})
	defer w.Close()
	f.srv.logs = w
	body, err := schema.ReadBody([]byte(chatBody))
	if err != nil {
		b.Fatal(err)
	}
	req := &runtime.Request{Endpoint: providers.ChatCompletions, Body: body, TraceID: "trace", Key: &storage.APIKey{WorkspaceID: f.ws.ID}}
	resp := &runtime.Response{Status: 200, Body: []byte(chatAnswer), Provider: "openai", OptionPath: "config.targets[0]", CacheStatus: "DISABLED"}
	ctx, start := context.Background(), time.Now()
	b.ReportAllocs()
	for b.Loop() {
		f.srv.observe(ctx, start, req, resp, 200, false, streamTimes{})
	}
}
