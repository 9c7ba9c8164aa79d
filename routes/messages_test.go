package routes

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// messageBody is an Anthropic Messages request as the SDKs send it.
const messageBody = `{"model":"gpt-4o-mini","max_tokens":256,"system":"Be brief","messages":[{"role":"user","content":"Hi"}]}`

// message posts to /v1/messages with the gateway key in x-api-key, as Anthropic's SDK does, and Anthropic's
// headers.
func (f *fixture) message(t *testing.T, path, body string, headers ...string) answer {
	t.Helper()
	h := append([]string{HeaderAnthropicAPIKey, f.plain, "anthropic-version", "2023-06-01", "Content-Type", "application/json"}, headers...)
	return f.do(t, "POST", path, body, h...)
}

// checkAnthropicError asserts Anthropic's error envelope, exactly: {"type": "error", "error": {"type", "message"}}.
func checkAnthropicError(t *testing.T, a answer, status int, typ, message string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("status %d, want %d: %s", a.status, status, a.body)
	}
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(a.body, &e); err != nil || e.Type != "error" || e.Error.Type != typ || !strings.Contains(e.Error.Message, message) {
		t.Fatalf("error %s, want an Anthropic %s saying %q", a.body, typ, message)
	}
	var members map[string]json.RawMessage
	json.Unmarshal(a.body, &members)
	delete(members, "hook_results") // a guardrail's deny keeps its verdicts beside the envelope
	if len(members) != 2 {
		t.Errorf("error envelope has other members: %s", a.body)
	}
	if !strings.HasPrefix(a.header.Get("Content-Type"), "application/json") || a.header.Get(HeaderTraceID) == "" {
		t.Errorf("headers %v", a.header)
	}
}

// jsonEqualText compares two JSON texts as values.
func jsonEqualText(t *testing.T, what string, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s is not JSON: %v: %s", what, err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %s\nwant %s", what, got, want)
	}
}

// TestMessagesTranslatedOpenAI: a Messages request to an OpenAI-format upstream goes as a chat completion, and
// the chat answer comes back as Anthropic's message (golden both ways).
func TestMessagesTranslatedOpenAI(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, nil)
	f.storeProvider(t, "oai", "openai", up.URL+"/v1")
	a := f.message(t, "/v1/messages", messageBody, HeaderVirtualKey, "oai")
	if a.status != 200 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	jsonEqualText(t, "answer", a.body, []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"gpt-4o-mini",`+
		`"content":[{"type":"text","text":"Hello!"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2}}`))
	r, sent := up.lastRequest()
	if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-stored" {
		t.Errorf("upstream got %s with %q", r.URL.Path, r.Header.Get("Authorization"))
	}
	if r.Header.Get("X-Api-Key") != "" {
		t.Error("the gateway key went upstream in x-api-key")
	}
	jsonEqualText(t, "upstream body", []byte(sent), []byte(`{"model":"gpt-4o-mini","max_completion_tokens":256,`+
		`"messages":[{"role":"system","content":"Be brief"},{"role":"user","content":"Hi"}]}`))
	if a.header.Get(HeaderAnswerProvider) != "openai" || a.header.Get(HeaderCacheStatus) != "DISABLED" || a.header.Get(HeaderCost) == "" {
		t.Errorf("gateway headers %v", a.header)
	}

	// count_tokens is the gateway's estimate: the provider is not called.
	calls := up.calls.Load()
	c := f.message(t, "/v1/messages/count_tokens", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello there, how are you?"}]}`, HeaderVirtualKey, "oai")
	var count struct {
		InputTokens int `json:"input_tokens"`
	}
	if c.status != 200 || json.Unmarshal(c.body, &count) != nil || count.InputTokens <= 0 || up.calls.Load() != calls {
		t.Fatalf("count_tokens %d %s (upstream calls %d → %d)", c.status, c.body, calls, up.calls.Load())
	}
}

