package runtime

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
)

// messagesFake is an adapter that is native for the models its native func accepts, and counts tokens itself
// when counts is set.
type messagesFake struct {
	native func(model string) bool
	counts bool
}

func (messagesFake) NewRequest(context.Context, *providers.Target, *providers.Call) (*http.Request, error) {
	return nil, nil
}

func (a messagesFake) NativeMessages(_ *providers.Target, model string) bool { return a.native(model) }

func (a messagesFake) NativeCountTokens() bool { return a.counts }

func TestMessagesStepPicksTheWay(t *testing.T) {
	e := New(nil, Options{})
	claudeOnly := messagesFake{native: func(m string) bool { return strings.HasPrefix(m, "claude") }}
	anthropic := messagesFake{native: func(string) bool { return true }, counts: true}
	body := func(model string) []byte {
		return []byte(`{"model":"` + model + `","max_tokens":5,"messages":[{"role":"user","content":"Hello there"}]}`)
	}
	tests := []struct {
		name     string
		adapter  providers.Adapter
		endpoint providers.Endpoint
		model    string
		want     string // "same", "native", "translated" or "local"
	}{
		{"chat is untouched", anthropic, providers.ChatCompletions, "claude-x", "same"},
		{"an adapter without NativeMessages is translated", fakeAdapter{}, providers.Messages, "gpt-4o", "translated"},
		{"a native model", claudeOnly, providers.Messages, "claude-sonnet-4-5", "native"},
		{"another model of the same adapter", claudeOnly, providers.Messages, "gemini-2.0-flash", "translated"},
		{"count_tokens forwarded where the provider counts", anthropic, providers.MessagesCountTokens, "claude-x", "native"},
		{"count_tokens estimated on a native target that does not count", claudeOnly, providers.MessagesCountTokens, "claude-x", "local"},
		{"count_tokens estimated elsewhere", fakeAdapter{}, providers.MessagesCountTokens, "gpt-4o", "local"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, local := e.messagesStep(tc.adapter, &providers.Target{}, &providers.Call{Endpoint: tc.endpoint, Body: body(tc.model)})
			var way string
			switch a := got.(type) {
			case *messagesNative:
				way = "native"
			case *messagesAdapter:
				way = "translated"
				if a.model != tc.model {
					t.Errorf("model %q, want %q", a.model, tc.model)
				}
			default:
				way = "same"
			}
			if local != nil {
				way = "local"
				var count struct {
					InputTokens *int `json:"input_tokens"`
				}
				if local.status != 200 || json.Unmarshal(local.body, &count) != nil || count.InputTokens == nil || *count.InputTokens <= 0 {
					t.Errorf("estimate %d %s", local.status, local.body)
				}
			}
			if way != tc.want {
				t.Fatalf("way %s, want %s", way, tc.want)
			}
		})
	}
}

// TestMessagesNativeStreamFollowsTheCall: a native target's body asks for a stream exactly when the engine
// will read one, whatever override_params did to it.
func TestMessagesNativeStreamFollowsTheCall(t *testing.T) {
	var sent []byte
	inner := adapterFunc(func(_ context.Context, _ *providers.Target, c *providers.Call) (*http.Request, error) {
		sent = c.Body
		return nil, nil
	})
	a := &messagesNative{inner: inner}
	for _, tc := range []struct {
		body   string
		stream bool
		want   bool
	}{
		{`{"model":"m","stream":false}`, true, true},
		{`{"model":"m"}`, false, false},
		{`{"model":"m","stream":true}`, false, false},
	} {
		if _, err := a.NewRequest(context.Background(), nil, &providers.Call{Endpoint: providers.Messages, Body: []byte(tc.body), Stream: tc.stream}); err != nil {
			t.Fatal(err)
		}
		if b := schema.NewBody(sent); b.Stream() != tc.want {
			t.Errorf("%s with Stream %v: sent %s", tc.body, tc.stream, sent)
		}
	}
}

type adapterFunc func(ctx context.Context, t *providers.Target, c *providers.Call) (*http.Request, error)

func (f adapterFunc) NewRequest(ctx context.Context, t *providers.Target, c *providers.Call) (*http.Request, error) {
	return f(ctx, t, c)
}

func TestMessagesNativeErrors(t *testing.T) {
	a := &messagesNative{inner: fakeAdapter{}}
	own := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	if got := a.TranslateError(nil, nil, 529, []byte(own)); string(got) != own {
		t.Errorf("Anthropic's own error changed: %s", got)
	}
	got := a.TranslateError(nil, nil, 403, []byte(`{"error":{"code":403,"message":"Permission denied on project","status":"PERMISSION_DENIED"}}`))
	checkAnthropicError(t, got, "permission_error", "Permission denied on project")
}

