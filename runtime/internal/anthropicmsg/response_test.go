package anthropicmsg

import (
	"errors"
	"path/filepath"
	"testing"
)

func TestResponseGolden(t *testing.T) {
	fixedNow(t)
	tests := []struct {
		name string
	}{{"text"}, {"tool_use"}, {"thinking"}, {"stop_sequence"}, {"refusal"}}
	for _, tc := range tests {
		in := readFile(t, filepath.Join("testdata", "response", tc.name+".anthropic.json"))
		for _, strict := range []bool{false, true} {
			want := "openai"
			if strict {
				want = "strict"
			}
			t.Run(tc.name+"/"+want, func(t *testing.T) {
				got, err := Response(in, strict)
				if err != nil {
					t.Fatal(err)
				}
				jsonEqual(t, got, readFile(t, filepath.Join("testdata", "response", tc.name+"."+want+".json")))
			})
		}
	}
}

func TestResponseErrors(t *testing.T) {
	tests := []struct {
		name, body  string
		streamError bool
	}{
		{"not JSON", `{"id":`, false},
		{"not a message", `{"type":"completion","completion":"x"}`, false},
		{"error body", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, true},
		{"content not an array", `{"type":"message","content":"x"}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Response([]byte(tc.body), false)
			if err == nil {
				t.Fatal("no error")
			}
			var se *StreamError
			if errors.As(err, &se) != tc.streamError {
				t.Errorf("err = %v; StreamError %v, want %v", err, !tc.streamError, tc.streamError)
			}
		})
	}
}

func TestFinishReason(t *testing.T) {
	tests := []struct{ in, want string }{
		{"end_turn", "stop"}, {"stop_sequence", "stop"}, {"pause_turn", "stop"}, {"", "stop"},
		{"max_tokens", "length"}, {"model_context_window_exceeded", "length"},
		{"tool_use", "tool_calls"}, {"refusal", "content_filter"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := FinishReason(tc.in); got != tc.want {
				t.Errorf("FinishReason(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