// chatChunks is an OpenAI-format stream: text, then usage (include_usage), then [DONE].
const chatChunks = `data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n" +
	`data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"Sun"},"finish_reason":null}]}` + "\n\n" +
	`data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"ny"},"finish_reason":null}]}` + "\n\n" +
	`data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
	`data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}}` + "\n\n" +
	"data: [DONE]\n\n"

// sseEvent is one server-sent event: its event name and data.
type sseEvent struct {
	name string
	data map[string]any
}

func parseSSE(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	var events []sseEvent
	for _, block := range strings.Split(strings.TrimSpace(string(body)), "\n\n") {
		var ev sseEvent
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.data); err != nil {
					t.Fatalf("data of %q is not JSON: %v", block, err)
				}
			}
		}
		if ev.name == "" || ev.data == nil || ev.data["type"] != ev.name {
			t.Fatalf("event %q: its name and its data's type must agree", block)
		}
		events = append(events, ev)
	}
	return events
}

func eventNames(events []sseEvent) string {
	var names []string
	for _, ev := range events {
		names = append(names, ev.name)
	}
	return strings.Join(names, " ")
}

func TestMessagesTranslatedStream(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range strings.SplitAfter(chatChunks, "\n\n") {
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
	})
	f.storeProvider(t, "oai", "openai", up.URL+"/v1")
	a := f.message(t, "/v1/messages", strings.Replace(messageBody, `"max_tokens":256`, `"max_tokens":256,"stream":true`, 1), HeaderVirtualKey, "oai")
	if a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %v %s", a.status, a.header, a.body)
	}
	events := parseSSE(t, a.body)
	want := "message_start ping content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if got := eventNames(events); got != want {
		t.Fatalf("events %s\nwant %s\n%s", got, want, a.body)
	}
	var text string
	for _, ev := range events {
		if ev.name == "content_block_delta" {
			d := ev.data["delta"].(map[string]any)
			if d["type"] != "text_delta" {
				t.Errorf("delta %v", d)
			}
			text += d["text"].(string)
		}
	}
	delta := events[6].data
	if text != "Sunny" || delta["delta"].(map[string]any)["stop_reason"] != "end_turn" || delta["usage"].(map[string]any)["output_tokens"] != 2.0 {
		t.Errorf("text %q, message_delta %v", text, delta)
	}
	if msg := events[0].data["message"].(map[string]any); msg["model"] != "gpt-4o-mini" || msg["role"] != "assistant" {
		t.Errorf("message_start %v", msg)
	}
	_, sent := up.lastRequest()
	if !strings.Contains(sent, `"stream":true`) || !strings.Contains(sent, `"include_usage":true`) {
		t.Errorf("upstream body %s", sent)
	}
}

