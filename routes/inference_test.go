package routes

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/llmgw/gateway/runtime/providers/openai"
	"github.com/llmgw/gateway/storage"
)

// upstream is a local OpenAI-compatible provider that records what it receives and answers as told.
type upstream struct {
	*httptest.Server
	calls  atomic.Int64
	mu     sync.Mutex
	last   *http.Request
	bodies []string
	answer func(w http.ResponseWriter, r *http.Request, call int64)
}

const chatAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hello!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`

func newUpstream(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, call int64)) *upstream {
	u := &upstream{answer: answer}
	if u.answer == nil {
		u.answer = func(w http.ResponseWriter, _ *http.Request, _ int64) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Request-Id", "req-123")
			io.WriteString(w, chatAnswer)
		}
	}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := u.calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.last = r.Clone(r.Context())
		u.bodies = append(u.bodies, string(body))
		u.mu.Unlock()
		u.answer(w, r, n)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) lastRequest() (*http.Request, string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.last == nil {
		return nil, ""
	}
	return u.last, u.bodies[len(u.bodies)-1]
}

func status(code int, body string) func(w http.ResponseWriter, r *http.Request, call int64) {
	return func(w http.ResponseWriter, _ *http.Request, _ int64) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

const chatBody = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}`

func (f *fixture) chat(t *testing.T, body string, headers ...string) answer {
	t.Helper()
	h := append([]string{HeaderAPIKey, f.plain, "Content-Type", "application/json"}, headers...)
	return f.do(t, "POST", "/v1/chat/completions", body, h...)
}

func TestChatThroughProviderHeaders(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, nil)
	a := f.chat(t, chatBody, HeaderProvider, "openai", "Authorization", "Bearer sk-caller", HeaderCustomHost, up.URL+"/v1",
		HeaderTraceID, "trace-chat-1")
	if a.status != 200 || string(a.body) != chatAnswer {
		t.Fatalf("answer %d %s", a.status, a.body)
	}
	r, body := up.lastRequest()
	if r.Method != "POST" || r.URL.Path != "/v1/chat/completions" {
		t.Errorf("upstream got %s %s", r.Method, r.URL.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer sk-caller" {
		t.Errorf("upstream Authorization = %q", got)
	}
	if body != chatBody {
		t.Errorf("the body was not passed through unchanged: %s", body)
	}
	for name := range r.Header {
		if strings.HasPrefix(strings.ToLower(name), "x-gateway-") {
			t.Errorf("gateway header %s leaked upstream", name)
		}
	}
	want := map[string]string{HeaderAnswerProvider: "openai", HeaderRetryCount: "0", HeaderOptionIndex: "config",
		HeaderCacheStatus: "DISABLED", HeaderTraceID: "trace-chat-1", "X-Request-Id": "req-123"}
	for k, v := range want {
		if got := a.header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
}

func TestCompletionsAndEmbeddingsPaths(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		io.WriteString(w, `{"object":"list","data":[]}`)
	})
	for _, tc := range []struct{ path, upstreamPath string }{
		{"/v1/completions", "/v1/completions"},
		{"/v1/embeddings", "/v1/embeddings"},
	} {
		a := f.do(t, "POST", tc.path, `{"model":"m","input":"x","prompt":"y"}`, HeaderAPIKey, f.plain, "Content-Type", "application/json",
			HeaderProvider, "openai", "Authorization", "Bearer sk", HeaderCustomHost, up.URL+"/v1")
		if a.status != 200 {
			t.Fatalf("%s: %d %s", tc.path, a.status, a.body)
		}
		if r, _ := up.lastRequest(); r.URL.Path != tc.upstreamPath {
			t.Errorf("%s went to %s", tc.path, r.URL.Path)
		}
	}
	checkError(t, f.do(t, "POST", "/v1/embeddings", `{"model":"m","input":"x","stream":true}`, HeaderAPIKey, f.plain,
		"Content-Type", "application/json", HeaderProvider, "openai", "Authorization", "Bearer sk", HeaderCustomHost, up.URL+"/v1"),
		400, "invalid_request", "stream")
}

