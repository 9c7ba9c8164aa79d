package routes

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkResponsesGateway is a non-streamed, stored response through the whole gateway to a loopback
// upstream: natively (OpenAI) and translated (Anthropic Messages), each with the synced store of the answer.
func BenchmarkResponsesGateway(b *testing.B) {
	for _, tc := range []struct {
		name, provider, model, answer string
	}{
		{"native", "openai", "gpt-4o-mini", nativeResponse},
		{"translated", "anthropic", "claude-sonnet-4-5", anthropicAnswer(1)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			f := newFixture(b, Options{})
			answer := []byte(tc.answer)
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				w.Write(answer)
			}))
			b.Cleanup(up.Close)
			f.storeProvider(b, "p", tc.provider, up.URL+"/v1")
			runPost(b, f.srv.Handler().Handler(), "/v1/responses", `{"model":"`+tc.model+`","input":"Hello there"}`,
				HeaderAPIKey, f.plain, HeaderVirtualKey, "p")
		})
	}
}

// BenchmarkFinalTap is the cost the store adds to a streamed response: watching its events for the final one.
func BenchmarkFinalTap(b *testing.B) {
	var sb strings.Builder
	for range 200 {
		sb.WriteString("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"word \"}\n\n")
	}
	sb.WriteString("event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":" + nativeResponse + "}\n\n")
	events := sb.String()
	buf := make([]byte, 32<<10)
	b.SetBytes(int64(len(events)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		saved := false
		tap := &finalTap{src: io.NopCloser(strings.NewReader(events)), save: func(json.RawMessage) { saved = true }}
		io.CopyBuffer(io.Discard, struct{ io.Reader }{tap}, buf)
		tap.Close()
		if !saved {
			b.Fatal("final response not found")
		}
	}
}