// TestMessagesToolUseRoundTrip: a tool call comes back as a tool_use block; the client's tool_result goes to the
// provider as the tool's message, tied to the call.
func TestMessagesToolUseRoundTrip(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		w.Header().Set("Content-Type", "application/json")
		if n == 1 {
			io.WriteString(w, `{"id":"chatcmpl-t1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":null,`+
				`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}],`+
				`"usage":{"prompt_tokens":20,"completion_tokens":8,"total_tokens":28}}`)
			return
		}
		io.WriteString(w, `{"id":"chatcmpl-t2","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Sunny in Paris."},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":30,"completion_tokens":4,"total_tokens":34}}`)
	})
	f.storeProvider(t, "oai", "openai", up.URL+"/v1")
	tools := `"tools":[{"name":"get_weather","description":"Weather of a city","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`
	first := `{"model":"gpt-4o-mini","max_tokens":100,` + tools + `,"messages":[{"role":"user","content":"Weather in Paris?"}]}`
	a := f.message(t, "/v1/messages", first, HeaderVirtualKey, "oai")
	if a.status != 200 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	jsonEqualText(t, "tool_use answer", a.body, []byte(`{"id":"msg_t1","type":"message","role":"assistant","model":"gpt-4o-mini",`+
		`"content":[{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Paris"}}],"stop_reason":"tool_use","stop_sequence":null,`+
		`"usage":{"input_tokens":20,"output_tokens":8}}`))
	_, sent := up.lastRequest()
	var chat struct {
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name       string         `json:"name"`
				Parameters map[string]any `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if json.Unmarshal([]byte(sent), &chat) != nil || len(chat.Tools) != 1 || chat.Tools[0].Function.Name != "get_weather" || chat.Tools[0].Function.Parameters["type"] != "object" {
		t.Errorf("tools sent %s", sent)
	}

	second := `{"model":"gpt-4o-mini","max_tokens":100,` + tools + `,"messages":[{"role":"user","content":"Weather in Paris?"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Paris"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"18°C, sunny"}]}]}`
	a = f.message(t, "/v1/messages", second, HeaderVirtualKey, "oai")
	if a.status != 200 || !strings.Contains(string(a.body), `"text":"Sunny in Paris."`) {
		t.Fatalf("%d %s", a.status, a.body)
	}
	_, sent = up.lastRequest()
	var msgs struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal([]byte(sent), &msgs); err != nil || len(msgs.Messages) != 3 {
		t.Fatalf("messages sent %s", sent)
	}
	call := msgs.Messages[1]["tool_calls"].([]any)[0].(map[string]any)
	if msgs.Messages[1]["role"] != "assistant" || call["id"] != "call_1" || call["function"].(map[string]any)["arguments"] != `{"city":"Paris"}` {
		t.Errorf("assistant turn %v", msgs.Messages[1])
	}
	if tool := msgs.Messages[2]; tool["role"] != "tool" || tool["tool_call_id"] != "call_1" || tool["content"] != "18°C, sunny" {
		t.Errorf("tool result %v", tool)
	}
}

// anthropicNative answers as Anthropic does on /v1/messages and /v1/messages/count_tokens.
func anthropicNative(t *testing.T) *upstream {
	messages := anthropicUpstream(t).answer
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		if r.URL.Path == "/v1/messages/count_tokens" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"input_tokens":42}`)
			return
		}
		if r.Header.Get("X-Api-Key") != "sk-stored" {
			status(401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_1"}`)(w, r, n)
			return
		}
		messages(w, r, n)
	})
}

func TestMessagesNativeAnthropic(t *testing.T) {
	f := newFixture(t, Options{})
	up := anthropicNative(t)
	f.storeProvider(t, "claude", "anthropic", up.URL+"/v1")
	body := `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":[{"type":"text","text":"Hi","cache_control":{"type":"ephemeral"}}]}],"top_k":5}`
	a := f.message(t, "/v1/messages", body, HeaderVirtualKey, "claude", "anthropic-beta", "prompt-caching-2024-07-31")
	if a.status != 200 || string(a.body) != anthropicAnswer(1) {
		t.Fatalf("%d %s, want the upstream's answer unchanged", a.status, a.body)
	}
	r, sent := up.lastRequest()
	if sent != body || r.URL.Path != "/v1/messages" {
		t.Errorf("upstream got %s %s, want the caller's body unchanged", r.URL.Path, sent)
	}
	if r.Header.Get("Anthropic-Version") != "2023-06-01" || r.Header.Get("Anthropic-Beta") != "prompt-caching-2024-07-31" || r.Header.Get("X-Api-Key") != "sk-stored" {
		t.Errorf("upstream headers %v", r.Header)
	}

	s := f.message(t, "/v1/messages", strings.Replace(body, `"max_tokens":1024`, `"max_tokens":1024,"stream":true`, 1), HeaderVirtualKey, "claude")
	if s.status != 200 || string(s.body) != anthropicStream {
		t.Fatalf("stream %d:\n%s\nwant the upstream's unchanged", s.status, s.body)
	}

	c := f.message(t, "/v1/messages/count_tokens", `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"Hi"}]}`, HeaderVirtualKey, "claude")
	if c.status != 200 || string(c.body) != `{"input_tokens":42}` {
		t.Fatalf("count_tokens %d %s", c.status, c.body)
	}
	if r, _ := up.lastRequest(); r.URL.Path != "/v1/messages/count_tokens" {
		t.Errorf("count_tokens went to %s", r.URL.Path)
	}

	// Anthropic's own error passes through as it is.
	f.storeProviderKey(t, "bad", "anthropic", up.URL+"/v1", "sk-wrong")
	e := f.message(t, "/v1/messages", body, HeaderVirtualKey, "bad")
	if e.status != 401 || string(e.body) != `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_1"}` {
		t.Fatalf("upstream error %d %s", e.status, e.body)
	}
}