func TestVirtualKeyAndSlug(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, nil)
	host, _ := json.Marshal(up.URL + "/v1")
	if _, err := f.store.Providers.Put(&storage.Provider{WorkspaceID: f.ws.ID, Slug: "mock-openai", Provider: "openai",
		Fields: map[string]json.RawMessage{"api_key": json.RawMessage(`"sk-stored"`), "custom_host": host}}); err != nil {
		t.Fatal(err)
	}
	for _, h := range [][]string{
		{HeaderVirtualKey, "mock-openai"},
		{HeaderProvider, "@mock-openai"},
		{HeaderConfig, `{"virtual_key": "mock-openai"}`},
		{HeaderConfig, `{"provider": "@mock-openai"}`},
	} {
		a := f.chat(t, chatBody, h...)
		if a.status != 200 {
			t.Fatalf("%v: %d %s", h, a.status, a.body)
		}
		if r, _ := up.lastRequest(); r.Header.Get("Authorization") != "Bearer sk-stored" {
			t.Errorf("%v: upstream Authorization %q", h, r.Header.Get("Authorization"))
		}
	}
	// Another workspace cannot use it.
	a := f.do(t, "POST", "/v1/chat/completions", chatBody, HeaderAPIKey, f.otherKey, "Content-Type", "application/json", HeaderVirtualKey, "mock-openai")
	checkError(t, a, 404, "not_found", HeaderVirtualKey)
}

func TestRequestsThatCannotBeRouted(t *testing.T) {
	f := newFixture(t, Options{})
	tests := []struct {
		name    string
		headers []string
		body    string
		status  int
		code    string
		param   any
	}{
		{"no provider", nil, chatBody, 400, "invalid_request", HeaderProvider},
		{"unknown provider", []string{HeaderProvider, "acme"}, chatBody, 400, "invalid_request", HeaderProvider},
		{"custom host without provider", []string{HeaderCustomHost, "http://127.0.0.1:1/v1"}, chatBody, 400, "invalid_request", HeaderProvider},
		{"unknown virtual key", []string{HeaderVirtualKey, "nope"}, chatBody, 404, "not_found", HeaderVirtualKey},
		{"unknown saved config", []string{HeaderConfig, "cfg-nope"}, chatBody, 404, "not_found", HeaderConfig},
		{"bad metadata", []string{HeaderProvider, "openai", HeaderMetadata, `{"a": 1}`}, chatBody, 400, "invalid_request", HeaderMetadata},
		{"metadata not JSON", []string{HeaderProvider, "openai", HeaderMetadata, `nope`}, chatBody, 400, "invalid_request", HeaderMetadata},
		{"bad timeout", []string{HeaderProvider, "openai", HeaderRequestTimeout, "soon"}, chatBody, 400, "invalid_request", HeaderRequestTimeout},
		{"bad forward list", []string{HeaderProvider, "openai", HeaderForward, "a b"}, chatBody, 400, "invalid_request", HeaderForward},
		{"bad config", []string{HeaderConfig, `{"retry": {"attempts": "x"}}`}, chatBody, 400, "invalid_config", "retry.attempts"},
		{"malformed body", []string{HeaderProvider, "openai"}, `{"model":`, 400, "invalid_json", nil},
		{"body not an object", []string{HeaderProvider, "openai"}, `[]`, 400, "invalid_json", nil},
		{"metadata server address", []string{HeaderProvider, "openai", HeaderCustomHost, "http://169.254.169.254/v1"}, chatBody, 400, "host_not_allowed", HeaderCustomHost},
		{"private address", []string{HeaderProvider, "openai", HeaderCustomHost, "http://10.1.2.3/v1"}, chatBody, 400, "host_not_allowed", HeaderCustomHost},
		{"not http", []string{HeaderProvider, "openai", HeaderCustomHost, "ftp://127.0.0.1/v1"}, chatBody, 400, "", HeaderCustomHost},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := f.chat(t, tc.body, tc.headers...)
			if tc.code == "" {
				if a.status != tc.status {
					t.Fatalf("status %d: %s", a.status, a.body)
				}
				return
			}
			checkError(t, a, tc.status, tc.code, tc.param)
		})
	}
}

