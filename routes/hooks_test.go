package routes

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/storage"
)

func TestHooksAndGuardrails(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, nil) // answers "Hello!"
	target := fmt.Sprintf(`"provider":"openai","api_key":"sk","custom_host":%q`, up.URL+"/v1")
	if _, err := f.store.Guardrails.Put(f.ws.ID, "no-emails", &storage.Guardrail{ID: "no-emails", WorkspaceID: f.ws.ID,
		Guardrail: json.RawMessage(`{"deny": true, "default.regexMatch": {"rule": "[a-z]+@[a-z]+\\.com", "not": true}}`)}); err != nil {
		t.Fatal(err)
	}
	email := `{"model":"m","messages":[{"role":"user","content":"mail me at bob@example.com"}]}`
	tests := []struct {
		name       string
		config     string
		body       string
		status     int
		calls      int64
		wantInBody []string
		upstream   string // a string the upstream body must contain
	}{
		{"input guardrail denies: provider never called",
			`{` + target + `,"input_guardrails":[{"id":"short","deny":true,"default.wordCount":{"maxWords":3}}]}`,
			email, 446, 0, []string{`"hooks_failed"`, `"before_request_hooks":[{"id":"short","verdict":false`}, ""},
		{"saved guardrail by id",
			`{` + target + `,"input_guardrails":["no-emails"]}`, email, 446, 0, []string{`"no-emails"`}, ""},
		{"failure without deny: 246 with hook_results",
			`{` + target + `,"input_guardrails":[{"id":"short","default.wordCount":{"maxWords":3}}]}`,
			email, 246, 1, []string{`"content":"Hello!"`, `"hook_results"`, `"verdict":false`}, ""},
		{"all pass: 200 with hook_results",
			`{` + target + `,"input_guardrails":[{"id":"long","default.wordCount":{"maxWords":100}}]}`,
			email, 200, 1, []string{`"hook_results"`, `"verdict":true`}, ""},
		{"output guardrail denies the answer",
			`{` + target + `,"output_guardrails":[{"id":"must-end","deny":true,"default.endsWith":{"suffix":"?"}}]}`,
			email, 446, 1, []string{`"after_request_hooks":[{"id":"must-end","verdict":false`}, ""},
		{"transformer changes what goes upstream",
			`{` + target + `,"before_request_hooks":[{"id":"redact","checks":[{"id":"default.regexReplace","parameters":{"rule":"[a-z]+@[a-z]+\\.com","replacement":"[EMAIL]"}}]}]}`,
			email, 200, 1, nil, "mail me at [EMAIL]"},
		{"hook deny through on_fail.deny",
			`{` + target + `,"before_request_hooks":[{"id":"models","on_fail":{"deny":true},"checks":[{"id":"default.modelWhitelist","parameters":{"models":["gpt-4o"]}}]}]}`,
			email, 446, 0, []string{`"models"`}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := up.calls.Load()
			a := f.chat(t, tc.body, HeaderConfig, tc.config)
			if a.status != tc.status {
				t.Fatalf("status %d, want %d: %s", a.status, tc.status, a.body)
			}
			if got := up.calls.Load() - before; got != tc.calls {
				t.Errorf("upstream called %d times, want %d", got, tc.calls)
			}
			for _, w := range tc.wantInBody {
				if !strings.Contains(string(a.body), w) {
					t.Errorf("body lacks %s: %s", w, a.body)
				}
			}
			if tc.upstream != "" {
				if _, body := up.lastRequest(); !strings.Contains(body, tc.upstream) {
					t.Errorf("upstream body lacks %q: %s", tc.upstream, body)
				}
			}
		})
	}
	// An unknown check id is a config error, named by its path.
	checkError(t, f.chat(t, email, HeaderConfig, `{`+target+`,"input_guardrails":[{"default.wordCountt":{}}]}`),
		400, "invalid_config", "input_guardrails[0].default.wordCountt")
	// A 446 counts as a failure for fallback: the next target answers.
	fallback := fmt.Sprintf(`{"strategy":{"mode":"fallback"},"targets":[{%s,"input_guardrails":["no-emails"]},{%s}]}`, target, target)
	if a := f.chat(t, email, HeaderConfig, fallback); a.status != 200 || a.header.Get(HeaderOptionIndex) != "config.targets[1]" {
		t.Fatalf("fallback after a deny: %d %s", a.status, a.body)
	}
}

