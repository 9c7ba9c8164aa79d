package runtime

import (
	"math"
	"testing"
)

func TestAnswerTokens(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		in, out int64
		ok      bool
	}{
		{"chat", `{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19}}`, 12, 7, true},
		{"spaced", "{\"usage\": {\n \"prompt_tokens\" : 3,\n \"completion_tokens\": 4}}", 3, 4, true},
		{"embeddings", `{"data":[],"usage":{"prompt_tokens":5,"total_tokens":5}}`, 5, 0, true},
		{"response", `{"output":[],"usage":{"input_tokens":9,"output_tokens":2,"input_tokens_details":{"cached_tokens":0}}}`, 9, 2, true},
		{"no usage", `{"choices":[]}`, 0, 0, false},
		{"text mentions usage", `{"choices":[{"message":{"content":"\"usage\":{\"prompt_tokens\":99}"}}]}`, 0, 0, false},
		{"null usage", `{"usage":null}`, 0, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, out, ok := AnswerTokens([]byte(tc.body))
			if in != tc.in || out != tc.out || ok != tc.ok {
				t.Errorf("AnswerTokens = %d, %d, %v; want %d, %d, %v", in, out, ok, tc.in, tc.out, tc.ok)
			}
		})
	}
	body := []byte(tests[0].body)
	if n := testing.AllocsPerRun(100, func() { AnswerTokens(body) }); n != 0 {
		t.Errorf("AnswerTokens allocates %v times", n)
	}
}

func TestTextBytes(t *testing.T) {
	tests := []struct {
		name, payload string
		want          int
	}{
		{"chat delta", `{"choices":[{"index":0,"delta":{"content":"Hello"}}]}`, 5},
		{"escapes count as written", `{"choices":[{"delta":{"content":"a\"b\n"}}]}`, 6},
		{"text completion", `{"choices":[{"text":"abc"},{"text":"de"}]}`, 5},
		{"responses delta", `{"type":"response.output_text.delta","delta":"xyz"}`, 3},
		{"tool arguments", `{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"{\"a\":1}"}}]}}]}`, 9},
		{"role only", `{"choices":[{"delta":{"role":"assistant","content":null}}]}`, 0},
		{"a key inside a string is text", `{"choices":[{"delta":{"content":"\"text\":\"no\""}}]}`, 15},
	}
	for _, tc := range tests {
		if got := textBytes([]byte(tc.payload)); got != tc.want {
			t.Errorf("%s: textBytes = %d, want %d", tc.name, got, tc.want)
		}
	}
	p := []byte(tests[0].payload)
	if n := testing.AllocsPerRun(100, func() { textBytes(p) }); n != 0 {
		t.Errorf("textBytes allocates %v times", n)
	}
}

// TestPriced: usage is priced at the answering provider's catalogue prices, as a stored provider's own "models"
// amend them; a model without a price has no cost.
func TestPriced(t *testing.T) {
	u := Usage{InputTokens: 1000, OutputTokens: 200, Known: true}
	tests := []struct {
		name, provider, model string
		models                string
		cost                  float64 // 0: unknown
	}{
		{"openai", "openai", "gpt-4o-mini", "", (1000*0.15 + 200*0.6) / 1e6},
		{"anthropic by alias", "anthropic", "claude-haiku-4-5", "", (1000*1 + 200*5) / 1e6},
		{"a stored provider's own price", "openai", "gpt-4o-mini",
			`[{"id":"gpt-4o-mini","context_window":128000,"input_per_mtok":1,"output_per_mtok":2}]`, (1000*1 + 200*2) / 1e6},
		{"unpriced", "openai", "my-finetune", "", 0},
	}
	for _, tc := range tests {
		resp := &Response{Provider: tc.provider}
		if tc.models != "" {
			resp.models = []byte(tc.models)
		}
		got := priced(resp, tc.model, u)
		if got.CostKnown != (tc.cost != 0) || math.Abs(got.CostUSD-tc.cost) > 1e-15 {
			t.Errorf("%s: cost %v (known %v), want %v", tc.name, got.CostUSD, got.CostKnown, tc.cost)
		}
		if got.InputTokens != u.InputTokens || got.OutputTokens != u.OutputTokens {
			t.Errorf("%s: usage changed: %+v", tc.name, got)
		}
	}
}