func TestUpstreamErrorsPassThrough(t *testing.T) {
	f := newFixture(t, Options{})
	const providerError = `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
	up := newUpstream(t, status(401, providerError))
	a := f.chat(t, chatBody, HeaderProvider, "openai", "Authorization", "Bearer bad", HeaderCustomHost, up.URL+"/v1")
	if a.status != 401 || string(a.body) != providerError {
		t.Fatalf("got %d %s", a.status, a.body)
	}
	if a.header.Get(HeaderTraceID) == "" || a.header.Get(HeaderAnswerProvider) != "openai" {
		t.Error("gateway headers missing on an upstream error")
	}
	// Nothing listens: 502 upstream_error, as JSON.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	checkError(t, f.chat(t, chatBody, HeaderProvider, "openai", "Authorization", "Bearer x", HeaderCustomHost, deadURL+"/v1"), 502, "upstream_error", nil)
	// A 200 that is not JSON is a failure too.
	garbage := newUpstream(t, status(200, "<html>oops</html>"))
	checkError(t, f.chat(t, chatBody, HeaderProvider, "openai", "Authorization", "Bearer x", HeaderCustomHost, garbage.URL+"/v1"), 502, "upstream_error", nil)
}

func TestFallbackAndNesting(t *testing.T) {
	f := newFixture(t, Options{})
	bad := newUpstream(t, status(503, `{"error":{"message":"overloaded"}}`))
	rejects := newUpstream(t, status(400, `{"error":{"message":"bad"}}`))
	good := newUpstream(t, nil)
	target := func(u *upstream) string {
		return fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q}`, u.URL+"/v1")
	}
	tests := []struct {
		name   string
		config string
		status int
		path   string
		calls  [3]int64 // bad, rejects, good
	}{
		{"second answers", `{"strategy":{"mode":"fallback"},"targets":[` + target(bad) + `,` + target(good) + `]}`, 200, "config.targets[1]", [3]int64{1, 0, 1}},
		{"any non-2xx falls back", `{"strategy":{"mode":"fallback"},"targets":[` + target(rejects) + `,` + target(good) + `]}`, 200, "config.targets[1]", [3]int64{0, 1, 1}},
		{"on_status_codes limits fallback", `{"strategy":{"mode":"fallback","on_status_codes":[503]},"targets":[` + target(rejects) + `,` + target(good) + `]}`, 400, "config.targets[0]", [3]int64{0, 1, 0}},
		{"all fail: last answer", `{"strategy":{"mode":"fallback"},"targets":[` + target(rejects) + `,` + target(bad) + `]}`, 503, "config.targets[1]", [3]int64{1, 1, 0}},
		{"nested", `{"strategy":{"mode":"fallback"},"targets":[{"strategy":{"mode":"fallback"},"targets":[` + target(bad) + `,` + target(rejects) + `]},{"strategy":{"mode":"single"},"targets":[` + target(good) + `]}]}`, 200, "config.targets[1].targets[0]", [3]int64{1, 1, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := [3]int64{bad.calls.Load(), rejects.calls.Load(), good.calls.Load()}
			a := f.chat(t, chatBody, HeaderConfig, tc.config)
			if a.status != tc.status {
				t.Fatalf("status %d: %s", a.status, a.body)
			}
			if got := a.header.Get(HeaderOptionIndex); got != tc.path {
				t.Errorf("option index %q, want %q", got, tc.path)
			}
			got := [3]int64{bad.calls.Load() - before[0], rejects.calls.Load() - before[1], good.calls.Load() - before[2]}
			if got != tc.calls {
				t.Errorf("upstream calls %v, want %v", got, tc.calls)
			}
		})
	}
}

func TestSavedConfig(t *testing.T) {
	f := newFixture(t, Options{})
	good := newUpstream(t, nil)
	cfg := fmt.Sprintf(`{"provider":"openai","api_key":"sk-cfg","custom_host":%q,"override_params":{"model":"forced"}}`, good.URL+"/v1")
	if _, err := f.store.Configs.Put(f.ws.ID, "cfg-a", &storage.Config{ID: "cfg-a", WorkspaceID: f.ws.ID, Config: json.RawMessage(cfg)}); err != nil {
		t.Fatal(err)
	}
	a := f.chat(t, chatBody, HeaderConfig, "cfg-a")
	if a.status != 200 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	_, body := good.lastRequest()
	var sent map[string]any
	json.Unmarshal([]byte(body), &sent)
	if sent["model"] != "forced" || sent["messages"] == nil {
		t.Errorf("override_params not applied: %s", body)
	}
}