func TestOutputGuardrailsOnStreams(t *testing.T) {
	f := newFixture(t, Options{})
	base, _ := f.serve(t)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sseEvents) // "Hel" + "lo", then [DONE]
	})
	stream := func(guardrail string) string {
		cfg := fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,"output_guardrails":[%s]}`, up.URL+"/v1", guardrail)
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true,"messages":[]}`))
		req.Header.Set(HeaderAPIKey, f.plain)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(HeaderConfig, cfg)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	pass := stream(`{"id":"says-hello","deny":true,"default.contains":{"words":["Hello"],"operator":"any"}}`)
	if !strings.Contains(pass, `data: {"hook_results":{"before_request_hooks":[],"after_request_hooks":[{"id":"says-hello","verdict":true`) ||
		!strings.HasSuffix(pass, "data: [DONE]\n\n") || !strings.HasPrefix(pass, strings.SplitAfter(sseEvents, "\n\n")[0]) {
		t.Fatalf("passing stream:\n%s", pass)
	}
	deny := stream(`{"id":"no-hello","deny":true,"default.contains":{"words":["Hello"],"operator":"none"}}`)
	if !strings.Contains(deny, `data: {"error":`) || !strings.Contains(deny, `"no-hello"`) || strings.Contains(deny, "[DONE]") {
		t.Fatalf("denied stream:\n%s", deny)
	}
}

func TestAsyncHooksNeverBlockTheAnswer(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	webhook := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		entered <- struct{}{}
		<-release // the hook hangs until the test has its answer
		io.WriteString(w, `{"verdict": false}`)
	})
	defer close(release)
	host := strings.TrimPrefix(webhook.URL, "http://")
	guardrails.SetOutboundAllowList([]string{host})
	defer guardrails.SetOutboundAllowList(nil)

	f := newFixture(t, Options{})
	up := newUpstream(t, nil)
	cfg := fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,"after_request_hooks":[{"id":"audit","async":true,`+
		`"checks":[{"id":"default.webhook","parameters":{"webhookURL":%q}}]}]}`, up.URL+"/v1", webhook.URL+"/hook")
	a := f.chat(t, chatBody, HeaderConfig, cfg)
	if a.status != 200 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	select {
	case <-entered: // the async hook ran, and the answer came while it was still hanging
	case <-time.After(10 * time.Second):
		t.Fatal("the async hook never ran")
	}
}

func TestRetryWhenAnOutputGuardrailFails(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, call int64) {
		content := "no"
		if call == 3 {
			content = "yes, finally"
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}]}`, content)
	})
	cfg := fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,"retry":{"attempts":3,"on_status_codes":[446]},`+
		`"output_guardrails":[{"id":"says-yes","deny":true,"default.contains":{"words":["yes"],"operator":"any"}}]}`, up.URL+"/v1")
	a := f.chat(t, chatBody, HeaderConfig, cfg)
	if a.status != 200 || up.calls.Load() != 3 || a.header.Get(HeaderRetryCount) != "2" || !strings.Contains(string(a.body), "finally") {
		t.Fatalf("status %d, calls %d, retries %s: %s", a.status, up.calls.Load(), a.header.Get(HeaderRetryCount), a.body)
	}
}

func TestGuardrailEndpoints(t *testing.T) {
	f := newFixture(t, Options{})
	put := func(key, id, body string) answer {
		return f.do(t, "PUT", "/v1/guardrails/"+id, body, HeaderAPIKey, key, "Content-Type", "application/json")
	}
	a := put(f.admin, "short", `{"deny": true, "default.wordCount": {"maxWords": 3}}`)
	if a.status != 200 || a.json(t)["id"] != "short" {
		t.Fatalf("put: %d %s", a.status, a.body)
	}
	checkError(t, put(f.admin, "bad", `{"default.wordCountt": {}}`), 400, "invalid_config", "default.wordCountt")
	checkError(t, put(f.admin, "bad", `[1]`), 400, "invalid_json", nil)
	checkError(t, put(f.plain, "short", `{"default.wordCount": {}}`), 403, "forbidden", nil)
	if list := f.do(t, "GET", "/v1/guardrails", "", HeaderAPIKey, f.admin); len(list.json(t)["data"].([]any)) != 1 {
		t.Fatalf("list: %s", list.body)
	}
	checkError(t, f.do(t, "GET", "/v1/guardrails/short", "", HeaderAPIKey, f.otherKey), 404, "not_found", nil)

	// A config names it by ID.
	up := newUpstream(t, nil)
	cfg := fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,"input_guardrails":["short"]}`, up.URL+"/v1")
	if a := f.chat(t, `{"model":"m","messages":[{"role":"user","content":"one two three four five"}]}`, HeaderConfig, cfg); a.status != 446 {
		t.Fatalf("saved guardrail through a config: %d %s", a.status, a.body)
	}
	// A changed guardrail applies at once.
	put(f.admin, "short", `{"deny": true, "default.wordCount": {"maxWords": 30}}`)
	if a := f.chat(t, `{"model":"m","messages":[{"role":"user","content":"one two three four five"}]}`, HeaderConfig, cfg); a.status != 200 {
		t.Fatalf("after the guardrail changed: %d %s", a.status, a.body)
	}
	if a := f.do(t, "DELETE", "/v1/guardrails/short", "", HeaderAPIKey, f.admin); a.status != 200 {
		t.Fatalf("delete: %d", a.status)
	}
	checkError(t, f.chat(t, chatBody, HeaderConfig, cfg), 400, "invalid_config", "input_guardrails[0]")
	checkError(t, f.do(t, "GET", "/v1/guardrails/short", "", HeaderAPIKey, f.admin), 404, "not_found", nil)
}
