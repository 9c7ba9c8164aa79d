package gemini

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func BenchmarkChatResponse(b *testing.B) {
	body := readFile(b, "testdata/response/tool_calls.gemini.json")
	for _, strict := range []bool{false, true} {
		name := "loose"
		if strict {
			name = "strict"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := ChatResponse(body, "gemini-2.5-pro", strict); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkChatRequest includes the decoding of the request, which the first attempt of a request pays.
func BenchmarkChatRequest(b *testing.B) {
	body := readFile(b, "testdata/request/tools.openai.json")
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, _, err := chatRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStream decodes a recorded stream of 100 text events; allocs/chunk is per translated chunk.
func BenchmarkStream(b *testing.B) {
	const events = 100
	var upstream bytes.Buffer
	for i := 0; i < events-1; i++ {
		upstream.WriteString(`data: {"candidates":[{"content":{"parts":[{"text":"Some words of the answer, "}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":12,"totalTokenCount":12},"modelVersion":"gemini-2.5-flash","responseId":"abc"}` + "\r\n\r\n")
	}
	upstream.WriteString(`data: {"candidates":[{"content":{"parts":[{"text":"end."}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":400,"totalTokenCount":412},"modelVersion":"gemini-2.5-flash","responseId":"abc"}` + "\r\n\r\n")
	data := upstream.Bytes()
	for _, strict := range []bool{false, true} {
		name := "loose"
		if strict {
			name = "strict"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				n, err := io.Copy(io.Discard, Stream(io.NopCloser(bytes.NewReader(data)), streamModel, strict))
				if err != nil || n == 0 {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(testing.AllocsPerRun(20, func() {
				_, _ = io.Copy(io.Discard, Stream(io.NopCloser(strings.NewReader(string(data))), streamModel, strict))
			}))/events, "allocs/chunk")
		})
	}
}
