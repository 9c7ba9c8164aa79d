package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// TestResponsesThroughTheBinary drives /v1/responses with the official SDK against the binary: a stored
// Anthropic provider (a local upstream speaking Anthropic Messages) answers through the translation; the SDK
// creates, chains, streams, retrieves and deletes responses.
func TestResponsesThroughTheBinary(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/messages" {
			w.WriteHeader(404)
			return
		}
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, ev := range []string{
				`{"type":"message_start","message":{"id":"msg_s","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","usage":{"input_tokens":4,"output_tokens":1}}}`,
				`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Str"}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"eamed"}}`,
				`{"type":"content_block_stop","index":0}`,
				`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`,
				`{"type":"message_stop"}`,
			} {
				fmt.Fprintf(w, "event: x\ndata: %s\n\n", ev)
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		// The answer says how many messages the request held: chaining must have sent the earlier turns.
		n := strings.Count(string(body), `"role":`)
		fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"seen %d"}],"stop_reason":"end_turn","usage":{"input_tokens":4,"output_tokens":2}}`, n)
	}))
	defer up.Close()

	dir := t.TempDir()
	boot := writeFile(t, dir, "bootstrap.json", fmt.Sprintf(`{
  "api_keys": [{"key": "gw-e2e-key-1"}],
  "providers": [{"slug": "claude", "provider": "anthropic", "api_key": "sk-ant", "custom_host": %q}]
}`, up.URL+"/v1"))
	p := startGateway(t, nil, "--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--bootstrap", boot)
	if p.base == "" {
		t.Fatalf("gateway did not start: %v", p.err)
	}
	client := openai.NewClient(option.WithBaseURL(p.base+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0),
		option.WithHeader("x-gateway-api-key", "gw-e2e-key-1"), option.WithHeader("x-gateway-virtual-key", "claude"),
		option.WithRequestTimeout(10*time.Second))
	ctx := context.Background()
	text := func(s string) responses.ResponseNewParamsInputUnion {
		return responses.ResponseNewParamsInputUnion{OfString: openai.String(s)}
	}

	first, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "claude-sonnet-4-5", Input: text("one")})
	if err != nil {
		t.Fatal(err)
	}
	if first.OutputText() != "seen 1" {
		t.Fatalf("first answer %q", first.OutputText())
	}
	second, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "claude-sonnet-4-5", Input: text("two"),
		PreviousResponseID: openai.String(first.ID)})
	if err != nil {
		t.Fatal(err)
	}
	if second.OutputText() != "seen 3" { // user, assistant, user
		t.Fatalf("chained answer %q", second.OutputText())
	}

	stream := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "claude-sonnet-4-5", Input: text("stream")})
	var deltas strings.Builder
	var final responses.Response
	for stream.Next() {
		switch ev := stream.Current(); ev.Type {
		case "response.output_text.delta":
			deltas.WriteString(ev.Delta)
		case "response.completed":
			final = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	stream.Close()
	if deltas.String() != "Streamed" || final.OutputText() != "Streamed" {
		t.Fatalf("stream deltas %q, final %q", deltas.String(), final.OutputText())
	}

	got, err := client.Responses.Get(ctx, second.ID, responses.ResponseGetParams{})
	if err != nil || got.OutputText() != "seen 3" {
		t.Fatalf("retrieved %+v, %v", got, err)
	}
	var stored *responses.Response
	for range 200 { // a streamed response is stored once the gateway has closed its stream
		if stored, err = client.Responses.Get(ctx, final.ID, responses.ResponseGetParams{}); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil || stored.OutputText() != "Streamed" {
		t.Fatalf("streamed response stored: %+v, %v", stored, err)
	}
	if err := client.Responses.Delete(ctx, second.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Responses.Get(ctx, second.ID, responses.ResponseGetParams{}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("deleted response: %v, want 404", err)
	}
}
