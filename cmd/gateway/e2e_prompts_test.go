package main

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestPromptsThroughTheBinary renders and completes a prompt of the bootstrap file through the built
// gateway, in front of a local OpenAI-compatible upstream.
func TestPromptsThroughTheBinary(t *testing.T) {
	var calls atomicCounter
	var lastBody atomic.Value // string
	up := newChatUpstream(t, &calls)
	up.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.n.Add(1)
		b, _ := io.ReadAll(r.Body)
		lastBody.Store(string(b))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	})
	dir := t.TempDir()
	boot := writeFile(t, dir, "bootstrap.json", fmt.Sprintf(`{
  "api_keys": [{"key": "gw-prompts-key-1"}],
  "providers": [{"slug": "mock-openai", "provider": "openai", "api_key": "sk-x", "custom_host": %q}],
  "prompts": [{"id": "welcome", "versions": [
      {"published": true, "template": {"provider": "@mock-openai", "model": "m", "messages": [{"role": "user", "content": "Hi {{name}}"}], "temperature": 0.2}},
      {"template": {"provider": "@mock-openai", "model": "m2", "messages": [{"role": "user", "content": "Hello {{name}}"}]}}]}]
}`, up.URL+"/v1"))
	p := startGateway(t, nil, "--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--bootstrap", boot)
	if p.base == "" {
		t.Fatalf("gateway did not start: %v", p.err)
	}
	post := func(path, body string) (int, string) {
		req, _ := http.NewRequest("POST", p.base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-gateway-api-key", "gw-prompts-key-1")
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := post("/v1/prompts/welcome/render", `{"variables": {"name": "<Ada & Co>"}, "max_tokens": 9}`)
	if status != 200 || !strings.Contains(body, `"success":true`) || !strings.Contains(body, `"content":"Hi <Ada & Co>"`) ||
		!strings.Contains(body, `"max_tokens":9`) || calls.n.Load() != 0 {
		t.Fatalf("render: %d %s (upstream calls %d)", status, body, calls.n.Load())
	}
	status, body = post("/v1/prompts/welcome@latest/completions", `{"variables": {"name": "Ada"}}`)
	if status != 200 || !strings.Contains(body, `"status":"success"`) || !strings.Contains(body, `"object":"chat.completion"`) {
		t.Fatalf("completion: %d %s", status, body)
	}
	if sent, _ := lastBody.Load().(string); !strings.Contains(sent, `"Hello Ada"`) || !strings.Contains(sent, `"model":"m2"`) {
		t.Fatalf("upstream got %s", sent)
	}
	if status, body = post("/v1/prompts/welcome@7/completions", `{"variables": {}}`); status != 404 {
		t.Fatalf("unknown version: %d %s", status, body)
	}
}
