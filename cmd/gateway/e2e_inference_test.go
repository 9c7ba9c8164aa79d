package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestChatThroughTheBinary runs the built gateway with a bootstrap file whose provider points at a local
// OpenAI-compatible upstream, and sends chat completions the ways users do: virtual key, saved config with
// fallback, inline config, provider headers, and a stream.
func TestChatThroughTheBinary(t *testing.T) {
	var calls, failing atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/broken/v1/chat/completions" {
			failing.Add(1)
			w.WriteHeader(503)
			io.WriteString(w, `{"error":{"message":"down"}}`)
			return
		}
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"auth=%s"},"finish_reason":"stop"}]}`,
			r.Header.Get("Authorization"))
	}))
	defer up.Close()

	dir := t.TempDir()
	boot := writeFile(t, dir, "bootstrap.json", fmt.Sprintf(`{
  "api_keys": [{"key": "gw-e2e-key-1"}],
  "providers": [{"slug": "mock", "provider": "openai", "api_key": "sk-stored", "custom_host": %q}],
  "configs": [{"id": "fallback", "config": {"strategy": {"mode": "fallback"}, "targets": [
      {"provider": "openai", "api_key": "sk-a", "custom_host": %q},
      {"provider": "@mock"}]}}]
}`, up.URL+"/v1", up.URL+"/broken/v1"))
	p := startGateway(t, nil, "--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--bootstrap", boot)
	if p.base == "" {
		t.Fatalf("gateway did not start: %v", p.err)
	}
	chat := func(body string, headers ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", p.base+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-gateway-api-key", "gw-e2e-key-1")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	content := func(body string) string {
		var c struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		json.Unmarshal([]byte(body), &c)
		if len(c.Choices) == 0 {
			return ""
		}
		return c.Choices[0].Message.Content
	}
	const body = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}`

	resp, out := chat(body, "x-gateway-virtual-key", "mock")
	if resp.StatusCode != 200 || content(out) != "auth=Bearer sk-stored" {
		t.Fatalf("virtual key: %d %s", resp.StatusCode, out)
	}
	resp, out = chat(body, "x-gateway-config", "fallback")
	if resp.StatusCode != 200 || content(out) != "auth=Bearer sk-stored" || resp.Header.Get("x-gateway-last-used-option-index") != "config.targets[1]" || failing.Load() != 1 {
		t.Fatalf("saved fallback config: %d %s %v", resp.StatusCode, out, resp.Header)
	}
	resp, out = chat(body, "x-gateway-provider", "openai", "Authorization", "Bearer sk-caller", "x-gateway-custom-host", up.URL+"/v1")
	if resp.StatusCode != 200 || content(out) != "auth=Bearer sk-caller" || resp.Header.Get("x-gateway-provider") != "openai" {
		t.Fatalf("provider headers: %d %s", resp.StatusCode, out)
	}
	resp, out = chat(`{"model":"m","stream":true,"messages":[]}`, "x-gateway-provider", "@mock")
	if resp.StatusCode != 200 || !strings.HasSuffix(out, "data: [DONE]\n\n") || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %q", resp.StatusCode, out)
	}
	resp, out = chat(body, "x-gateway-config", `{"strategy": {"mode": "fallback"}, "targets": [{"provider": "openai"}]}`)
	if resp.StatusCode != 400 || !strings.Contains(out, `"param":"targets[0].api_key"`) && !strings.Contains(out, `"param":"targets[0]`) {
		t.Fatalf("bad inline config: %d %s", resp.StatusCode, out)
	}
	resp, out = chat(body, "x-gateway-provider", "openai", "Authorization", "Bearer x", "x-gateway-custom-host", "http://169.254.169.254/latest")
	if resp.StatusCode != 400 || !strings.Contains(out, "host_not_allowed") {
		t.Fatalf("metadata host: %d %s", resp.StatusCode, out)
	}
	p.stop(t, syscall.SIGTERM)
}
