package runtime

import (
	"encoding/json"
	"testing"

	"github.com/llmgw/gateway/guardrails"
)

func TestWithHookResults(t *testing.T) {
	results := HookResults{Before: []guardrails.HookResult{{ID: "g", Verdict: true}}, After: []guardrails.HookResult{}}
	transformed := "redacted"
	tests := []struct {
		name        string
		body        string
		transformed *string
		content     string
	}{
		{"splice", `{"id":"c","choices":[{"message":{"content":"hi"}}]}`, nil, "hi"},
		{"trailing space", "{\"id\":\"c\",\"choices\":[{\"message\":{\"content\":\"hi\"}}]}\n  ", nil, "hi"},
		{"empty object", `{ }`, nil, ""},
		{"transformed answer", `{"choices":[{"message":{"content":"a@b.com"}}]}`, &transformed, "redacted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := withHookResults([]byte(tc.body), results, tc.transformed)
			var got struct {
				HookResults HookResults `json:"hook_results"`
				Choices     []struct {
					Message struct{ Content string } `json:"message"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("not JSON: %v: %s", err, out)
			}
			if len(got.HookResults.Before) != 1 || got.HookResults.Before[0].ID != "g" {
				t.Errorf("hook_results lost: %s", out)
			}
			if tc.content != "" && (len(got.Choices) == 0 || got.Choices[0].Message.Content != tc.content) {
				t.Errorf("content: %s", out)
			}
		})
	}
}