// storeProviderKey is storeProvider with an API key of the test's.
func (f *fixture) storeProviderKey(t *testing.T, slug, provider, base, key string) {
	t.Helper()
	f.storeProvider(t, slug, provider, base)
	p, err := f.store.Providers.Get(f.ws.ID, slug)
	if err != nil {
		t.Fatal(err)
	}
	p.Fields["api_key"], _ = json.Marshal(key)
	if _, err := f.store.Providers.Put(p); err != nil {
		t.Fatal(err)
	}
}

// bedrockChunk is an InvokeModelWithResponseStream frame carrying one Anthropic event.
func bedrockChunk(event string) []byte {
	payload := `{"bytes":"` + base64.StdEncoding.EncodeToString([]byte(event)) + `"}`
	var headers bytes.Buffer
	for _, h := range [][2]string{{":event-type", "chunk"}, {":content-type", "application/json"}, {":message-type", "event"}} {
		headers.WriteByte(byte(len(h[0])))
		headers.WriteString(h[0])
		headers.WriteByte(7)
		binary.Write(&headers, binary.BigEndian, uint16(len(h[1])))
		headers.WriteString(h[1])
	}
	total := uint32(12 + headers.Len() + len(payload) + 4)
	msg := binary.BigEndian.AppendUint32(nil, total)
	msg = binary.BigEndian.AppendUint32(msg, uint32(headers.Len()))
	msg = binary.BigEndian.AppendUint32(msg, crc32.ChecksumIEEE(msg[:8]))
	msg = append(append(msg, headers.Bytes()...), payload...)
	return binary.BigEndian.AppendUint32(msg, crc32.ChecksumIEEE(msg))
}

