package routes

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// routeStep is one step of GET /v1/logs/{id}'s route.
type routeStep struct {
	Path      string   `json:"path"`
	Provider  string   `json:"provider"`
	Attempt   int      `json:"attempt"`
	Status    int      `json:"status"`
	LatencyMS *float64 `json:"latency_ms"`
	Outcome   string   `json:"outcome"`
	Error     *string  `json:"error"`
}

// storyOf makes one request and returns its stored entry as GET /v1/logs/{id} gives it: its route and the
// raw hook_results.
func (f *logsFixture) storyOf(t *testing.T, wantStatus int, headers ...string) ([]routeStep, json.RawMessage, map[string]json.RawMessage) {
	t.Helper()
	before, _, _, _ := f.list(t, f.admin, "limit=1")
	if a := f.chat(t, chatBody, headers...); a.status != wantStatus {
		t.Fatalf("chat = %d %s, want %d", a.status, a.body, wantStatus)
	}
	deadline := time.Now().Add(10 * time.Second)
	var ids []string
	for {
		ids, _, _, _ = f.list(t, f.admin, "limit=1")
		if len(ids) == 1 && (len(before) == 0 || ids[0] != before[0]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the request's log entry was not written")
		}
		time.Sleep(2 * time.Millisecond)
	}
	a := f.do(t, "GET", "/v1/logs/"+ids[0], "", HeaderAPIKey, f.admin)
	if a.status != 200 {
		t.Fatalf("GET /v1/logs/%s = %d %s", ids[0], a.status, a.body)
	}
	var e map[string]json.RawMessage
	if err := json.Unmarshal(a.body, &e); err != nil {
		t.Fatal(err)
	}
	raw, ok := e["route"]
	if !ok {
		t.Fatalf("no route in %s", a.body)
	}
	var route []routeStep
	if err := json.Unmarshal(raw, &route); err != nil {
		t.Fatalf("route %s: %v", raw, err)
	}
	for _, s := range route {
		if s.LatencyMS == nil || s.Error == nil {
			t.Errorf("step %+v lacks latency_ms or error", s)
		}
	}
	hooks, ok := e["hook_results"]
	if !ok {
		t.Fatalf("no hook_results in %s", a.body)
	}
	return route, hooks, e
}

func steps(route []routeStep) string {
	var b strings.Builder
	for _, s := range route {
		fmt.Fprintf(&b, "%s/%d:%d:%s;", s.Path, s.Attempt, s.Status, s.Outcome)
	}
	return b.String()
}

