package schema

import (
	"encoding/json"
	"testing"
)

func TestMarshalError(t *testing.T) {
	code := "rate_limited"
	got := string(MarshalError(ErrorDetail{Message: "slow <down>", Type: "rate_limit_error", Code: &code,
		ProviderError: json.RawMessage(`{"message": "x"}`)}))
	want := `{"error":{"message":"slow \u003cdown\u003e","type":"rate_limit_error","code":"rate_limited","param":null,"provider_error":{"message":"x"}}}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	got = string(MarshalError(ErrorDetail{Message: "m", Type: "server_error", ProviderError: json.RawMessage(`{`)}))
	want = `{"error":{"message":"m","type":"server_error","code":null,"param":null,"provider_error":null}}`
	if got != want {
		t.Errorf("invalid provider_error: got %s, want %s", got, want)
	}
}

func TestCompletionShape(t *testing.T) {
	s := "hi"
	b, err := json.Marshal(Completion{ID: "c", Object: "chat.completion", Created: 1, Model: "m",
		Choices: []Choice{{Message: AssistantMessage{Role: "assistant", Content: &s}, FinishReason: FinishStop}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop","logprobs":null}]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

// A thinking block keeps its thinking member even empty: Anthropic refuses one sent back without it.
func TestContentBlockKeepsEmptyThinking(t *testing.T) {
	empty := ""
	b, err := json.Marshal([]ContentBlock{{Type: "thinking", Thinking: &empty, Signature: "sig"}, {Type: "text", Text: "hi"}})
	want := `[{"type":"thinking","thinking":"","signature":"sig"},{"type":"text","text":"hi"}]`
	if err != nil || string(b) != want {
		t.Errorf("got %s, %v; want %s", b, err, want)
	}
}
