package routes

import (
	"io"
	"net/http"
	"strings"
	"testing"

	_ "github.com/llmgw/gateway/runtime/providers/anthropic"
	_ "github.com/llmgw/gateway/runtime/providers/azure"
	_ "github.com/llmgw/gateway/runtime/providers/bedrock"
	_ "github.com/llmgw/gateway/runtime/providers/google"
	_ "github.com/llmgw/gateway/runtime/providers/vertex"
)

// Smoke tests of each shipped adapter through the whole gateway: the OpenAI-shaped request goes in, the
// provider's wire format reaches a local upstream, an OpenAI-shaped answer comes back. The adapters' own
// packages test their translation in depth.

func TestAzureThroughTheGateway(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, chatAnswer)
	})
	for _, provider := range []string{"azure-openai", "cloudx"} {
		a := f.chat(t, chatBody, HeaderProvider, provider, "Authorization", "Bearer azure-key", HeaderCustomHost, up.URL,
			"x-gateway-cloudx-deployment-id", "gpt4o-prod", "x-gateway-cloudx-api-version", "2024-10-21")
		if a.status != 200 || string(a.body) != chatAnswer || a.header.Get(HeaderAnswerProvider) != "azure-openai" {
			t.Fatalf("%s: %d %s", provider, a.status, a.body)
		}
		r, _ := up.lastRequest()
		if r.URL.Path != "/openai/deployments/gpt4o-prod/chat/completions" || r.URL.Query().Get("api-version") != "2024-10-21" {
			t.Errorf("%s: upstream got %s", provider, r.URL)
		}
		if r.Header.Get("api-key") != "azure-key" || r.Header.Get("Authorization") != "" {
			t.Errorf("%s: upstream auth api-key=%q Authorization=%q", provider, r.Header.Get("api-key"), r.Header.Get("Authorization"))
		}
	}
}

func TestAnthropicThroughTheGateway(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("x-api-key") != "sk-ant" {
			w.WriteHeader(401)
			io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
			return
		}
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Hello!"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2}}`)
	})
	a := f.chat(t, chatBody, HeaderProvider, "anthropic", "Authorization", "Bearer sk-ant", HeaderCustomHost, up.URL+"/v1")
	if a.status != 200 || a.header.Get(HeaderAnswerProvider) != "anthropic" {
		t.Fatalf("%d %s", a.status, a.body)
	}
	got := a.json(t)
	msg := got["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if got["object"] != "chat.completion" || msg["content"] != "Hello!" || got["usage"].(map[string]any)["total_tokens"] != float64(7) {
		t.Errorf("answer %s", a.body)
	}
	r, body := up.lastRequest()
	if r.URL.Path != "/v1/messages" || !strings.Contains(body, `"max_tokens"`) {
		t.Errorf("upstream got %s %s", r.URL.Path, body)
	}
	// The provider's error comes back in OpenAI's shape with the provider's status and raw body.
	a = f.chat(t, chatBody, HeaderProvider, "anthropic", "Authorization", "Bearer wrong", HeaderCustomHost, up.URL+"/v1")
	if a.status != 401 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	e := a.json(t)["error"].(map[string]any)
	if e["message"] != "invalid x-api-key" || e["provider_error"] == nil {
		t.Errorf("error %s", a.body)
	}
}

func TestBedrockThroughTheGateway(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"output":{"message":{"role":"assistant","content":[{"text":"Hello!"}]}},"stopReason":"end_turn","usage":{"inputTokens":5,"outputTokens":2,"totalTokens":7},"metrics":{"latencyMs":10}}`)
	})
	a := f.chat(t, `{"model":"anthropic.claude-3-haiku-20240307-v1:0","messages":[{"role":"user","content":"Hi"}]}`,
		HeaderProvider, "cloudz", HeaderCustomHost, up.URL, "x-gateway-cloudz-access-key-id", "AKIDEXAMPLE",
		"x-gateway-cloudz-secret-access-key", "secret", "x-gateway-cloudz-region", "us-east-1")
	if a.status != 200 || a.header.Get(HeaderAnswerProvider) != "bedrock" {
		t.Fatalf("%d %s", a.status, a.body)
	}
	msg := a.json(t)["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if msg["content"] != "Hello!" {
		t.Errorf("answer %s", a.body)
	}
	r, _ := up.lastRequest()
	if r.URL.EscapedPath() != "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse" {
		t.Errorf("upstream path %s", r.URL.EscapedPath())
	}
	if auth := r.Header.Get("Authorization"); !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(auth, "/us-east-1/bedrock/aws4_request") {
		t.Errorf("upstream not SigV4-signed: %q", auth)
	}
}

func TestGeminiThroughTheGateway(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello!"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":2,"totalTokenCount":7}}`)
	})
	a := f.chat(t, `{"model":"gemini-2.0-flash","messages":[{"role":"user","content":"Hi"}]}`,
		HeaderProvider, "google", "Authorization", "Bearer AIza-key", HeaderCustomHost, up.URL)
	if a.status != 200 || a.header.Get(HeaderAnswerProvider) != "google" {
		t.Fatalf("%d %s", a.status, a.body)
	}
	msg := a.json(t)["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if msg["content"] != "Hello!" {
		t.Errorf("answer %s", a.body)
	}
	r, _ := up.lastRequest()
	if r.URL.Path != "/v1beta/models/gemini-2.0-flash:generateContent" || r.Header.Get("x-goog-api-key") != "AIza-key" {
		t.Errorf("upstream got %s key %q", r.URL.Path, r.Header.Get("x-goog-api-key"))
	}
	// Vertex with a caller's access token.
	a = f.chat(t, `{"model":"gemini-2.0-flash","messages":[{"role":"user","content":"Hi"}]}`,
		HeaderProvider, "cloudy", "Authorization", "Bearer ya29.token", HeaderCustomHost, up.URL,
		"x-gateway-cloudy-project-id", "proj-1", "x-gateway-cloudy-region", "us-central1")
	if a.status != 200 || a.header.Get(HeaderAnswerProvider) != "vertex-ai" {
		t.Fatalf("vertex: %d %s", a.status, a.body)
	}
	r, _ = up.lastRequest()
	if r.URL.Path != "/v1/projects/proj-1/locations/us-central1/publishers/google/models/gemini-2.0-flash:generateContent" ||
		r.Header.Get("Authorization") != "Bearer ya29.token" {
		t.Errorf("vertex upstream got %s auth %q", r.URL.Path, r.Header.Get("Authorization"))
	}
}