// TestLogRoute: GET /v1/logs/{id} tells the request's route (every target tried, retries, breaker skips) and its
// hook results; a listed entry has neither.
func TestLogRoute(t *testing.T) {
	f := newLogsFixture(t, false)
	down := newUpstream(t, status(502, `{"error":{"message":"upstream is down"}}`))
	good := newUpstream(t, nil)
	target := func(u *upstream, extra string) string {
		return fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q%s}`, u.URL+"/v1", extra)
	}

	// A fallback whose first target fails: two steps, the first an error with the upstream's message.
	cfg := `{"strategy":{"mode":"fallback"},"targets":[` + target(down, "") + `,` + target(good, "") + `]}`
	route, hooks, _ := f.storyOf(t, 200, HeaderConfig, cfg)
	if got, want := steps(route), "config.targets[0]/0:502:error;config.targets[1]/0:200:ok;"; got != want {
		t.Fatalf("fallback route = %s, want %s", got, want)
	}
	if *route[0].Error != "upstream is down" || route[0].Provider != "openai" || *route[1].Error != "" {
		t.Errorf("fallback steps = %+v", route)
	}
	if string(hooks) != "null" {
		t.Errorf("hook_results = %s, want null without hooks", hooks)
	}

	// A retry: the same target twice, attempts 0 and 1.
	flaky := newUpstream(t, func(w http.ResponseWriter, r *http.Request, call int64) {
		if call == 1 {
			status(503, `{"error":{"message":"busy"}}`)(w, r, call)
			return
		}
		status(200, chatAnswer)(w, r, call)
	})
	route, _, _ = f.storyOf(t, 200, HeaderConfig, target(flaky, `,"retry":{"attempts":2}`))
	if got, want := steps(route), "config/0:503:error;config/1:200:ok;"; got != want {
		t.Fatalf("retry route = %s, want %s", got, want)
	}

	// An open breaker: the failing target is skipped, without a call.
	cb := `{"strategy":{"mode":"fallback"},"cb_config":{"failure_threshold":1,"cooldown_interval":60000},"targets":[` +
		target(down, "") + `,` + target(good, "") + `]}`
	f.storyOf(t, 200, HeaderConfig, cb) // opens the first target's breaker
	calls := down.calls.Load()
	route, _, _ = f.storyOf(t, 200, HeaderConfig, cb)
	if got, want := steps(route), "config.targets[0]/0:0:circuit_open;config.targets[1]/0:200:ok;"; got != want {
		t.Fatalf("breaker route = %s, want %s", got, want)
	}
	if down.calls.Load() != calls {
		t.Error("the open target was called")
	}

	// Hook results: the before side's verdicts, with a check's data left out.
	hooked := target(good, `,"before_request_hooks":[{"id":"short","checks":[{"id":"default.wordCount","parameters":{"minWords":0,"maxWords":50}}]}]`)
	route, hooks, _ = f.storyOf(t, 200, HeaderConfig, hooked)
	if got := steps(route); got != "config/0:200:ok;" {
		t.Errorf("hooked route = %s", got)
	}
	var hr struct {
		Before []struct {
			ID     string `json:"id"`
			Checks []struct {
				ID   string          `json:"id"`
				Data json.RawMessage `json:"data"`
			} `json:"checks"`
		} `json:"before_request_hooks"`
		After []json.RawMessage `json:"after_request_hooks"`
	}
	if err := json.Unmarshal(hooks, &hr); err != nil || len(hr.Before) != 1 || hr.Before[0].ID != "short" ||
		len(hr.Before[0].Checks) != 1 || string(hr.Before[0].Checks[0].Data) != "null" || hr.After == nil {
		t.Errorf("hook_results = %s (%v)", hooks, err)
	}

	// A failure with no answer at all still has its route: every target open, 503.
	only := target(down, `,"cb_config":{"failure_threshold":1,"cooldown_interval":60000}`)
	route, _, _ = f.storyOf(t, 503, HeaderConfig, only)
	if got, want := steps(route), "config/0:0:circuit_open;"; got != want {
		t.Fatalf("all-open route = %s, want %s", got, want)
	}

	// The list leaves route and hook_results out.
	_, entries, _, _ := f.list(t, f.admin, "")
	for _, e := range entries {
		if _, ok := e["route"]; ok {
			t.Fatalf("a listed entry has a route: %v", e)
		}
		if _, ok := e["hook_results"]; ok {
			t.Fatalf("a listed entry has hook_results: %v", e)
		}
	}
}

// statsAnswer is GET /v1/logs/stats's answer.
type statsAnswer struct {
	Object        string `json:"object"`
	BucketSeconds int64  `json:"bucket_seconds"`
	Truncated     bool   `json:"truncated"`
	Data          []struct {
		T            int64    `json:"t"`
		Requests     int64    `json:"requests"`
		Errors       int64    `json:"errors"`
		P50          float64  `json:"p50_ms"`
		P99          float64  `json:"p99_ms"`
		InputTokens  int64    `json:"input_tokens"`
		OutputTokens int64    `json:"output_tokens"`
		CostUSD      *float64 `json:"cost_usd"`
	} `json:"data"`
}

func (f *fixture) stats(t *testing.T, key, query string) statsAnswer {
	t.Helper()
	a := f.do(t, "GET", "/v1/logs/stats?"+query, "", HeaderAPIKey, key)
	if a.status != 200 {
		t.Fatalf("GET /v1/logs/stats?%s = %d %s", query, a.status, a.body)
	}
	var s statsAnswer
	if err := json.Unmarshal(a.body, &s); err != nil || s.Object != "list" {
		t.Fatalf("stats %s: %v", a.body, err)
	}
	return s
}

func TestLogStats(t *testing.T) {
	f := newFixture(t, Options{})
	const base = 1_800_000_000 // a minute's start
	var entries []*storage.LogEntry
	add := func(ws string, at int64, status int, latency time.Duration, in, out int64, cost float64) {
		e := &storage.LogEntry{WorkspaceID: ws, CreatedAt: time.Unix(at, 0), Status: status, Latency: latency,
			Metadata: map[string]string{}}
		if in > 0 {
			e.Usage = storage.LogUsage{InputTokens: in, OutputTokens: out, Known: true}
			e.CostUSD, e.CostKnown = cost, true
		}
		entries = append(entries, e)
	}
	// Minute 0: 100 requests of 1..100 ms, two of them errors; minute 2: one request; minute 3: another
	// workspace's only; one before the range and one at its end (excluded).
	for i := 1; i <= 100; i++ {
		status := 200
		if i == 7 || i == 50 {
			status = 500 + i%2
		}
		add(f.ws.ID, base+int64(i%60), status, time.Duration(i)*time.Millisecond, 10, 2, 0.001)
	}
	add(f.ws.ID, base+120+5, 429, 40*time.Millisecond, 0, 0, 0)
	add(f.other.ID, base+180, 200, time.Millisecond, 1, 1, 0.5)
	add(f.ws.ID, base-1, 200, time.Millisecond, 1, 1, 0)
	add(f.ws.ID, base+240, 200, time.Millisecond, 1, 1, 0)
	if err := f.store.Logs.Append(entries); err != nil {
		t.Fatal(err)
	}

	q := fmt.Sprintf("from=%d&to=%d&bucket=60", base, base+240)
	s := f.stats(t, f.admin, q)
	if s.BucketSeconds != 60 || s.Truncated || len(s.Data) != 2 {
		t.Fatalf("stats = %+v, want two buckets of 60 s", s)
	}
	m0, m2 := s.Data[0], s.Data[1]
	if m0.T != base || m0.Requests != 100 || m0.Errors != 2 || m0.P50 != 50 || m0.P99 != 99 ||
		m0.InputTokens != 1000 || m0.OutputTokens != 200 || m0.CostUSD == nil || *m0.CostUSD < 0.0999 || *m0.CostUSD > 0.1001 {
		t.Errorf("minute 0 = %+v", m0)
	}
	if m2.T != base+120 || m2.Requests != 1 || m2.Errors != 1 || m2.P50 != 40 || m2.P99 != 40 || m2.InputTokens != 0 {
		t.Errorf("minute 2 = %+v", m2)
	}

	// One bucket over the range.
	if s := f.stats(t, f.admin, fmt.Sprintf("from=%d&to=%d&bucket=3600", base, base+240)); len(s.Data) != 1 || s.Data[0].Requests != 101 {
		t.Errorf("one bucket: %+v", s.Data)
	}
	// Workspace isolation: another workspace's admin sees its own entry only; an organisation admin sees all,
	// or one workspace's.
	if s := f.stats(t, f.otherKey, q); len(s.Data) != 1 || s.Data[0].T != base+180 || s.Data[0].Requests != 1 {
		t.Errorf("other workspace: %+v", s.Data)
	}
	org := f.orgAdmin(t)
	if s := f.stats(t, org, q); len(s.Data) != 3 {
		t.Errorf("organisation admin: %+v", s.Data)
	}
	if s := f.stats(t, org, q+"&workspace_id=other"); len(s.Data) != 1 {
		t.Errorf("organisation admin, workspace other: %+v", s.Data)
	}
	checkError(t, f.do(t, "GET", "/v1/logs/stats?"+q+"&workspace_id=other", "", HeaderAPIKey, f.admin), 403, gwerr.CodeForbidden, nil)
	checkError(t, f.do(t, "GET", "/v1/logs/stats", "", HeaderAPIKey, f.plain), 403, gwerr.CodeForbidden, nil)
	// Defaults: the last hour, in minutes (nothing there).
	if s := f.stats(t, f.admin, ""); s.BucketSeconds != 60 || len(s.Data) != 0 || s.Data == nil {
		t.Errorf("defaults: %+v", s)
	}
}

func TestLogStatsErrors(t *testing.T) {
	f := newFixture(t, Options{})
	tests := []struct{ query, param string }{
		{"from=abc", "from"},
		{"from=-5&to=10", "from"},
		{"to=1.5", "to"},
		{"from=10&to=10", "to"},
		{"from=20&to=10", "to"},
		{"bucket=0", "bucket"},
		{"bucket=86401", "bucket"},
		{"bucket=x", "bucket"},
		{"from=0&to=60001&bucket=60", "bucket"}, // 1001 buckets
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			checkError(t, f.do(t, "GET", "/v1/logs/stats?"+tc.query, "", HeaderAPIKey, f.admin), 400, gwerr.CodeInvalidRequest, tc.param)
		})
	}
	if a := f.do(t, "GET", "/v1/logs/stats?from=0&to=60000&bucket=60", "", HeaderAPIKey, f.admin); a.status != 200 {
		t.Errorf("1000 buckets: %d %s", a.status, a.body)
	}
}

// TestConsoleRoutes: the console is served without a key, at /console and /console/ alike (no redirect), with
// its security headers; the rest of the gateway still asks for a key.
func TestConsoleRoutes(t *testing.T) {
	f := newFixture(t, Options{})
	for _, path := range []string{"/console", "/console/", "/console/index.html"} {
		a := f.do(t, "GET", path, "")
		if a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") ||
			!strings.Contains(string(a.body), "<html") {
			t.Fatalf("GET %s = %d %s %.80s", path, a.status, a.header.Get("Content-Type"), a.body)
		}
		if csp := a.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") ||
			a.header.Get("X-Content-Type-Options") != "nosniff" || a.header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("GET %s headers = %v", path, a.header)
		}
	}
	if a := f.do(t, "HEAD", "/console/", ""); a.status != 200 || len(a.body) != 0 {
		t.Errorf("HEAD /console/ = %d, %d bytes", a.status, len(a.body))
	}
	if a := f.do(t, "GET", "/console/no-such-file.js", ""); a.status != 404 || a.header.Get("Content-Security-Policy") == "" {
		t.Errorf("unknown file = %d %v", a.status, a.header)
	}
	if a := f.do(t, "GET", "/consolex", ""); a.status != 404 {
		t.Errorf("/consolex = %d", a.status)
	}
	checkError(t, f.do(t, "GET", "/v1/logs", ""), 401, gwerr.CodeMissingAPIKey, HeaderAPIKey)
}