func TestLoadbalanceFollowsWeights(t *testing.T) {
	f := newFixture(t, Options{})
	a, b := newUpstream(t, nil), newUpstream(t, nil)
	cfg := fmt.Sprintf(`{"strategy":{"mode":"loadbalance"},"targets":[`+
		`{"provider":"openai","api_key":"sk","custom_host":%q,"weight":1},`+
		`{"provider":"openai","api_key":"sk","custom_host":%q,"weight":3},`+
		`{"provider":"openai","api_key":"sk","custom_host":"http://127.0.0.1:1/v1","weight":0}]}`, a.URL+"/v1", b.URL+"/v1")
	const n = 400
	for i := 0; i < n; i++ {
		if ans := f.chat(t, chatBody, HeaderConfig, cfg); ans.status != 200 {
			t.Fatalf("%d %s", ans.status, ans.body)
		}
	}
	// b should get 3/4 of the draws: 300 ± 5 standard deviations (sqrt(400·¾·¼) ≈ 8.7).
	got := b.calls.Load()
	if got < 300-44 || got > 300+44 || a.calls.Load()+got != n {
		t.Fatalf("weights 1:3 gave %d:%d", a.calls.Load(), got)
	}
}

func TestConditionalRouting(t *testing.T) {
	f := newFixture(t, Options{})
	free, pro := newUpstream(t, nil), newUpstream(t, nil)
	cfg := fmt.Sprintf(`{"strategy":{"mode":"conditional","conditions":[`+
		`{"query":{"metadata.plan":{"$eq":"pro"}},"then":"pro"},`+
		`{"query":{"params.model":{"$in":["gpt-4o","o1"]}},"then":"pro"}],"default":"free"},`+
		`"targets":[{"name":"free","provider":"openai","api_key":"sk","custom_host":%q},`+
		`{"name":"pro","provider":"openai","api_key":"sk","custom_host":%q}]}`, free.URL+"/v1", pro.URL+"/v1")
	tests := []struct {
		name     string
		metadata string
		body     string
		wantPro  bool
	}{
		{"metadata match", `{"plan":"pro"}`, chatBody, true},
		{"params match", `{"plan":"free"}`, `{"model":"o1","messages":[]}`, true},
		{"default", `{"plan":"free"}`, chatBody, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := pro.calls.Load()
			a := f.chat(t, tc.body, HeaderConfig, cfg, HeaderMetadata, tc.metadata)
			if a.status != 200 {
				t.Fatalf("%d %s", a.status, a.body)
			}
			if (pro.calls.Load() > before) != tc.wantPro {
				t.Errorf("went to pro = %v, want %v (option %s)", pro.calls.Load() > before, tc.wantPro, a.header.Get(HeaderOptionIndex))
			}
		})
	}
}

func TestRetries(t *testing.T) {
	f := newFixture(t, Options{})
	flaky := newUpstream(t, func(w http.ResponseWriter, r *http.Request, call int64) {
		if call%3 != 0 { // two failures, then success
			w.Header().Set("Retry-After-Ms", "10")
			w.WriteHeader(503)
			io.WriteString(w, `{"error":{"message":"busy"}}`)
			return
		}
		io.WriteString(w, chatAnswer)
	})
	cfg := fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,"retry":{"attempts":2,"use_retry_after_headers":true}}`, flaky.URL+"/v1")
	a := f.chat(t, chatBody, HeaderConfig, cfg)
	if a.status != 200 || a.header.Get(HeaderRetryCount) != "2" || flaky.calls.Load() != 3 {
		t.Fatalf("status %d, retries %s, calls %d", a.status, a.header.Get(HeaderRetryCount), flaky.calls.Load())
	}
	// Retries run out: the last answer.
	always := newUpstream(t, status(503, `{"error":{"message":"down"}}`))
	cfg = fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,"retry":{"attempts":1,"use_retry_after_headers":true}}`, always.URL+"/v1")
	a = f.chat(t, chatBody, HeaderConfig, cfg)
	if a.status != 503 || a.header.Get(HeaderRetryCount) != "1" || always.calls.Load() != 2 {
		t.Fatalf("status %d, retries %s, calls %d", a.status, a.header.Get(HeaderRetryCount), always.calls.Load())
	}
	// A status outside on_status_codes is not retried.
	cfg = fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,"retry":{"attempts":3,"on_status_codes":[429]}}`, always.URL+"/v1")
	before := always.calls.Load()
	if a = f.chat(t, chatBody, HeaderConfig, cfg); a.status != 503 || always.calls.Load()-before != 1 {
		t.Fatalf("status %d, calls %d", a.status, always.calls.Load()-before)
	}
}

func TestRequestTimeout(t *testing.T) {
	f := newFixture(t, Options{})
	release := make(chan struct{})
	slow := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		select {
		case <-release:
		case <-r.Context().Done(): // the gateway gave up and closed the call
		}
	})
	defer close(release)
	for _, h := range [][]string{
		{HeaderConfig, fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,"request_timeout":100}`, slow.URL+"/v1")},
		{HeaderProvider, "openai", "Authorization", "Bearer sk", HeaderCustomHost, slow.URL + "/v1", HeaderRequestTimeout, "100"},
	} {
		done := make(chan answer, 1)
		go func() { done <- f.chat(t, chatBody, h...) }()
		select {
		case a := <-done:
			checkError(t, a, 408, "request_timeout", nil)
		case <-time.After(10 * time.Second):
			t.Fatal("no answer long after the request timeout")
		}
	}
}

