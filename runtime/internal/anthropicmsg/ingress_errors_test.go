package anthropicmsg

import (
	"strings"
	"testing"
)

func TestErrorType(t *testing.T) {
	for status, want := range map[int]string{
		400: "invalid_request_error", 401: "authentication_error", 402: "billing_error", 403: "permission_error",
		404: "not_found_error", 408: "invalid_request_error", 413: "request_too_large", 422: "invalid_request_error",
		429: "rate_limit_error", 446: "invalid_request_error", 500: "api_error", 502: "api_error", 503: "api_error",
		504: "timeout_error", 529: "overloaded_error",
	} {
		if got := ErrorType(status); got != want {
			t.Errorf("ErrorType(%d) = %q, want %q", status, got, want)
		}
	}
}

func TestErrorFromChat(t *testing.T) {
	long := "a" + strings.Repeat("é", maxErrorText) // two bytes a character after one: the cut falls inside one
	tests := []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"gateway error", 401, `{"error":{"message":"invalid API key","type":"authentication_error","code":"invalid_api_key","param":null}}`,
			`{"type":"error","error":{"type":"authentication_error","message":"invalid API key"}}`},
		{"guardrail", 446, `{"error":{"message":"denied by <policy> & co","type":"hooks_failed"},"hook_results":{}}`,
			`{"type":"error","error":{"type":"invalid_request_error","message":"denied by <policy> & co"}}`},
		{"plain text", 502, "  upstream said \"no\"\n", `{"type":"error","error":{"type":"api_error","message":"upstream said \"no\""}}`},
		{"other JSON", 500, `{"detail":"x"}`, `{"type":"error","error":{"type":"api_error","message":"{\"detail\":\"x\"}"}}`},
		{"empty", 529, ``, `{"type":"error","error":{"type":"overloaded_error","message":"the request failed"}}`},
		{"empty 429", 429, ``, `{"type":"error","error":{"type":"rate_limit_error","message":"Too Many Requests"}}`},
		{"long", 500, long, `{"type":"error","error":{"type":"api_error","message":"a` + strings.Repeat("é", maxErrorText/2-1) + `"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(ErrorFromChat(tc.status, []byte(tc.body))); got != tc.want {
				t.Errorf("ErrorFromChat =\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
}

func TestErrorBody(t *testing.T) {
	got := string(ErrorBody(400, "max_tokens: Field required"))
	want := `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}`
	if got != want {
		t.Errorf("ErrorBody = %s, want %s", got, want)
	}
}
