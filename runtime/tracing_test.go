package runtime

import "testing"

func TestAnswerModel(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"chat", `{"id":"c","model":"gpt-4o-mini","choices":[]}`, "gpt-4o-mini"},
		{"spaced", `{"model" :  "m-1"}`, "m-1"},
		{"in content only", `{"choices":[{"message":{"content":"say \"model\": \"x\""}}]}`, ""},
		{"escaped value", `{"model":"a\"b"}`, ""},
		{"not a string", `{"model":3}`, ""},
		{"none", `{"id":"c"}`, ""},
		{"value named model", `{"object":"model","model":"real"}`, "real"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := answerModel([]byte(tc.body)); got != tc.want {
				t.Errorf("answerModel(%s) = %q, want %q", tc.body, got, tc.want)
			}
		})
	}
}