func TestCircuitBreakerOpens(t *testing.T) {
	f := newFixture(t, Options{})
	down := newUpstream(t, status(503, `{"error":{"message":"down"}}`))
	good := newUpstream(t, nil)
	cfg := fmt.Sprintf(`{"strategy":{"mode":"fallback"},"cb_config":{"failure_threshold":2,"cooldown_interval":30000},"targets":[`+
		`{"provider":"openai","api_key":"sk","custom_host":%q},{"provider":"openai","api_key":"sk","custom_host":%q}]}`, down.URL+"/v1", good.URL+"/v1")
	for i := 0; i < 5; i++ {
		if a := f.chat(t, chatBody, HeaderConfig, cfg); a.status != 200 {
			t.Fatalf("request %d: %d %s", i, a.status, a.body)
		}
	}
	if got := down.calls.Load(); got != 2 {
		t.Fatalf("the failing target was called %d times; after 2 failures its breaker should skip it", got)
	}
	// Every target open: 503 circuit_open.
	only := fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,"cb_config":{"failure_threshold":1,"cooldown_interval":30000}}`, down.URL+"/v1")
	f.chat(t, chatBody, HeaderConfig, only) // down's breaker is shared by target identity: already open
	checkError(t, f.chat(t, chatBody, HeaderConfig, only), 503, "circuit_open", nil)
}

func TestForwardHeaders(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, nil)
	a := f.chat(t, chatBody, HeaderProvider, "openai", "Authorization", "Bearer sk", HeaderCustomHost, up.URL+"/v1",
		HeaderForward, "X-Team, x-gateway-api-key", "X-Team", "search", "X-Other", "secret")
	if a.status != 200 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	r, _ := up.lastRequest()
	if r.Header.Get("X-Team") != "search" {
		t.Errorf("X-Team not forwarded")
	}
	if r.Header.Get("X-Other") != "" || r.Header.Get("X-Gateway-Api-Key") != "" {
		t.Errorf("a header not listed (or a gateway header) went upstream: %v", r.Header)
	}
	// The config's list wins over the header's.
	cfg := fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,"forward_headers":["X-Other"]}`, up.URL+"/v1")
	f.chat(t, chatBody, HeaderConfig, cfg, HeaderForward, "X-Team", "X-Team", "search", "X-Other", "ok")
	r, _ = up.lastRequest()
	if r.Header.Get("X-Other") != "ok" || r.Header.Get("X-Team") != "" {
		t.Errorf("config forward_headers not applied: %v", r.Header)
	}
}

func TestMetadataUserFillsUser(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, nil)
	f.chat(t, chatBody, HeaderProvider, "openai", "Authorization", "Bearer sk", HeaderCustomHost, up.URL+"/v1", HeaderMetadata, `{"_user":"u-42"}`)
	_, body := up.lastRequest()
	if !strings.Contains(body, `"user":"u-42"`) {
		t.Errorf("metadata _user did not fill user: %s", body)
	}
}

