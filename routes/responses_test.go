package routes

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/storage"
)

// A responses API answer of a native (OpenAI-shaped) upstream.
const nativeResponse = `{"id":"resp_native1","object":"response","created_at":1700000000,"status":"completed","model":"gpt-4o-mini",` +
	`"output":[{"id":"msg_n1","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Hello!","annotations":[]}]}],` +
	`"usage":{"input_tokens":5,"output_tokens":2,"total_tokens":7}}`

// anthropicAnswer and anthropicStream are an Anthropic Messages upstream's answers, numbered by call.
func anthropicAnswer(n int64) string {
	return fmt.Sprintf(`{"id":"msg_%d","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"answer %d"}],`+
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":3}}`, n, n)
}

const anthropicStream = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_s1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Sun\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ny\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":3}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

// anthropicUpstream answers Anthropic Messages requests: a stream when the body asks for one.
func anthropicUpstream(t *testing.T) *upstream {
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		if r.URL.Path != "/v1/messages" {
			status(404, `{"type":"error","error":{"type":"not_found_error","message":"no such path"}}`)(w, r, n)
			return
		}
		if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, ev := range strings.SplitAfter(anthropicStream, "\n\n") {
				io.WriteString(w, ev)
				w.(http.Flusher).Flush()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, anthropicAnswer(n))
	})
}

// storeProvider stores a provider of the default workspace whose custom host is base.
func (f *fixture) storeProvider(t testing.TB, slug, provider, base string) {
	t.Helper()
	host, _ := json.Marshal(base)
	if _, err := f.store.Providers.Put(&storage.Provider{WorkspaceID: f.ws.ID, Slug: slug, Provider: provider,
		Fields: map[string]json.RawMessage{"api_key": json.RawMessage(`"sk-stored"`), "custom_host": host}}); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) respond(t *testing.T, body string, headers ...string) answer {
	t.Helper()
	h := append([]string{HeaderAPIKey, f.plain, "Content-Type", "application/json"}, headers...)
	return f.do(t, "POST", "/v1/responses", body, h...)
}

func TestResponsesNativePassThroughAndChaining(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		if r.URL.Path != "/v1/responses" {
			status(404, `{"error":{"message":"wrong path"}}`)(w, r, n)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, strings.Replace(nativeResponse, "resp_native1", fmt.Sprintf("resp_native%d", n), 1))
	})
	f.storeProvider(t, "oai", "openai", up.URL+"/v1")
	body := `{"model":"gpt-4o-mini","input":"Hi","metadata":{"k":"v"},"store":true}`
	a := f.respond(t, body, HeaderVirtualKey, "oai")
	if a.status != 200 || string(a.body) != nativeResponse {
		t.Fatalf("native answer %d %s", a.status, a.body)
	}
	if _, got := up.lastRequest(); got != body {
		t.Fatalf("upstream body %s, want the caller's %s", got, body)
	}
	if got := f.do(t, "GET", "/v1/responses/resp_native1", "", HeaderAPIKey, f.plain); got.status != 200 || string(got.body) != nativeResponse {
		t.Fatalf("stored response %d %s", got.status, got.body)
	}

	a = f.respond(t, `{"model":"gpt-4o-mini","input":"And then?","previous_response_id":"resp_native1"}`, HeaderVirtualKey, "oai")
	if a.status != 200 {
		t.Fatalf("chained %d %s", a.status, a.body)
	}
	_, sent := up.lastRequest()
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(sent), &got); err != nil {
		t.Fatal(err)
	}
	if _, has := got["previous_response_id"]; has {
		t.Errorf("previous_response_id sent on: %s", sent)
	}
	var items []map[string]any
	if err := json.Unmarshal(got["input"], &items); err != nil || len(items) != 3 {
		t.Fatalf("chained input %s: %v", got["input"], err)
	}
	if items[0]["role"] != "user" || items[1]["id"] != "msg_n1" || items[2]["role"] != "user" {
		t.Errorf("chained input %s", got["input"])
	}
	list := f.do(t, "GET", "/v1/responses/resp_native2/input_items?order=asc", "", HeaderAPIKey, f.plain)
	var page struct {
		Object  string           `json:"object"`
		Data    []map[string]any `json:"data"`
		HasMore bool             `json:"has_more"`
	}
	if err := json.Unmarshal(list.body, &page); err != nil || list.status != 200 || page.Object != "list" || len(page.Data) != 3 || page.Data[1]["id"] != "msg_n1" {
		t.Fatalf("input items %d %s", list.status, list.body)
	}
	for _, item := range page.Data {
		if id, _ := item["id"].(string); id == "" {
			t.Errorf("input item without an id: %v", item)
		}
	}

	// store: false keeps nothing.
	a = f.respond(t, `{"model":"gpt-4o-mini","input":"Hi","store":false}`, HeaderVirtualKey, "oai")
	if a.status != 200 {
		t.Fatalf("unstored %d %s", a.status, a.body)
	}
	if got := f.do(t, "GET", "/v1/responses/resp_native3", "", HeaderAPIKey, f.plain); got.status != 404 {
		t.Fatalf("store false: %d %s", got.status, got.body)
	}
}

