package bedrock

import (
	"bytes"
	"io"
	"testing"

	"github.com/llmgw/gateway/runtime/providers"
)

func BenchmarkTranslateResponse(b *testing.B) {
	body := readTestdata(b, "chat", "response", "tool_use.converse.json")
	a := testAdapter()
	c := &providers.Call{Endpoint: providers.ChatCompletions, Body: readTestdata(b, "chat", "request", "tools.openai.json")}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := a.TranslateResponse(&providers.Target{}, c, body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTranslateChatRequest(b *testing.B) {
	body := readTestdata(b, "chat", "request", "tools.openai.json")
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := translateChatBody(body); err != nil {
			b.Fatal(err)
		}
	}
}

// cycle repeats one frame forever: an endless stream of identical events.
type cycle struct {
	frame []byte
	off   int
}

func (c *cycle) Read(p []byte) (int, error) {
	n := copy(p, c.frame[c.off:])
	c.off = (c.off + n) % len(c.frame)
	return n, nil
}

// BenchmarkTranslateStream measures one text delta: decode one eventstream message, translate it, read its
// chunk. One op is one chunk, so allocs/op is allocations per chunk.
func BenchmarkTranslateStream(b *testing.B) {
	frame := eventFrame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hello, world! "},"p":"abcdefghijklmnopqrstuvwxyzABCDE"}`)
	rc := testAdapter().TranslateStream(&providers.Target{}, streamCall(false), io.NopCloser(&cycle{frame: frame}))
	buf := make([]byte, 4096)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		n, err := rc.Read(buf)
		if err != nil || n == 0 || !bytes.HasSuffix(buf[:n], []byte("\n\n")) {
			b.Fatalf("read %q, %v", buf[:n], err)
		}
	}
}

// BenchmarkTranslateStreamRecorded translates the whole recorded tool-call stream (12 events, 10 chunks).
func BenchmarkTranslateStreamRecorded(b *testing.B) {
	data := readTestdata(b, "stream", "tool.bin")
	a := testAdapter()
	c := streamCall(false)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := io.Copy(io.Discard, a.TranslateStream(&providers.Target{}, c, io.NopCloser(bytes.NewReader(data)))); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEventDecoder(b *testing.B) {
	frame := eventFrame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hello, world! "}}`)
	d := newEventDecoder(&cycle{frame: frame})
	var ev event
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if err := d.next(&ev); err != nil {
			b.Fatal(err)
		}
	}
}
