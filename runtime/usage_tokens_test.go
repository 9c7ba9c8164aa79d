package runtime

import "testing"

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
