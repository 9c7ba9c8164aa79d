package gemini

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// BenchmarkStreamChunk translates a stream of 200 text events as the Gemini API sends them (spaced, with
// usage details and safety ratings), through the fast path and through encoding/json alone, per chunk.
func BenchmarkStreamChunk(b *testing.B) {
	const events = 200
	var upstream strings.Builder
	for range events - 1 {
		upstream.WriteString("data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Some \\\"words\\\" of the answer,\\n \"}],\"role\": \"model\"},\"index\": 0,\"safetyRatings\": [{\"category\": \"HARM_CATEGORY_HARASSMENT\",\"probability\": \"NEGLIGIBLE\"}]}],\"usageMetadata\": {\"promptTokenCount\": 12,\"totalTokenCount\": 12,\"promptTokensDetails\": [{\"modality\": \"TEXT\",\"tokenCount\": 12}]},\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"abc\"}\r\n\r\n")
	}
	upstream.WriteString("data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"end.\"}],\"role\": \"model\"},\"finishReason\": \"STOP\",\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 12,\"candidatesTokenCount\": 800,\"totalTokenCount\": 812},\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"abc\"}\r\n\r\n")
	data := []byte(upstream.String())
	buf := make([]byte, 32<<10)
	for _, mode := range []string{"loose", "strict"} {
		for _, path := range []string{"fast", "decode"} {
			b.Run(mode+"/"+path, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					r := Stream(io.NopCloser(bytes.NewReader(data)), streamModel, mode == "strict").(*streamReader)
					r.slow = path == "decode"
					for {
						_, err := r.Read(buf)
						if err == io.EOF {
							break
						}
						if err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/chunk")
			})
		}
	}
}
