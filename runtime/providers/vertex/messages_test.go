package vertex

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/providers"
)

func TestNativeMessagesRequest(t *testing.T) {
	a := New()
	if !a.NativeMessages(nil, "claude-sonnet-4-5@20250929") || a.NativeMessages(nil, "gemini-2.0-flash") {
		t.Fatal("NativeMessages must hold for Claude models only")
	}
	body := `{"model":"claude-sonnet-4-5@20250929","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`
	target := newTarget("http://127.0.0.1:1", fields(t, "cloudy_project_id", "proj-1", "cloudy_region", "us-east5"), nil)
	for _, stream := range []bool{false, true} {
		method := ":rawPredict"
		if stream {
			method = ":streamRawPredict"
		}
		req, err := a.NewRequest(context.Background(), target, &providers.Call{Endpoint: providers.Messages, Body: []byte(body), Stream: stream})
		if err != nil {
			t.Fatal(err)
		}
		if want := "/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929" + method; req.URL.Path != want {
			t.Errorf("path %s, want %s", req.URL.Path, want)
		}
		if req.Header.Get("Authorization") != "Bearer ya29.caller-token" {
			t.Errorf("authorization %q", req.Header.Get("Authorization"))
		}
		sent, _ := io.ReadAll(req.Body)
		jsonEqual(t, sent, []byte(`{"anthropic_version":"vertex-2023-10-16","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`))
	}
	_, err := a.NewRequest(context.Background(), target, &providers.Call{Endpoint: providers.Messages, Body: []byte(`{"model":"gemini-2.0-flash","messages":[]}`)})
	if err == nil || !strings.Contains(err.Error(), "Claude models only") {
		t.Errorf("a Gemini model natively: %v", err)
	}
}
