package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLogsThroughTheBinary sends requests through the built gateway to a local upstream and reads them back at
// /v1/logs: filters, cursor, one entry with its bodies (--log-bodies) and, after a restart without the flag,
// without them; the admin scopes; and that no credential is stored or logged.
func TestLogsThroughTheBinary(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(string(body), `"m-fail"`) {
			w.WriteHeader(500)
			io.WriteString(w, `{"error":{"message":"upstream broke","type":"server_error"}}`)
			return
		}
		io.WriteString(w, `{"id":"c-logs","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`)
	}))
	defer up.Close()

	const (
		admin, plain, other, org = "gw-logs-admin-key", "gw-logs-plain-key", "gw-logs-other-key", "gw-logs-org-key"
		callerSecret             = "sk-caller-secret-7777"
		inlineSecret             = "sk-inline-secret-8888"
		storedSecret             = "sk-stored-secret-9999"
	)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	boot := writeFile(t, dir, "bootstrap.json", fmt.Sprintf(`{
  "workspaces": [{"id": "11111111-1111-4111-8111-111111111111", "slug": "default", "organisation_id": "22222222-2222-4222-8222-222222222222"},
                 {"id": "44444444-4444-4444-8444-444444444444", "slug": "other", "organisation_id": "22222222-2222-4222-8222-222222222222"}],
  "api_keys": [{"key": %q, "workspace": "default", "admin": true}, {"key": %q, "workspace": "default"},
               {"key": %q, "workspace": "other", "admin": true},
               {"key": %q, "workspace": "default", "admin": true, "organisation_admin": true}],
  "providers": [{"slug": "mock", "workspace": "default", "provider": "openai", "api_key": %q, "custom_host": %q}]
}`, admin, plain, other, org, storedSecret, up.URL+"/v1"))
	env := []string{"GATEWAY_MASTER_KEY=" + strings.Repeat("cd", 32)}
	p := startGateway(t, env, "--listen", "127.0.0.1:0", "--data", data, "--bootstrap", boot, "--log-bodies")
	if p.base == "" {
		t.Fatalf("gateway did not start: %v", p.err)
	}
	chat := func(base, body string, headers ...string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-gateway-api-key", plain)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	const body = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}`
	if s := chat(p.base, body, "x-gateway-virtual-key", "mock", "x-gateway-metadata", `{"team":"red"}`,
		"x-gateway-trace-id", "trace-logs-red", "Authorization", "Bearer "+callerSecret); s != 200 {
		t.Fatalf("virtual key: %d", s)
	}
	inline := fmt.Sprintf(`{"provider":"openai","api_key":%q,"custom_host":%q}`, inlineSecret, up.URL+"/v1")
	if s := chat(p.base, body, "x-gateway-config", inline, "x-gateway-metadata", `{"team":"blue"}`); s != 200 {
		t.Fatalf("inline config: %d", s)
	}
	if s := chat(p.base, `{"model":"m-fail","messages":[{"role":"user","content":"Hi"}]}`, "x-gateway-virtual-key", "mock"); s != 500 {
		t.Fatalf("failing upstream: %d", s)
	}

	// rawGet answers GET path with key: its status and body as it came.
	var seen strings.Builder // every answer, searched for secrets at the end
	rawGet := func(base, path, key string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("x-gateway-api-key", key)
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		seen.Write(b)
		return resp.StatusCode, b
	}
	type entry struct {
		ID       string            `json:"id"`
		TraceID  string            `json:"trace_id"`
		Model    string            `json:"model"`
		Status   int               `json:"status"`
		Provider string            `json:"provider"`
		Target   string            `json:"target"`
		Metadata map[string]string `json:"metadata"`
		Usage    *struct {
			InputTokens int `json:"input_tokens"`
		} `json:"usage"`
		Request  json.RawMessage `json:"request"`
		Response json.RawMessage `json:"response"`
	}
	type list struct {
		Object    string  `json:"object"`
		Data      []entry `json:"data"`
		HasMore   bool    `json:"has_more"`
		NextAfter string  `json:"next_after"`
	}
	logs := func(base, query, key string) list {
		t.Helper()
		status, b := rawGet(base, "/v1/logs?"+query, key)
		var l list
		if status != 200 || json.Unmarshal(b, &l) != nil || l.Object != "list" {
			t.Fatalf("GET /v1/logs?%s: %d %s", query, status, b)
		}
		return l
	}
	// Entries are written in the background: wait for the three.
	var all list
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if all = logs(p.base, "", admin); len(all.Data) == 3 || time.Now().After(deadline) {
			break
		}
	}
	if len(all.Data) != 3 {
		t.Fatalf("%d entries, want 3: %+v", len(all.Data), all)
	}
	failed, blue, red := all.Data[0], all.Data[1], all.Data[2]
	if red.TraceID != "trace-logs-red" || red.Status != 200 || red.Provider != "openai" || red.Usage == nil || red.Usage.InputTokens != 5 ||
		red.Metadata["team"] != "red" || failed.Status != 500 || failed.Model != "m-fail" || blue.Metadata["team"] != "blue" {
		t.Fatalf("entries, newest first: %+v", all.Data)
	}
	if red.Request != nil {
		t.Error("a listed entry carries its request body")
	}
	ids := func(l list) string {
		var out []string
		for _, e := range l.Data {
			out = append(out, e.ID)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct{ query, want string }{
		{"status=500", failed.ID},
		{"model=gpt-4o-mini", blue.ID + "," + red.ID},
		{"metadata.team=red", red.ID},
		{"metadata.team=red&model=m-fail", ""},
		{"trace_id=trace-logs-red&status=200", red.ID},
		{"from=" + fmt.Sprint(time.Now().Add(time.Hour).Unix()), ""},
	} {
		if got := ids(logs(p.base, tc.query, admin)); got != tc.want {
			t.Errorf("?%s = %s, want %s", tc.query, got, tc.want)
		}
	}
	page := logs(p.base, "limit=1", admin)
	if ids(page) != failed.ID || !page.HasMore || page.NextAfter != failed.ID {
		t.Fatalf("limit=1: %+v", page)
	}
	if got := ids(logs(p.base, "limit=1&after="+page.NextAfter, admin)); got != blue.ID {
		t.Errorf("limit=1&after=: %s, want %s", got, blue.ID)
	}
	if status, b := rawGet(p.base, "/v1/logs?status=1000", admin); status != 400 || !strings.Contains(string(b), `"param":"status"`) {
		t.Errorf("status=1000: %d %s", status, b)
	}

	// One entry with its bodies.
	status, b := rawGet(p.base, "/v1/logs/"+red.ID, admin)
	var one entry
	if status != 200 || json.Unmarshal(b, &one) != nil || one.ID != red.ID {
		t.Fatalf("GET /v1/logs/%s: %d %s", red.ID, status, b)
	}
	if string(one.Request) != body || !strings.Contains(string(one.Response), `"id":"c-logs"`) {
		t.Errorf("bodies with --log-bodies: request %s, response %s", one.Request, one.Response)
	}

	// Scopes.
	if status, _ := rawGet(p.base, "/v1/logs", plain); status != 403 {
		t.Errorf("a key without the admin right lists logs: %d", status)
	}
	if status, _ := rawGet(p.base, "/v1/logs/"+red.ID, plain); status != 403 {
		t.Errorf("a key without the admin right reads a log: %d", status)
	}
	if status, _ := rawGet(p.base, "/v1/logs/"+red.ID, other); status != 404 {
		t.Errorf("another workspace's admin reads the log: %d", status)
	}
	if got := logs(p.base, "", other); len(got.Data) != 0 {
		t.Errorf("another workspace's admin lists %s", ids(got))
	}
	if got := ids(logs(p.base, "workspace_id=default", org)); got != ids(all) {
		t.Errorf("organisation admin, workspace default: %s", got)
	}
	if status, _ := rawGet(p.base, "/v1/logs/"+red.ID, org); status != 200 {
		t.Errorf("organisation admin reads the log: %d", status)
	}
	if status, b := rawGet(p.base, "/metrics", org); status != 200 || !strings.Contains(string(b), "gateway_log_entries_dropped_total 0") {
		t.Errorf("metrics: %d, no gateway_log_entries_dropped_total 0", status)
	}

	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d", code)
	}
	firstRun := p.stderr.String()
	// Again without --log-bodies: the new entry has no bodies; the stored ones keep theirs.
	p = startGateway(t, env, "--listen", "127.0.0.1:0", "--data", data)
	if p.base == "" {
		t.Fatalf("gateway did not restart: %v", p.err)
	}
	if s := chat(p.base, body, "x-gateway-virtual-key", "mock", "x-gateway-trace-id", "trace-logs-plain"); s != 200 {
		t.Fatalf("after the restart: %d", s)
	}
	var latest list
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if latest = logs(p.base, "trace_id=trace-logs-plain", admin); len(latest.Data) == 1 || time.Now().After(deadline) {
			break
		}
	}
	if len(latest.Data) != 1 {
		t.Fatalf("the entry after the restart was not stored: %+v", latest)
	}
	status, b = rawGet(p.base, "/v1/logs/"+latest.Data[0].ID, admin)
	if status != 200 || strings.Contains(string(b), `"request"`) || strings.Contains(string(b), `"response"`) {
		t.Errorf("without --log-bodies: %d %s", status, b)
	}
	if status, b := rawGet(p.base, "/v1/logs/"+red.ID, admin); status != 200 || !strings.Contains(string(b), `"request"`) {
		t.Errorf("an entry stored with its bodies before the restart: %d %s", status, b)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d", code)
	}

	// No credential anywhere: answers of the log API, the slog lines of both runs, the store on disk.
	logged := seen.String() + firstRun + p.stderr.String()
	for _, secret := range []string{callerSecret, inlineSecret, storedSecret, plain} {
		if strings.Contains(logged, secret) {
			t.Errorf("%s is in a stored entry or the log", secret)
		}
	}
	if !strings.Contains(firstRun, `msg=request`) {
		t.Errorf("no request line in the log:\n%s", firstRun)
	}
	assertNotOnDisk(t, data, callerSecret, inlineSecret)
}
