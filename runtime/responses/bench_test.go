package responses_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/llmgw/gateway/runtime/responses"
	"github.com/llmgw/gateway/runtime/schema"
)

// BenchmarkToChatFromChat is the translation cost of one non-streamed request: ToChat on the way out, FromChat
// on the way back (a text and tool call answer).
func BenchmarkToChatFromChat(b *testing.B) {
	body := readFile(b, "testdata/items.request.json")
	answer := readFile(b, "../providers/anthropic/testdata/response.openai.json")
	req, err := schema.DecodeResponseRequest(body)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := responses.ToChat(req); err != nil {
			b.Fatal(err)
		}
		if _, err := responses.FromChat(answer, req, "resp_bench", 1700000000); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStream is the cost of translating a chat stream, reported per responses event written.
func BenchmarkStream(b *testing.B) {
	req, err := schema.DecodeResponseRequest(readFile(b, "testdata/tools.request.json"))
	if err != nil {
		b.Fatal(err)
	}
	// A long answer: 200 text chunks, then the tool calls of the golden stream.
	var chat bytes.Buffer
	for i := 0; i < 200; i++ {
		chat.WriteString(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"some words of text "},"finish_reason":null}]}` + "\n\n")
	}
	chat.Write(readFile(b, "../internal/anthropicmsg/testdata/stream/tools.openai.sse"))
	src := chat.Bytes()
	events := bytes.Count(readAll(b, responses.Stream(io.NopCloser(bytes.NewReader(src)), req, "resp_bench", 1)), []byte("\nevent: ")) + 1
	buf := make([]byte, 32<<10)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s := responses.Stream(io.NopCloser(bytes.NewReader(src)), req, "resp_bench", 1)
		for {
			if _, err := s.Read(buf); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
	b.ReportMetric(float64(events), "events/op")
}
