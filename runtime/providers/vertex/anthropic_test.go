package vertex

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/providers"
)

func TestClaudeRoundTrip(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := "rawPredict"
		if stream {
			name = "streamRawPredict"
		}
		t.Run(name, func(t *testing.T) {
			answer, contentType := readFile(t, "claude.answer.json"), "application/json"
			if stream {
				answer, contentType = readFile(t, "claude.sse"), "text/event-stream"
			}
			fake := newFakeVertex(t, 200, contentType, answer)
			a := New()
			tg := newTarget(fake.URL, fields(t, "cloudy_project_id", "p", "cloudy_region", "us-east5"),
				map[string]string{"X-cloudy-LLM-Request-Type": "dedicated"})
			body := readFile(t, "claude.openai.json")
			if stream {
				body = []byte(strings.Replace(string(body), `"max_tokens"`, `"stream": true, "max_tokens"`, 1))
			}
			call := &providers.Call{Endpoint: providers.ChatCompletions, Body: body, Stream: stream}
			req, err := a.NewRequest(context.Background(), tg, call)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := fake.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got := fake.last(t)
			if want := "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4@20250514:" + name; got.path != want || got.query != "" {
				t.Errorf("request = %s?%s, want %s", got.path, got.query, want)
			}
			if got.header.Get("Authorization") != "Bearer ya29.caller-token" || got.header.Get("X-Vertex-AI-LLM-Request-Type") != "dedicated" {
				t.Errorf("headers = %v", got.header)
			}
			var sent map[string]any
			if err := json.Unmarshal(got.body, &sent); err != nil {
				t.Fatal(err)
			}
			if sent["anthropic_version"] != "vertex-2023-10-16" || sent["model"] != nil || sent["max_tokens"] != 256.0 || sent["messages"] == nil {
				t.Errorf("body = %s", got.body)
			}
			if stream && sent["stream"] != true {
				t.Errorf("a stream must ask for one: %s", got.body)
			}
			var out []byte
			if stream {
				out, err = io.ReadAll(a.TranslateStream(tg, call, resp.Body))
			} else {
				raw, _ := io.ReadAll(resp.Body)
				out, err = a.TranslateResponse(tg, call, raw)
			}
			if err != nil {
				t.Fatal(err)
			}
			if stream {
				if !strings.Contains(string(out), `"content":"Hello!"`) || !strings.HasSuffix(string(out), "data: [DONE]\n\n") {
					t.Errorf("stream = %s", out)
				}
				return
			}
			var c struct {
				Object  string `json:"object"`
				Choices []struct {
					Message      struct{ Content string } `json:"message"`
					FinishReason string                   `json:"finish_reason"`
				} `json:"choices"`
				Usage struct {
					PromptTokens     int `json:"prompt_tokens"`
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal(out, &c); err != nil {
				t.Fatal(err)
			}
			if c.Object != "chat.completion" || len(c.Choices) != 1 || c.Choices[0].Message.Content != "Hello!" ||
				c.Choices[0].FinishReason != "stop" || c.Usage.PromptTokens != 12 || c.Usage.CompletionTokens != 3 {
				t.Errorf("completion = %s", out)
			}
		})
	}
}

func TestClaudeError(t *testing.T) {
	call := &providers.Call{Endpoint: providers.ChatCompletions, Body: readFile(t, "claude.openai.json")}
	got := New().TranslateError(nil, call, 529, readFile(t, "claude.error.json"))
	var e struct {
		Error struct {
			Message       string          `json:"message"`
			Code          string          `json:"code"`
			ProviderError json.RawMessage `json:"provider_error"`
		} `json:"error"`
	}
	if err := json.Unmarshal(got, &e); err != nil {
		t.Fatal(err)
	}
	if e.Error.Message != "Overloaded" || e.Error.Code != "overloaded_error" {
		t.Errorf("error = %s", got)
	}
	jsonEqual(t, e.Error.ProviderError, readFile(t, "claude.error.json"))
}
