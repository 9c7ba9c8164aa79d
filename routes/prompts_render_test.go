package routes

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/llmgw/gateway/storage"
)

// putPrompt stores a prompt with versions (numbered from 1) in ws; published names the published version.
func putPrompt(t *testing.T, f *fixture, ws, id string, published int, templates ...string) {
	t.Helper()
	p := &storage.Prompt{ID: id, WorkspaceID: ws}
	for i, tmpl := range templates {
		p.Versions = append(p.Versions, storage.PromptVersion{Version: i + 1, Published: i+1 == published, Template: json.RawMessage(tmpl)})
	}
	if _, err := f.store.Prompts.Put(ws, id, p); err != nil {
		t.Fatal(err)
	}
}

// storeProvider stores an OpenAI-compatible provider with the slug that points at u.
func storeProvider(t *testing.T, f *fixture, slug string, u *upstream) {
	t.Helper()
	fields := map[string]json.RawMessage{"custom_host": json.RawMessage(`"` + u.URL + `/v1"`), "api_key": json.RawMessage(`"sk-stored"`)}
	if _, err := f.store.Providers.Put(&storage.Provider{WorkspaceID: f.ws.ID, Slug: slug, Provider: "openai", Fields: fields}); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) promptCall(t *testing.T, path, body string, headers ...string) answer {
	t.Helper()
	return f.do(t, "POST", path, body, append([]string{HeaderAPIKey, f.plain, "Content-Type", "application/json"}, headers...)...)
}

const welcomeV1 = `{"provider": "@mock", "model": "m-1", "temperature": 0.2, "max_tokens": 50,
	"messages": [{"role": "system", "content": "v1 for {{company}}"}, {"role": "user", "content": "Hi {{name}}{{#vip}}, our VIP{{/vip}}"}]}`
const welcomeV2 = `{"provider": "@mock", "model": "m-2", "messages": [{"role": "user", "content": "v2 {{name}}"}]}`
const welcomeV3 = `{"provider": "@mock", "model": "m-3", "messages": [{"role": "user", "content": "v3 {{name}}"}]}`

func renderedData(t *testing.T, a answer) map[string]any {
	t.Helper()
	if a.status != 200 {
		t.Fatalf("render: %d %s", a.status, a.body)
	}
	m := a.json(t)
	if m["success"] != true {
		t.Fatalf("render answer %v", m)
	}
	return m["data"].(map[string]any)
}

func lastContent(data map[string]any) string {
	msgs := data["messages"].([]any)
	return msgs[len(msgs)-1].(map[string]any)["content"].(string)
}