func TestMessagesBedrock(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/invoke"):
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, anthropicAnswer(7))
		case strings.HasSuffix(r.URL.Path, "/invoke-with-response-stream"):
			w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
			for _, ev := range strings.SplitAfter(strings.TrimSpace(anthropicStream), "\n\n") {
				data := ev[strings.Index(ev, "data: ")+len("data: "):]
				w.Write(bedrockChunk(strings.TrimSpace(data)))
				w.(http.Flusher).Flush()
			}
		case strings.HasSuffix(r.URL.Path, "/converse"):
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"output":{"message":{"role":"assistant","content":[{"text":"Hello from Nova"}]}},"stopReason":"end_turn","usage":{"inputTokens":6,"outputTokens":4,"totalTokens":10}}`)
		default:
			status(404, `{"message":"no such operation"}`)(w, r, 0)
		}
	})
	aws := []string{HeaderProvider, "bedrock", HeaderCustomHost, up.URL, "x-gateway-cloudz-access-key-id", "AKIDEXAMPLE",
		"x-gateway-cloudz-secret-access-key", "secret", "x-gateway-cloudz-region", "us-east-1"}
	claude := `{"model":"anthropic.claude-3-haiku-20240307-v1:0","max_tokens":64,"messages":[{"role":"user","content":"Hi"}]}`

	a := f.message(t, "/v1/messages", claude, aws...)
	if a.status != 200 || string(a.body) != anthropicAnswer(7) {
		t.Fatalf("native %d %s", a.status, a.body)
	}
	r, sent := up.lastRequest()
	if r.URL.EscapedPath() != "/model/anthropic.claude-3-haiku-20240307-v1%3A0/invoke" || !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		t.Errorf("upstream %s %q", r.URL.EscapedPath(), r.Header.Get("Authorization"))
	}
	jsonEqualText(t, "InvokeModel body", []byte(sent), []byte(`{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,"messages":[{"role":"user","content":"Hi"}]}`))

	s := f.message(t, "/v1/messages", strings.Replace(claude, `"max_tokens":64`, `"max_tokens":64,"stream":true`, 1), aws...)
	if s.status != 200 || string(s.body) != anthropicStream {
		t.Fatalf("native stream %d:\n%s", s.status, s.body)
	}
	if r, sent := up.lastRequest(); !strings.HasSuffix(r.URL.Path, "/invoke-with-response-stream") || strings.Contains(sent, "stream") {
		t.Errorf("stream went to %s with %s", r.URL.Path, sent)
	}

	// A model that is not Claude goes through Converse, translated both ways.
	n := f.message(t, "/v1/messages", `{"model":"amazon.nova-pro-v1:0","max_tokens":64,"system":"Be brief","messages":[{"role":"user","content":"Hi"}]}`, aws...)
	if n.status != 200 {
		t.Fatalf("translated %d %s", n.status, n.body)
	}
	var msg struct {
		Type    string `json:"type"`
		Model   string `json:"model"`
		Content []struct {
			Type, Text string
		} `json:"content"`
		Usage struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(n.body, &msg) != nil || msg.Type != "message" || msg.Model != "amazon.nova-pro-v1:0" || len(msg.Content) != 1 ||
		msg.Content[0].Text != "Hello from Nova" || msg.Usage.InputTokens != 6 || msg.Usage.OutputTokens != 4 {
		t.Errorf("translated answer %s", n.body)
	}
	r, sent = up.lastRequest()
	if r.URL.EscapedPath() != "/model/amazon.nova-pro-v1%3A0/converse" || !strings.Contains(sent, `"system":[{"text":"Be brief"}]`) {
		t.Errorf("converse got %s %s", r.URL.EscapedPath(), sent)
	}
}

func TestMessagesAuthentication(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, nil)
	f.storeProvider(t, "oai", "openai", up.URL+"/v1")
	json := []string{"Content-Type", "application/json", HeaderVirtualKey, "oai"}
	tests := []struct {
		name    string
		headers []string
		status  int
	}{
		{"x-api-key", []string{HeaderAnthropicAPIKey, f.plain}, 200},
		{"bearer", []string{"Authorization", "Bearer " + f.plain}, 200},
		{"x-gateway-api-key", []string{HeaderAPIKey, f.plain}, 200},
		{"none", nil, 401},
		{"unknown x-api-key", []string{HeaderAnthropicAPIKey, "sk-ant-not-a-gateway-key"}, 401},
		{"unknown bearer", []string{"Authorization", "Bearer nope"}, 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := f.do(t, "POST", "/v1/messages", messageBody, append(tc.headers, json...)...)
			if tc.status != 200 {
				checkAnthropicError(t, a, tc.status, "authentication_error", "gateway API key")
				return
			}
			if a.status != 200 {
				t.Fatalf("%d %s", a.status, a.body)
			}
			if r, _ := up.lastRequest(); r.Header.Get("Authorization") != "Bearer sk-stored" || r.Header.Get("X-Api-Key") != "" {
				t.Errorf("the gateway key went upstream: %v", r.Header)
			}
		})
	}
	// With x-gateway-api-key, x-api-key is the provider's key, as a Bearer token is elsewhere.
	a := f.do(t, "POST", "/v1/messages", messageBody, HeaderAPIKey, f.plain, HeaderAnthropicAPIKey, "sk-caller",
		HeaderProvider, "openai", HeaderCustomHost, up.URL+"/v1", "Content-Type", "application/json")
	if r, _ := up.lastRequest(); a.status != 200 || r.Header.Get("Authorization") != "Bearer sk-caller" {
		t.Errorf("%d: upstream authorization %q", a.status, r.Header.Get("Authorization"))
	}
	// Other endpoints keep their own rule: x-api-key is no gateway key there.
	checkError(t, f.do(t, "POST", "/v1/chat/completions", chatBody, HeaderAnthropicAPIKey, f.plain, "Content-Type", "application/json"),
		401, "missing_api_key", HeaderAPIKey)
}

func TestMessagesErrors(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, status(429, `{"error":{"message":"Rate limit reached for gpt-4o-mini","type":"requests","code":"rate_limit_exceeded"}}`))
	f.storeProvider(t, "oai", "openai", up.URL+"/v1")
	tests := []struct {
		name, path, body string
		status           int
		typ, message     string
	}{
		{"upstream 429", "/v1/messages", messageBody, 429, "rate_limit_error", "Rate limit reached"},
		{"no max_tokens", "/v1/messages", `{"model":"m","messages":[]}`, 400, "invalid_request_error", "max_tokens"},
		{"no messages", "/v1/messages", `{"model":"m","max_tokens":5}`, 400, "invalid_request_error", "messages"},
		{"a block the translation refuses", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"hologram"}]}]}`,
			400, "invalid_request_error", "messages[0].content[0].type"},
		{"not JSON", "/v1/messages", `{"model":`, 400, "invalid_request_error", ""},
		{"count_tokens without a model", "/v1/messages/count_tokens", `{"messages":[]}`, 400, "invalid_request_error", "model"},
		{"unknown stored provider", "/v1/messages", strings.Replace(messageBody, "gpt", "gpt", 1), 404, "not_found_error", "not found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			slug := "oai"
			if tc.status == 404 {
				slug = "missing"
			}
			checkAnthropicError(t, f.message(t, tc.path, tc.body, HeaderVirtualKey, slug), tc.status, tc.typ, tc.message)
		})
	}
	a := f.do(t, "POST", "/v1/messages", messageBody, HeaderAnthropicAPIKey, f.plain, "Content-Type", "text/plain")
	checkAnthropicError(t, a, 415, "invalid_request_error", "")
}

