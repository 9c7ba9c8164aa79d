package responses_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/llmgw/gateway/runtime/responses"
	"github.com/llmgw/gateway/runtime/schema"
)

// FuzzStream feeds arbitrary chat streams to Stream: it must never panic, and its output must always be a
// well-formed responses stream ending with a terminal event.
func FuzzStream(f *testing.F) {
	for _, tc := range chatStreams {
		f.Add(readFile(f, tc.path))
	}
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\"{}\"}}]}}]}\n\ndata: [DONE]\n\n"))
	req, err := schema.DecodeResponseRequest([]byte(`{"model":"m","input":"hi"}`))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, chat []byte) {
		out, err := io.ReadAll(responses.Stream(io.NopCloser(bytes.NewReader(chat)), req, "resp_fuzz", 1))
		if err != nil {
			t.Fatal(err)
		}
		checkEvents(t, parseEvents(t, out))
	})
}