func TestResponsesTranslatedChainOverThreeTurns(t *testing.T) {
	f := newFixture(t, Options{})
	up := anthropicUpstream(t)
	f.storeProvider(t, "claude", "anthropic", up.URL+"/v1")
	prev := ""
	for turn := 1; turn <= 3; turn++ {
		body := fmt.Sprintf(`{"model":"claude-sonnet-4-5","instructions":"Be brief %d.","input":"question %d"`, turn, turn)
		if prev != "" {
			body += `,"previous_response_id":"` + prev + `"`
		}
		a := f.respond(t, body+"}", HeaderVirtualKey, "claude")
		if a.status != 200 {
			t.Fatalf("turn %d: %d %s", turn, a.status, a.body)
		}
		var r struct {
			ID         string  `json:"id"`
			Object     string  `json:"object"`
			Status     string  `json:"status"`
			OutputText string  `json:"output_text"`
			Previous   *string `json:"previous_response_id"`
		}
		if err := json.Unmarshal(a.body, &r); err != nil || r.Object != "response" || r.Status != "completed" ||
			r.OutputText != fmt.Sprintf("answer %d", turn) || !strings.HasPrefix(r.ID, "resp_") {
			t.Fatalf("turn %d: %s", turn, a.body)
		}
		if (prev == "") != (r.Previous == nil) || (r.Previous != nil && *r.Previous != prev) {
			t.Fatalf("turn %d: previous_response_id %v, want %q", turn, r.Previous, prev)
		}
		stored := f.do(t, "GET", "/v1/responses/"+r.ID, "", HeaderAPIKey, f.plain)
		if stored.status != 200 || string(stored.body) != string(a.body) {
			t.Fatalf("turn %d stored %d %s\nanswered %s", turn, stored.status, stored.body, a.body)
		}
		prev = r.ID
	}
	_, sent := up.lastRequest()
	var msgs struct {
		System   any `json:"system"`
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(sent), &msgs); err != nil {
		t.Fatal(err)
	}
	var flat []string
	for _, m := range msgs.Messages {
		c, _ := json.Marshal(m.Content)
		flat = append(flat, m.Role+":"+string(c))
	}
	joined := strings.Join(flat, " | ")
	for _, want := range []string{"question 1", "answer 1", "question 2", "answer 2", "question 3"} {
		if !strings.Contains(joined, want) {
			t.Errorf("third request's messages lack %q: %s", want, joined)
		}
	}
	if len(msgs.Messages) != 5 {
		t.Errorf("third request has %d messages, want 5: %s", len(msgs.Messages), joined)
	}
	if s, _ := json.Marshal(msgs.System); strings.Contains(string(s), "Be brief 1") || !strings.Contains(string(s), "Be brief 3") {
		t.Errorf("instructions carried over: system %s", s)
	}
}