// TestMessagesGuardrailsAndCache: guardrails read Anthropic's shapes (the system prompt, text blocks, the
// answer's and the stream's text); a deny is Anthropic's error (446) or, on a stream, its error event in
// place of message_stop; the cache keeps whole answers.
func TestMessagesGuardrailsAndCache(t *testing.T) {
	f := newFixture(t, Options{})
	up := anthropicUpstream(t)
	f.storeProvider(t, "claude", "anthropic", up.URL+"/v1")
	noMail := `{"provider":"@claude","input_guardrails":[{"id":"no-mail","deny":true,"default.regexMatch":{"rule":"[a-z]+@[a-z]+\\.com","not":true}}]}`
	endsWith := func(suffix string) string {
		return `{"provider":"@claude","output_guardrails":[{"id":"ends","deny":true,"default.endsWith":{"suffix":"` + suffix + `"}}]}`
	}
	tests := []struct {
		name, config, body string
		status             int
		want               string
	}{
		{"input guardrail reads the system prompt", noMail, `{"model":"claude-sonnet-4-5","max_tokens":9,"system":[{"type":"text","text":"mail bob@example.com"}],"messages":[{"role":"user","content":"Hi"}]}`,
			446, `"type":"invalid_request_error"`},
		{"input guardrail reads text blocks", noMail, `{"model":"claude-sonnet-4-5","max_tokens":9,"messages":[{"role":"user","content":[{"type":"text","text":"bob@example.com"}]}]}`,
			446, `denied by a guardrail`},
		{"output guardrail reads the answer's text", endsWith("?"), `{"model":"claude-sonnet-4-5","max_tokens":9,"messages":[{"role":"user","content":"Hi"}]}`,
			446, `denied by a guardrail`},
		{"a passing output guardrail", `{"provider":"@claude","output_guardrails":[{"id":"ends","default.contains":{"words":["answer"],"operator":"any"}}]}`, `{"model":"claude-sonnet-4-5","max_tokens":9,"messages":[{"role":"user","content":"Hi"}]}`,
			200, `"after_request_hooks":[{"id":"ends","verdict":true`},
		{"stream denied", endsWith("?"), `{"model":"claude-sonnet-4-5","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`,
			200, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":3}}\n\n" +
				"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"the answer was denied by a guardrail or hook\"}}\n\n"},
		{"stream passed", endsWith("ny"), `{"model":"claude-sonnet-4-5","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`,
			200, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := f.message(t, "/v1/messages", tc.body, HeaderConfig, tc.config)
			if tc.status == 446 {
				checkAnthropicError(t, a, 446, "invalid_request_error", "denied by a guardrail")
				if !strings.Contains(tc.name, "stream") && !strings.Contains(string(a.body), `"hook_results":{`) {
					t.Errorf("the deny lost its hook_results: %s", a.body)
				}
				return
			}
			if a.status != tc.status || !strings.Contains(string(a.body), tc.want) {
				t.Fatalf("%d %s", a.status, a.body)
			}
			if strings.Contains(tc.name, "stream") && !strings.HasSuffix(string(a.body), tc.want) {
				t.Errorf("the stream does not end with %q:\n%s", tc.want, a.body)
			}
		})
	}

	cached := `{"provider":"@claude","cache":{"mode":"simple"}}`
	body := `{"model":"claude-sonnet-4-5","max_tokens":9,"messages":[{"role":"user","content":"Cache me"}]}`
	first := f.message(t, "/v1/messages", body, HeaderConfig, cached)
	calls := up.calls.Load()
	second := f.message(t, "/v1/messages", body, HeaderConfig, cached)
	if first.status != 200 || second.header.Get(HeaderCacheStatus) != "HIT" || string(second.body) != string(first.body) || up.calls.Load() != calls {
		t.Fatalf("cache: %s then %s %s", first.header.Get(HeaderCacheStatus), second.header.Get(HeaderCacheStatus), second.body)
	}
	// The whole answer serves a streamed request too, replayed as Anthropic's events.
	var whole struct {
		Content []struct{ Text string } `json:"content"`
	}
	if json.Unmarshal(first.body, &whole) != nil || len(whole.Content) != 1 {
		t.Fatalf("first answer %s", first.body)
	}
	stream := f.message(t, "/v1/messages", strings.Replace(body, `"max_tokens":9`, `"max_tokens":9,"stream":true`, 1), HeaderConfig, cached)
	if stream.status != 200 || stream.header.Get(HeaderCacheStatus) != "HIT" || up.calls.Load() != calls ||
		messagesText(t, stream.body) != whole.Content[0].Text || !strings.HasSuffix(string(stream.body), "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n") {
		t.Fatalf("a streamed request with a cache: %s\n%s", stream.header.Get(HeaderCacheStatus), stream.body)
	}
}

