package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAnthropicSDKThroughTheBinary emulates Anthropic's official SDK with plain HTTP against the binary: the
// headers it sends (the gateway key in x-api-key, anthropic-version, the Stainless headers; a provider header as
// ANTHROPIC_CUSTOM_HEADERS adds it), a whole message and a stream, read as the SDK reads them, from a local
// OpenAI-format upstream that the bootstrap file stores.
func TestAnthropicSDKThroughTheBinary(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-upstream" {
			w.WriteHeader(404)
			return
		}
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, chunk := range []string{
				`{"id":"chatcmpl-s","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":"Str"},"finish_reason":null}]}`,
				`{"id":"chatcmpl-s","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"eamed"},"finish_reason":"stop"}]}`,
				`{"id":"chatcmpl-s","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":6,"completion_tokens":2,"total_tokens":8}}`,
			} {
				fmt.Fprintf(w, "data: %s\n\n", chunk)
				w.(http.Flusher).Flush()
			}
			io.WriteString(w, "data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-w","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Whole"},"finish_reason":"stop"}],"usage":{"prompt_tokens":6,"completion_tokens":1,"total_tokens":7}}`)
	}))
	defer up.Close()

	dir := t.TempDir()
	boot := writeFile(t, dir, "bootstrap.json", fmt.Sprintf(`{
  "api_keys": [{"key": "gw-e2e-key-1"}],
  "providers": [{"slug": "oai", "provider": "openai", "api_key": "sk-upstream", "custom_host": %q}]
}`, up.URL+"/v1"))
	p := startGateway(t, nil, "--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--bootstrap", boot)
	if p.base == "" {
		t.Fatalf("gateway did not start: %v", p.err)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	post := func(body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", p.base+"/v1/messages", strings.NewReader(body))
		for name, value := range map[string]string{
			"x-api-key": "gw-e2e-key-1", "anthropic-version": "2023-06-01", "content-type": "application/json",
			"accept": "application/json", "user-agent": "Anthropic/Python 0.69.0", "x-stainless-lang": "python",
			"x-stainless-retry-count": "0", "x-stainless-timeout": "600", "x-gateway-virtual-key": "oai",
		} {
			req.Header.Set(name, value)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	resp := post(`{"model":"gpt-4o-mini","max_tokens":1024,"messages":[{"role":"user","content":"Hello"}]}`)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var msg struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Role    string `json:"role"`
		Model   string `json:"model"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StopReason string `json:"stop_reason"`
		Usage      struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(raw, &msg) != nil || msg.Type != "message" || msg.Role != "assistant" || !strings.HasPrefix(msg.ID, "msg_") ||
		len(msg.Content) != 1 || msg.Content[0].Text != "Whole" || msg.StopReason != "end_turn" || msg.Usage.InputTokens != 6 || msg.Usage.OutputTokens != 1 {
		t.Fatalf("message %d %s", resp.StatusCode, raw)
	}
	if resp.Header.Get("x-gateway-provider") != "openai" || resp.Header.Get("x-gateway-trace-id") == "" {
		t.Errorf("gateway headers %v", resp.Header)
	}

	// The SDK's stream reader: "event:" names the event, "data:" holds it, a blank line ends it.
	resp = post(`{"model":"gpt-4o-mini","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`)
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream %d %v", resp.StatusCode, resp.Header)
	}
	var names []string
	var text strings.Builder
	var outputTokens float64
	sc := bufio.NewScanner(resp.Body)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var ev map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil || ev["type"] != name {
				t.Fatalf("event %q data %q", name, line)
			}
			names = append(names, name)
			if d, ok := ev["delta"].(map[string]any); ok && d["type"] == "text_delta" {
				text.WriteString(d["text"].(string))
			}
			if u, ok := ev["usage"].(map[string]any); ok && name == "message_delta" {
				outputTokens, _ = u["output_tokens"].(float64)
			}
		}
	}
	want := "message_start ping content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(names, " "); got != want || text.String() != "Streamed" || outputTokens != 2 {
		t.Fatalf("events %s (text %q, output tokens %v)\nwant %s", got, text.String(), outputTokens, want)
	}

	// A wrong key is Anthropic's authentication_error, which the SDK raises as AuthenticationError.
	req, _ := http.NewRequest("POST", p.base+"/v1/messages", strings.NewReader(`{}`))
	req.Header.Set("x-api-key", "sk-ant-not-a-gateway-key")
	req.Header.Set("content-type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(string(raw), `"type":"authentication_error"`) || !strings.HasPrefix(string(raw), `{"type":"error"`) {
		t.Fatalf("wrong key %d %s", resp.StatusCode, raw)
	}
}