func TestResponsesTranslatedStream(t *testing.T) {
	f := newFixture(t, Options{})
	base, _ := f.serve(t)
	up := anthropicUpstream(t)
	f.storeProvider(t, "claude", "anthropic", up.URL+"/v1")
	req, _ := http.NewRequest("POST", base+"/v1/responses", strings.NewReader(`{"model":"claude-sonnet-4-5","input":"Weather?","stream":true}`))
	req.Header.Set(HeaderAPIKey, f.plain)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderVirtualKey, "claude")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	a := readAnswer(t, resp)
	if a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream %d %s", a.status, a.body)
	}
	var types []string
	var deltas strings.Builder
	var final struct {
		ID         string `json:"id"`
		OutputText string `json:"output_text"`
	}
	for _, ev := range strings.Split(strings.TrimSpace(string(a.body)), "\n\n") {
		for _, line := range strings.Split(ev, "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			var e struct {
				Type     string          `json:"type"`
				Delta    string          `json:"delta"`
				Response json.RawMessage `json:"response"`
			}
			if err := json.Unmarshal([]byte(data), &e); err != nil {
				t.Fatalf("event %q: %v", data, err)
			}
			types = append(types, e.Type)
			if e.Type == "response.output_text.delta" {
				deltas.WriteString(e.Delta)
			}
			if e.Type == "response.completed" {
				json.Unmarshal(e.Response, &final)
			}
		}
	}
	if types[0] != "response.created" || types[len(types)-1] != "response.completed" || deltas.String() != "Sunny" || final.OutputText != "Sunny" {
		t.Fatalf("events %v, deltas %q, final %+v", types, deltas.String(), final)
	}
	// The stream's final object is stored once the stream is closed (after the last byte was sent).
	var got answer
	for range 100 {
		if got = f.do(t, "GET", "/v1/responses/"+final.ID, "", HeaderAPIKey, f.plain); got.status == 200 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got.status != 200 || !strings.Contains(string(got.body), `"Sunny"`) {
		t.Fatalf("stored stream %d %s", got.status, got.body)
	}
}

func TestResponsesErrors(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, nativeResponse)
	})
	f.storeProvider(t, "oai", "openai", up.URL+"/v1")
	if a := f.respond(t, `{"model":"gpt-4o-mini","input":"Hi"}`, HeaderVirtualKey, "oai"); a.status != 200 {
		t.Fatalf("setup: %d %s", a.status, a.body)
	}
	other := []string{HeaderAPIKey, f.otherKey}
	tests := []struct {
		name, method, path, body string
		headers                  []string
		status                   int
		code                     string
		param                    any
	}{
		{"no model", "POST", "/v1/responses", `{"input":"Hi"}`, nil, 400, "invalid_request", "model"},
		{"no input", "POST", "/v1/responses", `{"model":"m"}`, nil, 400, "invalid_request", "input"},
		{"temperature", "POST", "/v1/responses", `{"model":"m","input":"Hi","temperature":3}`, nil, 400, "invalid_request", "temperature"},
		{"not an object", "POST", "/v1/responses", `[1]`, nil, 400, "invalid_json", nil},
		{"unknown previous", "POST", "/v1/responses", `{"model":"m","input":"Hi","previous_response_id":"resp_nope"}`, nil, 404, "not_found", "previous_response_id"},
		{"another workspace's previous", "POST", "/v1/responses", `{"model":"m","input":"Hi","previous_response_id":"resp_native1"}`, other, 404, "not_found", "previous_response_id"},
		{"unknown get", "GET", "/v1/responses/resp_nope", "", nil, 404, "not_found", nil},
		{"another workspace's get", "GET", "/v1/responses/resp_native1", "", other, 404, "not_found", nil},
		{"another workspace's delete", "DELETE", "/v1/responses/resp_native1", "", other, 404, "not_found", nil},
		{"another workspace's input items", "GET", "/v1/responses/resp_native1/input_items", "", other, 404, "not_found", nil},
		{"bad limit", "GET", "/v1/responses/resp_native1/input_items?limit=0", "", nil, 400, "invalid_request", "limit"},
		{"bad order", "GET", "/v1/responses/resp_native1/input_items?order=up", "", nil, 400, "invalid_request", "order"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.headers
			if h == nil {
				h = []string{HeaderAPIKey, f.plain}
			}
			h = append(h, "Content-Type", "application/json", HeaderVirtualKey, "oai")
			checkError(t, f.do(t, tc.method, tc.path, tc.body, h...), tc.status, tc.code, tc.param)
		})
	}
	a := f.do(t, "DELETE", "/v1/responses/resp_native1", "", HeaderAPIKey, f.plain)
	if a.status != 200 || string(a.body) != `{"id":"resp_native1","object":"response","deleted":true}` {
		t.Fatalf("delete %d %s", a.status, a.body)
	}
	checkError(t, f.do(t, "GET", "/v1/responses/resp_native1", "", HeaderAPIKey, f.plain), 404, "not_found", nil)
}

