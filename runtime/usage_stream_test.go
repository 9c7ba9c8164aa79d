package runtime

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
)

// chatStream is an OpenAI chat stream of n content chunks, then a finish chunk, with usage when withUsage.
func chatStream(n int, withUsage bool) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"word ` + strconv.Itoa(i) + ` "},"finish_reason":null}]}` + "\n\n")
	}
	if withUsage {
		b.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":` + strconv.Itoa(n) + `,"total_tokens":1}}` + "\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// TestUsageStreamReadLine: read line by line or through Read, in small or large pieces, a stream passes
// unchanged and reports the same usage; lines longer than the buffer are read whole.
func TestUsageStreamReadLine(t *testing.T) {
	long := `data: {"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("x", 3*usageBufferSize) + `"}}]}` + "\n\n"
	for _, tc := range []struct {
		name, events string
		want         Usage
	}{
		{"reported", chatStream(50, true), Usage{InputTokens: 9, OutputTokens: 50, Known: true}},
		{"estimated", chatStream(50, false), Usage{InputTokens: 25, OutputTokens: 98, Known: true, Estimated: true}},
		{"a long line", long + chatStream(1, false), Usage{InputTokens: 25, OutputTokens: 3074, Known: true, Estimated: true}},
		{"a last line without its end", "data: {\"choices\":[{\"delta\":{\"content\":\"abcd\"}}]}\n\ndata: {\"usage\":{\"prompt_tokens\":1}}",
			Usage{InputTokens: 25, OutputTokens: 1, Known: true, Estimated: true}},
	} {
		for _, mode := range []string{"lines", "read 7", "read 64k"} {
			var got Usage
			u := newUsageStream(io.NopCloser(strings.NewReader(tc.events)), 100, func(r Usage) { got = r })
			var out bytes.Buffer
			switch mode {
			case "lines":
				for {
					line, err := u.ReadLine()
					out.Write(line)
					if err != nil {
						if !errors.Is(err, io.EOF) {
							t.Fatal(err)
						}
						break
					}
				}
			case "read 7":
				buf := make([]byte, 7)
				for {
					n, err := u.Read(buf)
					out.Write(buf[:n])
					if err != nil {
						break
					}
				}
			default:
				io.Copy(&out, u)
			}
			u.Close()
			if out.String() != tc.events {
				t.Errorf("%s, %s: the stream changed", tc.name, mode)
			}
			if got != tc.want {
				t.Errorf("%s, %s: usage %+v, want %+v", tc.name, mode, got, tc.want)
			}
		}
	}
}

// TestUsageStreamLineBuffered: LineBuffered tells whether the next line is already in the buffer.
func TestUsageStreamLineBuffered(t *testing.T) {
	r, w := io.Pipe()
	u := newUsageStream(r, 0, func(Usage) {})
	go func() {
		w.Write([]byte("data: 1\n\ndata: 2"))
		w.Write([]byte("\n\n"))
		w.Close()
	}()
	want := []struct {
		line     string
		buffered bool
	}{{"data: 1\n", true}, {"\n", false}, {"data: 2\n", true}, {"\n", false}}
	for i, w := range want {
		line, err := u.ReadLine()
		if err != nil || string(line) != w.line || u.LineBuffered() != w.buffered {
			t.Fatalf("line %d: %q, %v, buffered %v; want %q, buffered %v", i, line, err, u.LineBuffered(), w.line, w.buffered)
		}
	}
}

// BenchmarkUsageStream is what the usage watch costs a relayed chunk: reading the line and scanning it.
func BenchmarkUsageStream(b *testing.B) {
	const chunks = 200
	events := []byte(chatStream(chunks, true))
	var src bytes.Reader
	b.ReportAllocs()
	b.SetBytes(int64(len(events)))
	for b.Loop() {
		src.Reset(events)
		u := newUsageStream(io.NopCloser(&src), 100, func(Usage) {})
		for {
			if _, err := u.ReadLine(); err != nil {
				break
			}
		}
		u.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*chunks), "ns/chunk")
}