// messagesText is the text of a Messages event stream's text_delta events.
func messagesText(t *testing.T, body []byte) string {
	t.Helper()
	var text string
	for _, ev := range parseSSE(t, body) {
		if d, _ := ev.data["delta"].(map[string]any); ev.name == "content_block_delta" && d["type"] == "text_delta" {
			text += d["text"].(string)
		}
	}
	return text
}

// TestMessagesStreamCache: a streamed Messages answer is recorded into the whole message: an identical
// streamed request is a HIT replayed as events, and a request without stream a HIT with the whole message;
// from a native Anthropic upstream and from a translated (OpenAI-format) stream alike.
func TestMessagesStreamCache(t *testing.T) {
	f := newFixture(t, Options{})
	native := anthropicNative(t)
	f.storeProvider(t, "claude", "anthropic", native.URL+"/v1")
	translated := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range strings.SplitAfter(chatChunks, "\n\n") {
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
	})
	f.storeProvider(t, "oai", "openai", translated.URL+"/v1")
	tests := []struct {
		name, provider, model string
		up                    *upstream
		want                  string // the whole message the stream stands for
	}{
		{"native", "claude", "claude-sonnet-4-5", native,
			`{"id":"msg_s1","type":"message","role":"assistant","content":[{"type":"text","text":"Sunny"}],"model":"claude-sonnet-4-5",` +
				`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":3}}`},
		{"translated", "oai", "gpt-4o-mini", translated,
			`{"id":"msg_9","type":"message","role":"assistant","model":"gpt-4o-mini","content":[{"type":"text","text":"Sunny"}],` +
				`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":7,"output_tokens":2}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			config := `{"provider":"@` + tc.provider + `","cache":{"mode":"simple"}}`
			body := `{"model":"` + tc.model + `","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"Stream me"}]}`
			calls := tc.up.calls.Load()
			first := f.message(t, "/v1/messages", body, HeaderConfig, config)
			if first.status != 200 || first.header.Get(HeaderCacheStatus) != "MISS" || messagesText(t, first.body) != "Sunny" || tc.up.calls.Load() != calls+1 {
				t.Fatalf("first: %d %s\n%s", first.status, first.header.Get(HeaderCacheStatus), first.body)
			}
			second := f.message(t, "/v1/messages", body, HeaderConfig, config)
			if second.status != 200 || second.header.Get(HeaderCacheStatus) != "HIT" || !strings.HasPrefix(second.header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("second: %d %s %v\n%s", second.status, second.header.Get(HeaderCacheStatus), second.header, second.body)
			}
			events := parseSSE(t, second.body)
			if got, want := eventNames(events), "message_start ping content_block_start content_block_delta content_block_stop message_delta message_stop"; got != want {
				t.Errorf("replayed events %s, want %s", got, want)
			}
			if text := messagesText(t, second.body); text != "Sunny" || tc.up.calls.Load() != calls+1 {
				t.Errorf("replayed text %q, upstream calls %d, want one", text, tc.up.calls.Load()-calls)
			}
			whole := f.message(t, "/v1/messages", strings.Replace(body, `"stream":true,`, "", 1), HeaderConfig, config)
			if whole.status != 200 || whole.header.Get(HeaderCacheStatus) != "HIT" || tc.up.calls.Load() != calls+1 {
				t.Fatalf("without stream: %d %s\n%s", whole.status, whole.header.Get(HeaderCacheStatus), whole.body)
			}
			jsonEqualText(t, "the whole message", whole.body, []byte(tc.want))
		})
	}
}