func checkAnthropicError(t *testing.T, body []byte, typ, message string) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Type != "error" || e.Error.Type != typ || !strings.Contains(e.Error.Message, message) {
		t.Errorf("error body %s, want an Anthropic %s saying %q", body, typ, message)
	}
}

func TestMessagesErrorAnswer(t *testing.T) {
	req := &Request{Endpoint: providers.Messages}
	denied := &Response{Status: 446, Header: jsonContentType, Body: hooksDenied(HookResults{})}
	messagesErrorAnswer(req, denied)
	checkAnthropicError(t, denied.Body, "invalid_request_error", "denied by a guardrail")
	if jsonContentType.Get("Content-Type") != "application/json" || len(jsonContentType) != 1 {
		t.Error("the shared header was changed")
	}
	own := `{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}`
	passed := &Response{Status: 429, Body: []byte(own)}
	messagesErrorAnswer(req, passed)
	if string(passed.Body) != own {
		t.Errorf("Anthropic's error changed: %s", passed.Body)
	}
	chat := &Response{Status: 400, Body: []byte(`{"error":{"message":"bad"}}`)}
	messagesErrorAnswer(&Request{Endpoint: providers.ChatCompletions}, chat)
	if string(chat.Body) != `{"error":{"message":"bad"}}` {
		t.Errorf("a chat error changed: %s", chat.Body)
	}
}

// anthropicEvents is an Anthropic stream whose usage comes in two parts: input with message_start (cache
// reads count as input), output with message_delta.
const anthropicEvents = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\",\"usage\":{\"input_tokens\":9,\"cache_read_input_tokens\":4,\"output_tokens\":1}}}\n\n" +
	"event: ping\ndata: {\"type\":\"ping\"}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Sun\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ny\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

func TestMessagesShapesForChecksAndUsage(t *testing.T) {
	var params map[string]any
	if err := json.Unmarshal([]byte(`{"system":[{"type":"text","text":"Be brief"}],"messages":[{"role":"user","content":"Hi"},`+
		`{"role":"user","content":[{"type":"text","text":"there"},{"type":"image","source":{}}]}]}`), &params); err != nil {
		t.Fatal(err)
	}
	if got := requestText(params); got != "Be brief\nHi\nthere" {
		t.Errorf("requestText = %q", got)
	}
	message := `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Hi"},{"type":"tool_use","id":"t","name":"f","input":{}},{"type":"text","text":"there"}],` +
		`"usage":{"input_tokens":5,"output_tokens":3}}`
	if got := answerText([]byte(message)); got != "Hi\nthere" {
		t.Errorf("answerText = %q", got)
	}
	if endpointName(providers.Messages) != "messages" {
		t.Errorf("endpoint name %q", endpointName(providers.Messages))
	}

	var reported Usage
	u := newUsageStream(io.NopCloser(strings.NewReader(anthropicEvents)), 10, func(got Usage) { reported = got })
	u.messages = true
	out, _ := io.ReadAll(u)
	u.Close()
	if string(out) != anthropicEvents {
		t.Errorf("the stream changed:\n%s", out)
	}
	if reported != (Usage{InputTokens: 13, OutputTokens: 3, Known: true}) {
		t.Errorf("stream usage %+v, want 13 in, 3 out", reported)
	}
}

// TestMessagesStreamOutputGuardrail: output guardrails judge a Messages stream's text before its message_stop;
// a deny replaces that event with Anthropic's error event.
func TestMessagesStreamOutputGuardrail(t *testing.T) {
	for _, deny := range []bool{false, true} {
		var judged string
		h := &hookStream{src: io.NopCloser(strings.NewReader(anthropicEvents)), responses: true}
		h.br = bufio.NewReaderSize(h.src, hookStreamBuffer)
		h.finish = func(text string) ([]byte, bool) {
			judged = text
			if deny {
				return []byte("event: error\ndata: {\"type\":\"error\"}\n\n"), true
			}
			return nil, false
		}
		out, err := io.ReadAll(h)
		if err != nil {
			t.Fatal(err)
		}
		if judged != "Sunny" {
			t.Errorf("judged %q", judged)
		}
		end := "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
		if deny {
			end = "event: error\ndata: {\"type\":\"error\"}\n\n"
		}
		if !strings.HasSuffix(string(out), "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"+
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\n"+end) {
			t.Errorf("deny %v: stream ends\n%s", deny, out)
		}
	}
}
