package anthropic

import (
	"context"
	"io"
	"testing"

	"github.com/llmgw/gateway/runtime/providers"
)

func TestNativeMessagesRequest(t *testing.T) {
	body := `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"Hi"}]}`
	tests := []struct {
		name     string
		endpoint providers.Endpoint
		stream   bool
		header   map[string]string
		path     string
		version  string
		beta     string
	}{
		{"message", providers.Messages, false, nil, "/v1/messages", DefaultVersion, ""},
		{"stream with the caller's version and beta", providers.Messages, true,
			map[string]string{"anthropic-version": "2024-01-01", "anthropic-beta": "tools-2024"}, "/v1/messages", "2024-01-01", "tools-2024"},
		{"token count", providers.MessagesCountTokens, false, nil, "/v1/messages/count_tokens", DefaultVersion, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := Adapter{}
			target := &providers.Target{Provider: ID, BaseURL: "http://127.0.0.1:1/v1", APIKey: "sk-ant", Header: headerReader(tc.header)}
			if !a.NativeMessages(target, "anything") || !a.NativeCountTokens() {
				t.Fatal("Anthropic is native for every model")
			}
			req, err := a.NewRequest(context.Background(), target, &providers.Call{Endpoint: tc.endpoint, Body: []byte(body), Stream: tc.stream})
			if err != nil {
				t.Fatal(err)
			}
			sent, _ := io.ReadAll(req.Body)
			if req.URL.Path != tc.path || string(sent) != body {
				t.Errorf("sent %s %s, want %s with the caller's body unchanged", req.URL.Path, sent, tc.path)
			}
			if req.Header.Get("X-Api-Key") != "sk-ant" || req.Header.Get("Anthropic-Version") != tc.version || req.Header.Get("Anthropic-Beta") != tc.beta {
				t.Errorf("headers %v", req.Header)
			}
			if accept := req.Header.Get("Accept"); (accept == "text/event-stream") != tc.stream {
				t.Errorf("accept %q for stream %v", accept, tc.stream)
			}
		})
	}
}