func TestResponsesTruncation(t *testing.T) {
	f := newFixture(t, Options{})
	up := anthropicUpstream(t)
	host, _ := json.Marshal(up.URL + "/v1")
	if _, err := f.store.Providers.Put(&storage.Provider{WorkspaceID: f.ws.ID, Slug: "tiny", Provider: "anthropic",
		Fields: map[string]json.RawMessage{"api_key": json.RawMessage(`"sk"`), "custom_host": host,
			"models": json.RawMessage(`[{"id":"tiny-model","context_window":100,"max_output_tokens":10}]`)}}); err != nil {
		t.Fatal(err)
	}
	turn := func(i int) string {
		return fmt.Sprintf(`{"type":"message","role":"user","content":"turn %d %s"}`, i, strings.Repeat("word ", 30))
	}
	input := "[" + turn(1) + "," + turn(2) + "," + turn(3) + "]"
	a := f.respond(t, `{"model":"tiny-model","input":`+input+`}`, HeaderVirtualKey, "tiny")
	checkError(t, a, 400, "invalid_request", "input")
	if up.calls.Load() != 0 {
		t.Fatalf("a refused input reached the provider")
	}
	a = f.respond(t, `{"model":"tiny-model","truncation":"auto","input":`+input+`}`, HeaderVirtualKey, "tiny")
	if a.status != 200 {
		t.Fatalf("auto: %d %s", a.status, a.body)
	}
	_, sent := up.lastRequest()
	if strings.Contains(sent, "turn 1") || !strings.Contains(sent, "turn 3") {
		t.Fatalf("auto truncation sent %s", sent)
	}
	a = f.respond(t, `{"model":"tiny-model","truncation":"sometimes","input":"Hi"}`, HeaderVirtualKey, "tiny")
	checkError(t, a, 400, "invalid_request", "truncation")
	// The engine fits the input to the target it routes to, so a request routed by a config alone is fitted too.
	calls := up.calls.Load()
	a = f.respond(t, `{"model":"tiny-model","input":`+input+`}`, HeaderConfig, `{"provider":"@tiny"}`)
	checkError(t, a, 400, "invalid_request", "input")
	if up.calls.Load() != calls {
		t.Fatalf("a refused input reached the provider through a config")
	}
	a = f.respond(t, `{"model":"tiny-model","truncation":"auto","input":`+input+`}`, HeaderConfig, `{"provider":"@tiny"}`)
	if _, sent := up.lastRequest(); a.status != 200 || strings.Contains(sent, "turn 1") || !strings.Contains(sent, "turn 3") {
		t.Fatalf("auto through a config: %d %s, sent %s", a.status, a.body, sent)
	}
}

