package responses_test

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/responses"
)

// FuzzRecord: whatever the stream and however it is cut into reads, Record passes it on unchanged, and
// saves the last final event's response object when there is one.
func FuzzRecord(f *testing.F) {
	f.Add("event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\"}}\n\n", uint8(3))
	f.Add("data: {\"type\":\"response.output_text.delta\",\"delta\":\"\\\"response\\\"\"}\n\ndata: [DONE]\n", uint8(1))
	f.Add("data: {\"type\":\"response.failed\",\"response\":{}}", uint8(7))
	f.Fuzz(func(t *testing.T, stream string, step uint8) {
		var saved json.RawMessage
		tap := responses.Record(io.NopCloser(strings.NewReader(stream)), func(obj json.RawMessage) { saved = obj })
		buf := make([]byte, int(step%16)+1)
		var out strings.Builder
		for {
			n, err := tap.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				break
			}
		}
		tap.Close()
		if out.String() != stream {
			t.Fatalf("tap changed the stream:\n%q\n%q", out.String(), stream)
		}
		if saved != nil && !json.Valid(saved) {
			t.Fatalf("saved %q", saved)
		}
	})
}

func BenchmarkRecord(b *testing.B) {
	var sb strings.Builder
	for range 200 {
		sb.WriteString("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"word \"}\n\n")
	}
	sb.WriteString("event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"object\":\"response\"}}\n\n")
	events := sb.String()
	buf := make([]byte, 32<<10)
	b.SetBytes(int64(len(events)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var saved json.RawMessage
		r := responses.Record(io.NopCloser(strings.NewReader(events)), func(obj json.RawMessage) { saved = obj })
		_, _ = io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, buf)
		r.Close()
		if saved == nil {
			b.Fatal("final response not found")
		}
	}
}