func TestPromptRender(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, nil)
	storeProvider(t, f, "mock", up)
	putPrompt(t, f, f.ws.ID, "welcome", 2, welcomeV1, welcomeV2, welcomeV3)

	// Version selection: published (2), @latest (3), @1, unknown.
	for path, want := range map[string]string{"welcome": "v2 Ada", "welcome@latest": "v3 Ada", "welcome@1": "Hi Ada", "welcome%40latest": "v3 Ada"} {
		data := renderedData(t, f.promptCall(t, "/v1/prompts/"+path+"/render", `{"variables": {"name": "Ada"}}`))
		if got := lastContent(data); got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
	checkError(t, f.promptCall(t, "/v1/prompts/welcome@4/render", `{"variables": {}}`), 404, "not_found", "promptId")
	checkError(t, f.promptCall(t, "/v1/prompts/nope/render", `{"variables": {}}`), 404, "not_found", "promptId")
	checkError(t, f.promptCall(t, "/v1/prompts/welcome@x/render", `{"variables": {}}`), 400, "invalid_request", "promptId")

	// Substitution: sections, characters HTML escaping would mangle, root overrides.
	data := renderedData(t, f.promptCall(t, "/v1/prompts/welcome@1/render",
		`{"variables": {"name": "<Ada & \"Bob\" 'C'>", "company": "A&B", "vip": true}, "temperature": 0.9, "seed": 3}`))
	msgs := data["messages"].([]any)
	if got := msgs[0].(map[string]any)["content"]; got != "v1 for A&B" {
		t.Errorf("system %q", got)
	}
	if got := lastContent(data); got != `Hi <Ada & "Bob" 'C'>, our VIP` {
		t.Errorf("user %q", got)
	}
	if data["temperature"] != 0.9 || data["seed"] != 3.0 || data["max_tokens"] != 50.0 || data["model"] != "m-1" {
		t.Errorf("hyperparameters %v", data)
	}
	if _, ok := data["provider"]; ok {
		t.Errorf("data holds the template's provider: %v", data)
	}
	// The rendered data is a chat completion body as it is.
	if a := f.chat(t, mustJSON(t, data), HeaderVirtualKey, "mock"); a.status != 200 {
		t.Errorf("posting the rendered data: %d %s", a.status, a.body)
	}
	calls := up.calls.Load()

	// Bad bodies.
	checkError(t, f.promptCall(t, "/v1/prompts/welcome/render", `{}`), 400, "invalid_request", "variables")
	checkError(t, f.promptCall(t, "/v1/prompts/welcome/render", `{"variables": [1]}`), 400, "invalid_request", "variables")
	checkError(t, f.promptCall(t, "/v1/prompts/welcome/render", `{"variables": "x"}`), 400, "invalid_request", "variables")
	a := f.promptCall(t, "/v1/prompts/welcome/render", `{"variables": {}, "hyperparameters": {"temperature": 1}}`)
	checkError(t, a, 400, "invalid_request", "hyperparameters")
	if !strings.Contains(string(a.body), "root") {
		t.Errorf("the message does not say where hyperparameters go: %s", a.body)
	}
	checkError(t, f.promptCall(t, "/v1/prompts/welcome/render", `{"variables": {}`), 400, "invalid_json", nil)
	checkError(t, f.do(t, "POST", "/v1/prompts/welcome/render", `{"variables": {}}`, HeaderAPIKey, f.plain), 415, "unsupported_media_type", "content-type")

	// Render never calls the provider.
	if up.calls.Load() != calls {
		t.Fatalf("render called the upstream")
	}
	// Another workspace's key does not see the prompt.
	a = f.do(t, "POST", "/v1/prompts/welcome/render", `{"variables": {}}`, HeaderAPIKey, f.otherKey, "Content-Type", "application/json")
	checkError(t, a, 404, "not_found", "promptId")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPromptCompletions(t *testing.T) {
	f := newFixture(t, Options{})
	base, _ := f.serve(t)
	var up *upstream
	up = newUpstream(t, func(w http.ResponseWriter, r *http.Request, call int64) {
		_, body := up.lastRequest()
		if strings.Contains(body, `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, sseEvents)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req-9")
		io.WriteString(w, chatAnswer)
	})
	storeProvider(t, f, "mock", up)
	putPrompt(t, f, f.ws.ID, "welcome", 1, welcomeV1, welcomeV2)

	a := f.promptCall(t, "/v1/prompts/welcome/completions", `{"variables": {"name": "Ada", "company": "Acme"}, "temperature": 0.7}`)
	if a.status != 200 {
		t.Fatalf("completion: %d %s", a.status, a.body)
	}
	m := a.json(t)
	body := m["body"].(map[string]any)
	headers := m["headers"].(map[string]any)
	if m["status"] != "success" || body["object"] != "chat.completion" || headers["x-gateway-provider"] != "openai" || headers["x-request-id"] != "req-9" {
		t.Fatalf("completion answer %s", a.body)
	}
	r, sent := up.lastRequest()
	var upstreamBody map[string]any
	json.Unmarshal([]byte(sent), &upstreamBody)
	if upstreamBody["model"] != "m-1" || upstreamBody["temperature"] != 0.7 || r.Header.Get("Authorization") != "Bearer sk-stored" ||
		!strings.Contains(sent, `"content":"Hi Ada"`) {
		t.Fatalf("upstream got %s with %v", sent, r.Header)
	}

	// Streamed: the chat completion stream, as it is.
	req, _ := http.NewRequest("POST", base+"/v1/prompts/welcome@2/completions", strings.NewReader(`{"variables": {"name": "Ada"}, "stream": true}`))
	req.Header.Set(HeaderAPIKey, f.plain)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(got) != sseEvents || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream %d %v:\n%s", resp.StatusCode, resp.Header, got)
	}
	if _, sent := up.lastRequest(); !strings.Contains(sent, `"stream":true`) || !strings.Contains(sent, `"model":"m-2"`) {
		t.Fatalf("streamed upstream body %s", sent)
	}

	// Upstream failures keep the error shape and status.
	failing := newUpstream(t, status(429, `{"error":{"message":"slow down","type":"rate_limit_error","code":"rate_limit"}}`))
	storeProvider(t, f, "failing", failing)
	putPrompt(t, f, f.ws.ID, "broken", 1, `{"provider": "@failing", "model": "m", "messages": [{"role": "user", "content": "x"}]}`)
	a = f.promptCall(t, "/v1/prompts/broken/completions", `{"variables": {}}`)
	if a.status != 429 || !strings.Contains(string(a.body), "slow down") || strings.Contains(string(a.body), `"status":"success"`) {
		t.Fatalf("failure: %d %s", a.status, a.body)
	}
	checkError(t, f.promptCall(t, "/v1/prompts/welcome/completions", `{"variables": {}, "stream": "yes"}`), 400, "invalid_request", "stream")
	a = f.do(t, "POST", "/v1/prompts/welcome/completions", `{"variables": {}}`, HeaderAPIKey, f.otherKey, "Content-Type", "application/json")
	checkError(t, a, 404, "not_found", "promptId")
}

// A config's targets may name other templates with prompt_id: a fallback between two templates.
func TestPromptIDTargets(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, nil)
	broken := newUpstream(t, status(503, `{"error":{"message":"down"}}`))
	storeProvider(t, f, "mock", up)
	storeProvider(t, f, "down", broken)
	putPrompt(t, f, f.ws.ID, "a", 1, `{"model": "m-a", "messages": [{"role": "user", "content": "A {{name}}"}]}`)
	putPrompt(t, f, f.ws.ID, "b", 1, `{"model": "m-b", "messages": [{"role": "user", "content": "B {{name}}"}]}`)
	cfg := `{"strategy": {"mode": "fallback"}, "targets": [{"provider": "@down", "prompt_id": "a"}, {"provider": "@mock", "prompt_id": "b"}]}`
	a := f.promptCall(t, "/v1/prompts/a/completions", `{"variables": {"name": "Ada"}}`, HeaderConfig, cfg)
	if a.status != 200 || a.header.Get(HeaderOptionIndex) != "config.targets[1]" {
		t.Fatalf("%d %v %s", a.status, a.header, a.body)
	}
	if _, sent := broken.lastRequest(); !strings.Contains(sent, `"A Ada"`) {
		t.Fatalf("first target got %s", sent)
	}
	if _, sent := up.lastRequest(); !strings.Contains(sent, `"B Ada"`) || !strings.Contains(sent, `"m-b"`) {
		t.Fatalf("second target got %s", sent)
	}
}

// BenchmarkPromptRenderEndpoint is POST /v1/prompts/{id}/render end to end: key lookup, prompt read (from
// memory), compiled template (from the cache), render, answer.
func BenchmarkPromptRenderEndpoint(b *testing.B) {
	f := newFixture(b, Options{})
	p := &storage.Prompt{ID: "welcome", WorkspaceID: f.ws.ID, Versions: []storage.PromptVersion{{Version: 1, Published: true, Template: json.RawMessage(welcomeV1)}}}
	if _, err := f.store.Prompts.Put(f.ws.ID, "welcome", p); err != nil {
		b.Fatal(err)
	}
	var ctx fasthttp.RequestCtx
	handler := f.srv.Handler().Handler()
	body := []byte(`{"variables": {"name": "Ada", "company": "Acme", "vip": true}, "temperature": 0.5}`)
	b.ReportAllocs()
	for b.Loop() {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI("/v1/prompts/welcome/render")
		ctx.Request.Header.SetContentType("application/json")
		ctx.Request.Header.Set(HeaderAPIKey, f.plain)
		ctx.Request.SetBody(body)
		handler(&ctx)
		if ctx.Response.StatusCode() != 200 {
			b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
}

// A version published over HTTP is what the next render uses (no stale copy).
func TestPromptRenderSeesNewVersions(t *testing.T) {
	f := newFixture(t, Options{})
	putPrompt(t, f, f.ws.ID, "p", 1, `{"model": "m", "messages": [{"role": "user", "content": "one {{x}}"}]}`)
	if got := lastContent(renderedData(t, f.promptCall(t, "/v1/prompts/p/render", `{"variables": {"x": 1}}`))); got != "one 1" {
		t.Fatalf("first render %q", got)
	}
	a := f.do(t, "POST", "/v1/prompts/p/versions", `{"template": {"model": "m", "messages": [{"role": "user", "content": "two {{x}}"}]}, "publish": true}`,
		HeaderAPIKey, f.admin, "Content-Type", "application/json")
	if a.status != 200 {
		t.Fatalf("add version: %d %s", a.status, a.body)
	}
	if got := lastContent(renderedData(t, f.promptCall(t, "/v1/prompts/p/render", `{"variables": {"x": 1}}`))); got != "two 1" {
		t.Fatalf("render after publishing version 2: %q", got)
	}
	if a := f.do(t, "DELETE", "/v1/prompts/p", "", HeaderAPIKey, f.admin); a.status != 200 {
		t.Fatalf("delete: %d", a.status)
	}
	checkError(t, f.promptCall(t, "/v1/prompts/p/render", `{"variables": {}}`), 404, "not_found", "promptId")
}