// An output guardrail judges a streamed response before its final event: a deny replaces response.completed
// with the stream's error event, so the caller never gets the denied answer as complete; a pass lets it through.
func TestResponsesStreamOutputGuardrail(t *testing.T) {
	f := newFixture(t, Options{})
	base, _ := f.serve(t)
	up := anthropicUpstream(t)
	f.storeProvider(t, "claude", "anthropic", up.URL+"/v1")
	for _, tc := range []struct {
		name, rule string
		denied     bool
	}{
		{"deny", `{"suffix":"?"}`, true}, // the streamed answer is "Sunny"
		{"pass", `{"suffix":"ny"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := `{"provider":"@claude","output_guardrails":[{"id":"ends","deny":true,"default.endsWith":` + tc.rule + `}]}`
			req, _ := http.NewRequest("POST", base+"/v1/responses", strings.NewReader(`{"model":"claude-sonnet-4-5","input":"Weather?","stream":true,"store":false}`))
			req.Header.Set(HeaderAPIKey, f.plain)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(HeaderConfig, cfg)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			a := readAnswer(t, resp)
			body := string(a.body)
			completed := strings.Contains(body, "event: response.completed\n")
			errored := strings.Contains(body, "event: error\ndata: {\"type\":\"error\",\"code\":\"hooks_failed\"")
			if a.status != 200 || completed == tc.denied || errored != tc.denied || !strings.HasSuffix(body, "\n\n") {
				t.Fatalf("denied=%v: completed=%v errored=%v\n%s", tc.denied, completed, errored, body)
			}
			if tc.denied && !strings.Contains(body, `"after_request_hooks":[{"id":"ends","verdict":false`) {
				t.Errorf("the error event lacks the hook results: %s", body)
			}
		})
	}
}

func TestResponsesGuardrailsAndConfigs(t *testing.T) {
	f := newFixture(t, Options{})
	up := anthropicUpstream(t)
	f.storeProvider(t, "claude", "anthropic", up.URL+"/v1")
	input := `{"model":"claude-sonnet-4-5","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"mail me at bob@example.com"}]}]}`
	tests := []struct {
		name   string
		config string
		status int
		want   string
		calls  int64
	}{
		{"input guardrail reads the input items", `{"provider":"@claude","input_guardrails":[{"id":"no-mail","deny":true,"default.regexMatch":{"rule":"[a-z]+@[a-z]+\\.com","not":true}}]}`,
			446, `"before_request_hooks":[{"id":"no-mail","verdict":false`, 0},
		{"output guardrail reads the output text", `{"provider":"@claude","output_guardrails":[{"id":"ends","deny":true,"default.endsWith":{"suffix":"?"}}]}`,
			446, `"after_request_hooks":[{"id":"ends","verdict":false`, 1},
		{"a passing output guardrail", `{"provider":"@claude","output_guardrails":[{"id":"says","default.contains":{"words":["answer"],"operator":"any"}}]}`,
			200, `"after_request_hooks":[{"id":"says","verdict":true`, 1},
		{"fallback to the translated target", `{"strategy":{"mode":"fallback"},"targets":[{"provider":"openai","api_key":"sk","custom_host":"` + up.URL + `/nowhere"},{"provider":"@claude"}]}`,
			200, `"output_text":"answer`, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := up.calls.Load()
			a := f.respond(t, input, HeaderConfig, tc.config)
			if a.status != tc.status || !strings.Contains(string(a.body), tc.want) {
				t.Fatalf("%d %s", a.status, a.body)
			}
			if calls := up.calls.Load() - before; calls != tc.calls {
				t.Errorf("%d upstream calls, want %d", calls, tc.calls)
			}
		})
	}
}

// The response cache serves /v1/responses: a translated answer, cached whole, answers the same request again
// without an upstream call, and replays as the responses event stream when the request streams.
func TestResponsesCache(t *testing.T) {
	f := newFixture(t, Options{})
	up := anthropicUpstream(t)
	f.storeProvider(t, "claude", "anthropic", up.URL+"/v1")
	cfg := `{"provider":"@claude","cache":{"mode":"simple"}}`
	const body = `{"model":"claude-sonnet-4-5","input":"Cache me","store":false%s}`
	first := f.respond(t, fmt.Sprintf(body, ""), HeaderConfig, cfg)
	if first.status != 200 || first.header.Get(HeaderCacheStatus) != "MISS" {
		t.Fatalf("first: %d %s %s", first.status, first.header.Get(HeaderCacheStatus), first.body)
	}
	calls := up.calls.Load()
	again := f.respond(t, fmt.Sprintf(body, ""), HeaderConfig, cfg)
	if again.status != 200 || again.header.Get(HeaderCacheStatus) != "HIT" || string(again.body) != string(first.body) || up.calls.Load() != calls {
		t.Fatalf("again: %d %s, %d more calls\n%s", again.status, again.header.Get(HeaderCacheStatus), up.calls.Load()-calls, again.body)
	}
	streamed := f.respond(t, fmt.Sprintf(body, `,"stream":true`), HeaderConfig, cfg)
	var final struct {
		Type     string          `json:"type"`
		Response json.RawMessage `json:"response"`
	}
	events := strings.Split(strings.TrimSpace(string(streamed.body)), "\n\n")
	last := events[len(events)-1]
	_ = json.Unmarshal([]byte(last[strings.Index(last, "data: ")+len("data: "):]), &final)
	var want, got map[string]any
	_ = json.Unmarshal(first.body, &want)
	_ = json.Unmarshal(final.Response, &got)
	if streamed.header.Get(HeaderCacheStatus) != "HIT" || up.calls.Load() != calls || final.Type != "response.completed" ||
		!strings.HasPrefix(events[0], "event: response.created\n") || got["output_text"] != want["output_text"] || got["id"] != want["id"] {
		t.Fatalf("streamed hit: %s, %d more calls, final %s\n%s", streamed.header.Get(HeaderCacheStatus), up.calls.Load()-calls, final.Type, streamed.body)
	}
}

// A native target's input is fitted to its model's window too, whether or not the answer is stored or streamed.
func TestResponsesNativeTruncation(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, nativeResponse)
	})
	host, _ := json.Marshal(up.URL + "/v1")
	if _, err := f.store.Providers.Put(&storage.Provider{WorkspaceID: f.ws.ID, Slug: "tinyo", Provider: "openai",
		Fields: map[string]json.RawMessage{"api_key": json.RawMessage(`"sk"`), "custom_host": host,
			"models": json.RawMessage(`[{"id":"tiny-model","context_window":100,"max_output_tokens":10}]`)}}); err != nil {
		t.Fatal(err)
	}
	turn := func(i int) string {
		return fmt.Sprintf(`{"type":"message","role":"user","content":"turn %d %s"}`, i, strings.Repeat("word ", 30))
	}
	input := "[" + turn(1) + "," + turn(2) + "," + turn(3) + "]"
	a := f.respond(t, `{"model":"tiny-model","store":false,"input":`+input+`}`, HeaderVirtualKey, "tinyo")
	checkError(t, a, 400, "invalid_request", "input")
	if up.calls.Load() != 0 {
		t.Fatalf("a refused input reached the native provider")
	}
	a = f.respond(t, `{"model":"tiny-model","store":false,"truncation":"auto","input":`+input+`}`, HeaderVirtualKey, "tinyo")
	if _, sent := up.lastRequest(); a.status != 200 || strings.Contains(sent, "turn 1") || !strings.Contains(sent, "turn 3") {
		t.Fatalf("auto, native: %d %s, sent %s", a.status, a.body, sent)
	}
}
