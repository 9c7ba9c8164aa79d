package anthropicmsg

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestFromChatGolden(t *testing.T) {
	tests := []struct{ name, model string }{
		{"text", "claude-sonnet-4-5"},
		{"tool_calls", "claude-sonnet-4-5"},
		{"thinking", ""}, // the chat answer's model
		{"reasoning", "claude-opus-4-1"},
		{"refusal", "claude-sonnet-4-5"},
		{"stop_sequence", "claude-haiku-4-5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fixedIDs(t)
			in := readFile(t, filepath.Join("testdata", "ingress", "answer", tc.name+".openai.json"))
			got, err := FromChat(in, tc.model)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", "ingress", "answer", tc.name+".anthropic.json"), got)
		})
	}
}

// TestFromChatRoundTrip translates the Anthropic answers of testdata/response to OpenAI's shape (Response, as
// the adapters do) and back: content blocks, stop reason and usage are Anthropic's own again.
func TestFromChatRoundTrip(t *testing.T) {
	for _, name := range []string{"text", "tool_use", "thinking", "refusal"} {
		t.Run(name, func(t *testing.T) {
			orig := readFile(t, filepath.Join("testdata", "response", name+".anthropic.json"))
			chat, err := Response(orig, false)
			if err != nil {
				t.Fatal(err)
			}
			back, err := FromChat(chat, "")
			if err != nil {
				t.Fatal(err)
			}
			var want, got message
			if err := json.Unmarshal(orig, &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(back, &got); err != nil {
				t.Fatal(err)
			}
			if got.ID != want.ID || got.Model != want.Model || got.StopReason != want.StopReason {
				t.Errorf("id %q model %q stop %q, want %q %q %q", got.ID, got.Model, got.StopReason, want.ID, want.Model, want.StopReason)
			}
			// Text blocks come back joined into one; the other blocks one for one.
			summary := func(m *message) string {
				var b strings.Builder
				lastText := false
				for _, c := range m.Content {
					switch c.Type {
					case "text":
						if !lastText {
							b.WriteString("|text:")
						}
						b.WriteString(c.Text)
					case "thinking":
						b.WriteString("|thinking:" + c.Thinking + "/" + c.Signature)
					case "redacted_thinking":
						b.WriteString("|redacted:" + c.Data)
					case "tool_use":
						b.WriteString("|tool_use:" + c.ID + "/" + c.Name + "/" + compactArgs(c.Input))
					}
					lastText = c.Type == "text"
				}
				return b.String()
			}
			if g, w := summary(&got), summary(&want); g != w {
				t.Errorf("content\n got %s\nwant %s", g, w)
			}
			gi, go_, _ := Usage(back)
			wi, wo, _ := Usage(orig)
			if gi != wi || go_ != wo {
				t.Errorf("usage %d/%d, want %d/%d", gi, go_, wi, wo)
			}
		})
	}
}

func TestFromChatEdges(t *testing.T) {
	fixedIDs(t)
	tests := []struct {
		name, chat, want string
	}{
		{"no choices no usage", `{"id":"x"}`,
			`{"id":"msg_x","type":"message","role":"assistant","model":"m","content":[],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}`},
		{"no id, tool calls ending with stop", `{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"tool_calls":[{"id":"c","function":{"name":"f","arguments":"[1]"}}]},"finish_reason":"stop"}]}`,
			`{"id":"msg_id1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ab"},{"type":"tool_use","id":"c","name":"f","input":{}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}`},
		{"second choice ignored", `{"id":"chatcmpl-1","choices":[{"index":1,"message":{"content":"no"}},{"index":0,"message":{"content":"yes"},"finish_reason":"length"}]}`,
			`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"yes"}],"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}`},
		{"cached more than prompt", `{"id":"a-b","usage":{"prompt_tokens":5,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":9}}}`,
			`{"id":"msg_b","type":"message","role":"assistant","model":"m","content":[],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":0,"cache_read_input_tokens":5,"output_tokens":1}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FromChat([]byte(tc.chat), "m")
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, got, []byte(tc.want))
		})
	}
	if _, err := FromChat([]byte(`{"choices":"x"}`), "m"); err == nil {
		t.Error("FromChat took a body that is not a chat completion")
	}
}

func TestUsage(t *testing.T) {
	tests := []struct {
		name, body string
		in, out    int64
		ok         bool
	}{
		{"message", `{"type":"message","usage":{"input_tokens":10,"output_tokens":3}}`, 10, 3, true},
		{"with cache", `{"usage":{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":5,"output_tokens":3}}`, 115, 3, true},
		{"message_start", `{"type":"message_start","message":{"usage":{"input_tokens":7,"output_tokens":1}}}`, 7, 1, true},
		{"none", `{"type":"message"}`, 0, 0, false},
		{"empty usage", `{"usage":{}}`, 0, 0, false},
		{"not JSON", `{`, 0, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, out, ok := Usage([]byte(tc.body))
			if in != tc.in || out != tc.out || ok != tc.ok {
				t.Errorf("Usage = %d, %d, %v, want %d, %d, %v", in, out, ok, tc.in, tc.out, tc.ok)
			}
		})
	}
}

func TestCountTokens(t *testing.T) {
	count := func(body string) int64 {
		t.Helper()
		got, err := CountTokens([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			InputTokens *int64 `json:"input_tokens"`
		}
		if err := json.Unmarshal(got, &v); err != nil || v.InputTokens == nil {
			t.Fatalf("answer %s: %v", got, err)
		}
		return *v.InputTokens
	}
	short := count(`{"model":"m","messages":[{"role":"user","content":"Hello"}]}`) // no max_tokens: count_tokens has none
	long := count(`{"model":"m","system":"` + strings.Repeat("word ", 400) + `","messages":[{"role":"user","content":"Hello"}]}`)
	image := count(`{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + strings.Repeat("A", 100000) + `"}}]}]}`)
	if short < 1 || short > 20 {
		t.Errorf("short = %d", short)
	}
	if long < short+400 || long > short+600 {
		t.Errorf("2000 bytes of system = %d tokens more than %d", long-short, short)
	}
	if image > 2000 { // an image counts a flat figure, not its bytes
		t.Errorf("image = %d", image)
	}
	if _, err := CountTokens([]byte(`{"model":"m","messages":[{"role":"tool","content":"x"}]}`)); err == nil {
		t.Error("CountTokens took an invalid request")
	}
}

func TestMessageID(t *testing.T) {
	fixedIDs(t)
	for in, want := range map[string]string{
		"chatcmpl-B9MB": "msg_B9MB",
		"gen-123-abc":   "msg_123-abc",
		"msg_01Th1nk":   "msg_01Th1nk",
		"0d5f2c6e":      "msg_0d5f2c6e",
		"":              "msg_id1",
		"chatcmpl-":     "msg_chatcmpl-",
	} {
		if got := messageID(in); got != want {
			t.Errorf("messageID(%q) = %q, want %q", in, got, want)
		}
	}
}
