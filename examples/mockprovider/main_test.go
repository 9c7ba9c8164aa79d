package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var listening = regexp.MustCompile(`mockprovider listening on (http://\S+)`)

// Test_main runs the mock as the walkthrough does (on a free port) and asks it what an OpenAI client would.
func Test_main(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-listen", "127.0.0.1:0"}, logs) }()
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == ""; time.Sleep(10 * time.Millisecond) {
		if m := listening.FindStringSubmatch(logs.String()); m != nil {
			base = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("never listened:\n%s", logs)
		}
	}
	client := &http.Client{Timeout: 10 * time.Second}
	post := func(path, body string) (int, string, http.Header) {
		t.Helper()
		resp, err := client.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}

	t.Run("chat", func(t *testing.T) {
		status, body, _ := post("/v1/chat/completions",
			`{"model":"mock-1","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"Hello there"}]}`)
		var got struct {
			Object  string `json:"object"`
			Model   string `json:"model"`
			Choices []struct {
				Message      struct{ Role, Content string } `json:"message"`
				FinishReason string                         `json:"finish_reason"`
			} `json:"choices"`
			Usage struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
				TotalTokens      int `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(body), &got); err != nil || status != 200 {
			t.Fatalf("%d %s (%v)", status, body, err)
		}
		if got.Object != "chat.completion" || got.Model != "mock-1" || len(got.Choices) != 1 ||
			got.Choices[0].Message.Content != "You said: Hello there" || got.Choices[0].Message.Role != "assistant" ||
			got.Choices[0].FinishReason != "stop" || got.Usage.PromptTokens != 4 || got.Usage.CompletionTokens != 4 ||
			got.Usage.TotalTokens != 8 {
			t.Fatalf("answer %+v", got)
		}
	})

	t.Run("content parts", func(t *testing.T) {
		_, body, _ := post("/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"b"}]}]}`)
		if !strings.Contains(body, `"content":"You said: a\nb"`) {
			t.Fatalf("answer %s", body)
		}
	})

	t.Run("stream", func(t *testing.T) {
		status, body, h := post("/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"one two"}]}`)
		if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("%d %v", status, h)
		}
		var text strings.Builder
		var finish string
		sc := bufio.NewScanner(strings.NewReader(body))
		var last string
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			last = data
			if data == "[DONE]" {
				break
			}
			var chunk struct {
				Object  string `json:"object"`
				Choices []struct {
					Delta        struct{ Content string } `json:"delta"`
					FinishReason *string                  `json:"finish_reason"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(data), &chunk); err != nil || chunk.Object != "chat.completion.chunk" || len(chunk.Choices) != 1 {
				t.Fatalf("chunk %s: %v", data, err)
			}
			text.WriteString(chunk.Choices[0].Delta.Content)
			if chunk.Choices[0].FinishReason != nil {
				finish = *chunk.Choices[0].FinishReason
			}
		}
		if text.String() != "You said: one two" || finish != "stop" || last != "[DONE]" {
			t.Fatalf("streamed %q, finish %q, last %q:\n%s", text.String(), finish, last, body)
		}
	})

	t.Run("errors", func(t *testing.T) {
		tests := []struct {
			name, method, path, body string
			status                   int
		}{
			{"not JSON", "POST", "/v1/chat/completions", "{", 400},
			{"other path", "POST", "/v1/embeddings", `{}`, 404},
			{"wrong method", "GET", "/v1/chat/completions", "", 404},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				req, _ := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var e struct {
					Error struct{ Message, Type string } `json:"error"`
				}
				if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != tc.status ||
					e.Error.Type != "invalid_request_error" || e.Error.Message == "" {
					t.Fatalf("%d %+v (%v)", resp.StatusCode, e, err)
				}
			})
		}
	})

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if !strings.Contains(logs.String(), `POST /v1/chat/completions model="mock-1" stream=false messages=2`) {
		t.Errorf("requests not logged:\n%s", logs)
	}
}

func TestBadFlag(t *testing.T) {
	if err := run(context.Background(), []string{"-port", "1"}, io.Discard); err == nil {
		t.Fatal("an unknown flag was accepted")
	}
}