// postStream sends a streamed chat completion through the server at base to an OpenAI-compatible upstream.
func (f *fixture) postStream(t *testing.T, base, upstreamBase string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true,"messages":[]}`))
	for k, v := range map[string]string{HeaderAPIKey: f.plain, "Content-Type": "application/json", HeaderProvider: "openai",
		"Authorization": "Bearer sk", HeaderCustomHost: upstreamBase} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

const sseEvents = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n" +
	"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"}}]}\n\n" +
	"data: [DONE]\n\n"

func TestStreaming(t *testing.T) {
	f := newFixture(t, Options{})
	base, _ := f.serve(t)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for _, ev := range strings.SplitAfter(sseEvents, "\n\n") {
			io.WriteString(w, ev)
			fl.Flush()
		}
	})
	resp := f.postStream(t, base, up.URL+"/v1")
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(got) != sseEvents {
		t.Fatalf("stream %d:\n%q\nwant\n%q", resp.StatusCode, got, sseEvents)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("content-type %q", ct)
	}
	if resp.Header.Get(HeaderOptionIndex) != "config" || resp.Header.Get(HeaderTraceID) == "" {
		t.Errorf("gateway headers missing on a stream: %v", resp.Header)
	}
}

func TestStreamEventsArriveOneByOne(t *testing.T) {
	f := newFixture(t, Options{})
	base, _ := f.serve(t)
	next, stop := make(chan struct{}), make(chan struct{})
	defer close(stop)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for _, ev := range strings.SplitAfter(sseEvents, "\n\n") {
			io.WriteString(w, ev)
			fl.Flush()
			select { // the next event is written only after the caller saw this one
			case <-next:
			case <-stop:
				return
			case <-r.Context().Done():
				return
			}
		}
	})
	resp := f.postStream(t, base, up.URL+"/v1")
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for i, want := range strings.SplitAfter(strings.TrimSuffix(sseEvents, "\n\n"), "\n\n") {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if strings.TrimSpace(line) != strings.TrimSpace(want) {
			t.Fatalf("event %d: %q, want %q", i, line, want)
		}
		br.ReadString('\n') // the blank line
		if i < 2 {
			next <- struct{}{}
		}
	}
}

func TestStreamBreaksOff(t *testing.T) {
	f := newFixture(t, Options{})
	base, _ := f.serve(t)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Length", "10000") // promise more than is sent, then hang up
		io.WriteString(w, strings.SplitAfter(sseEvents, "\n\n")[0])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	resp := f.postStream(t, base, up.URL+"/v1")
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(got)
	if !strings.HasPrefix(text, strings.SplitAfter(sseEvents, "\n\n")[0]) || !strings.Contains(text, `data: {"error":`) || strings.Contains(text, "[DONE]") {
		t.Fatalf("broken stream gave:\n%s", text)
	}
}

func TestCallerGoingAwayClosesTheUpstreamStream(t *testing.T) {
	f := newFixture(t, Options{})
	base, _ := f.serve(t)
	upstreamDone := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		defer close(upstreamDone)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; ; i++ { // an endless stream, until the gateway hangs up
			if _, err := fmt.Fprintf(w, "data: {\"n\":%d}\n\n", i); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	resp := f.postStream(t, base, up.URL+"/v1")
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first event %q, %v", line, err)
	}
	resp.Body.Close() // the caller goes away
	select {
	case <-upstreamDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream stream was not closed after the caller went away")
	}
}

func TestPromptIDOutsidePromptCompletions(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, nil)
	cfg := fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,"prompt_id":"welcome"}`, up.URL+"/v1")
	checkError(t, f.chat(t, chatBody, HeaderConfig, cfg), 400, "invalid_config", "prompt_id")
	if up.calls.Load() != 0 {
		t.Error("the provider was called")
	}
}

func TestLargeConfigHeader(t *testing.T) {
	f := newFixture(t, Options{})
	base, _ := f.serve(t)
	up := newUpstream(t, nil)
	var targets []string
	for i := 0; i < 100; i++ { // ~13 KB of config
		targets = append(targets, fmt.Sprintf(`{"name":"t%d","provider":"openai","api_key":"sk-%040d","custom_host":%q}`, i, i, up.URL+"/v1"))
	}
	cfg := `{"strategy":{"mode":"fallback"},"targets":[` + strings.Join(targets, ",") + `]}`
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(chatBody))
	req.Header.Set(HeaderAPIKey, f.plain)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderConfig, cfg)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	a := readAnswer(t, resp)
	if len(cfg) < 8<<10 || a.status != 200 {
		t.Fatalf("a %d-byte config header: %d %s", len(cfg), a.status, a.body)
	}
}
