package routes

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// TestOpenAISDKResponses drives /v1/responses with the official SDK over a real listener: creating (native
// and translated), streaming (translated and native), retrieving and deleting responses, chaining included.
func TestOpenAISDKResponses(t *testing.T) {
	f := newFixture(t, Options{})
	base, _ := f.serve(t)
	claude := anthropicUpstream(t)
	f.storeProvider(t, "claude", "anthropic", claude.URL+"/v1")
	native := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_ns\",\"object\":\"response\",\"status\":\"in_progress\",\"output\":[]}}\n\n")
			io.WriteString(w, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"msg_n1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hello!\"}\n\n")
			io.WriteString(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":"+strings.Replace(nativeResponse, "resp_native1", "resp_ns", 1)+"}\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, nativeResponse)
	})
	f.storeProvider(t, "oai", "openai", native.URL+"/v1")
	ctx := context.Background()
	translated := sdkClient(base, HeaderAPIKey, f.plain, HeaderVirtualKey, "claude")
	nativeClient := sdkClient(base, HeaderAPIKey, f.plain, HeaderVirtualKey, "oai")

	t.Run("create, chain, retrieve, delete", func(t *testing.T) {
		r, err := translated.Responses.New(ctx, responses.ResponseNewParams{Model: "claude-sonnet-4-5",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hi")}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != responses.ResponseStatusCompleted || !strings.HasPrefix(r.OutputText(), "answer ") {
			t.Fatalf("response %+v", r)
		}
		next, err := translated.Responses.New(ctx, responses.ResponseNewParams{Model: "claude-sonnet-4-5",
			PreviousResponseID: openai.String(r.ID), Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("More")}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := translated.Responses.Get(ctx, next.ID, responses.ResponseGetParams{})
		if err != nil || got.ID != next.ID || got.OutputText() != next.OutputText() {
			t.Fatalf("retrieved %+v, %v", got, err)
		}
		if err := translated.Responses.Delete(ctx, next.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := translated.Responses.Get(ctx, next.ID, responses.ResponseGetParams{}); err == nil || !strings.Contains(err.Error(), "404") {
			t.Fatalf("deleted response: %v, want 404", err)
		}
	})

	t.Run("native create", func(t *testing.T) {
		r, err := nativeClient.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-4o-mini",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hi")}})
		if err != nil || r.ID != "resp_native1" || r.OutputText() != "Hello!" {
			t.Fatalf("native response %+v, %v", r, err)
		}
	})

	for _, tc := range []struct {
		name   string
		client openai.Client
		model  string
		text   string
	}{
		{"translated stream", translated, "claude-sonnet-4-5", "Sunny"},
		{"native stream", nativeClient, "gpt-4o-mini", "Hello!"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream := tc.client.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: tc.model,
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather?")}})
			var text strings.Builder
			var final responses.Response
			for stream.Next() {
				switch ev := stream.Current(); ev.Type {
				case "response.output_text.delta":
					text.WriteString(ev.Delta)
				case "response.completed":
					final = ev.Response
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			stream.Close()
			if text.String() != tc.text || final.OutputText() != tc.text {
				t.Fatalf("deltas %q, final %q", text.String(), final.OutputText())
			}
			var err error
			for range 100 { // stored once the gateway has closed the stream
				var got *responses.Response
				if got, err = tc.client.Responses.Get(ctx, final.ID, responses.ResponseGetParams{}); err == nil {
					if got.OutputText() != tc.text {
						t.Fatalf("stored %q", got.OutputText())
					}
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
			t.Fatalf("streamed response not stored: %v", err)
		})
	}
}
