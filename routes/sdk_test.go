package routes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// These tests drive the gateway with the official OpenAI SDK, as users do: base URL pointed at the gateway,
// gateway headers as default headers.

func sdkClient(base string, headers ...string) openai.Client {
	opts := []option.RequestOption{option.WithBaseURL(base + "/v1/"), option.WithAPIKey("sk-provider"), option.WithMaxRetries(0)}
	for i := 0; i+1 < len(headers); i += 2 {
		opts = append(opts, option.WithHeader(headers[i], headers[i+1]))
	}
	return openai.NewClient(opts...)
}

func TestOpenAISDK(t *testing.T) {
	f := newFixture(t, Options{})
	base, _ := f.serve(t)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		switch {
		case r.URL.Path == "/v1/embeddings":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":1,"total_tokens":1}}`)
		case strings.Contains(r.Header.Get("Accept"), "text/event-stream"):
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, sseEvents)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, chatAnswer)
		}
	})
	client := sdkClient(base, HeaderAPIKey, f.plain, HeaderProvider, "openai", HeaderCustomHost, up.URL+"/v1")
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}}

	t.Run("chat", func(t *testing.T) {
		var resp *http.Response
		c, err := client.Chat.Completions.New(ctx, params, option.WithResponseInto(&resp))
		if err != nil {
			t.Fatal(err)
		}
		if c.Choices[0].Message.Content != "Hello!" || c.Usage.TotalTokens != 7 {
			t.Fatalf("completion %+v", c)
		}
		if resp.Header.Get(HeaderAnswerProvider) != "openai" || resp.Header.Get(HeaderTraceID) == "" {
			t.Errorf("gateway headers missing: %v", resp.Header)
		}
		if r, _ := up.lastRequest(); r.Header.Get("Authorization") != "Bearer sk-provider" {
			t.Errorf("provider key not passed: %q", r.Header.Get("Authorization"))
		}
	})
	t.Run("stream", func(t *testing.T) {
		stream := client.Chat.Completions.NewStreaming(ctx, params)
		var text strings.Builder
		for stream.Next() {
			chunk := stream.Current()
			if len(chunk.Choices) > 0 {
				text.WriteString(chunk.Choices[0].Delta.Content)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if text.String() != "Hello" {
			t.Fatalf("streamed text %q", text.String())
		}
	})
	t.Run("embeddings", func(t *testing.T) {
		e, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "text-embedding-3-small",
			Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hello")}})
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Data) != 1 || len(e.Data[0].Embedding) != 2 {
			t.Fatalf("embeddings %+v", e)
		}
	})
	t.Run("gateway errors reach the SDK as API errors", func(t *testing.T) {
		bad := sdkClient(base, HeaderAPIKey, "gw-wrong", HeaderProvider, "openai")
		_, err := bad.Chat.Completions.New(ctx, params)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Code != "invalid_api_key" {
			t.Fatalf("err = %v", err)
		}
		badConfig := sdkClient(base, HeaderAPIKey, f.plain, HeaderConfig, `{"retry": {"attempts": -1}}`)
		_, err = badConfig.Chat.Completions.New(ctx, params)
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "retry.attempts" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("provider errors keep their status", func(t *testing.T) {
		limited := newUpstream(t, status(429, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`))
		c := sdkClient(base, HeaderAPIKey, f.plain, HeaderProvider, "openai", HeaderCustomHost, limited.URL+"/v1")
		_, err := c.Chat.Completions.New(ctx, params)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "rate_limit_exceeded" {
			t.Fatalf("err = %v", fmt.Sprint(err))
		}
	})
}

// TestOpenAISDKCacheAndRateLimit: the SDK reads a cached answer, streamed and not, and a 429 of a policy as
// its own rate-limit error.
func TestOpenAISDKCacheAndRateLimit(t *testing.T) {
	f, _ := newLimitedFixture(t)
	base, _ := f.serve(t)
	up := newUpstream(t, nil)
	f.newPolicy(t, f.admin, `{"type": "requests", "unit": "rpm", "value": 3}`)
	client := sdkClient(base, append([]string{HeaderAPIKey, f.plain, HeaderConfig, cacheConfig("simple", 0)}, upstreamHeaders(up)...)...)
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}}

	if _, err := client.Chat.Completions.New(ctx, params); err != nil {
		t.Fatal(err)
	}
	var resp *http.Response
	c, err := client.Chat.Completions.New(ctx, params, option.WithResponseInto(&resp))
	if err != nil || c.Choices[0].Message.Content != "Hello!" || resp.Header.Get(HeaderCacheStatus) != "HIT" {
		t.Fatalf("cached answer: %+v %v %v", c, err, resp.Header)
	}
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil || acc.Choices[0].Message.Content != "Hello!" || acc.Usage.TotalTokens != 7 {
		t.Fatalf("replayed stream: %+v %v", acc.ChatCompletion, err)
	}
	if up.calls.Load() != 1 {
		t.Fatalf("upstream called %d times", up.calls.Load())
	}
	_, err = client.Chat.Completions.New(ctx, params)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "rate_limited" || apiErr.Type != "rate_limit_error" {
		t.Fatalf("fourth request: %v, want the SDK's 429 rate_limited", err)
	}
}