// TestRelayBrokenMessagesStream: a Messages stream that breaks off ends with Anthropic's error event.
func TestRelayBrokenMessagesStream(t *testing.T) {
	r := &sseRelay{lines: &brokenLines{}, messages: true}
	got, err := io.ReadAll(r)
	if err != nil || !strings.HasPrefix(string(got), "data: a\n\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"the provider's stream broke off: connection reset\"}}\n\n") {
		t.Fatalf("broken stream: %q, %v", got, err)
	}
}

// TestMessagesTranslatedStreamBreaksWithOneErrorEvent: a translated stream whose upstream breaks off gives the
// caller exactly one Anthropic error event (the translation's), not a second one from the relay.
func TestMessagesTranslatedStreamBreaksWithOneErrorEvent(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		w.Header().Set("Content-Type", "text/event-stream")
		events := strings.SplitAfter(chatChunks, "\n\n")
		for _, ev := range events[:3] {
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
		panic(http.ErrAbortHandler) // the connection breaks mid-stream
	})
	f.storeProvider(t, "oai", "openai", up.URL+"/v1")
	a := f.message(t, "/v1/messages", strings.Replace(messageBody, `"max_tokens":256`, `"max_tokens":256,"stream":true`, 1), HeaderVirtualKey, "oai")
	if a.status != 200 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	if n := strings.Count(string(a.body), "event: error"); n != 1 {
		t.Fatalf("%d error events, want 1:\n%s", n, a.body)
	}
	if strings.Contains(string(a.body), "message_stop") {
		t.Fatalf("a broken stream must not end with message_stop:\n%s", a.body)
	}
}
