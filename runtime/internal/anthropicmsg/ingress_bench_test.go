package anthropicmsg

import (
	"bytes"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const (
	benchTextChunk  = `data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"content":"Hello there, \"world\"\n"},"logprobs":null,"finish_reason":null}],"obfuscation":"kP3x"}` + "\n\n"
	benchArgsChunk  = `data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"location\": "}}]},"logprobs":null,"finish_reason":null}],"obfuscation":"kP3x"}` + "\n\n"
	benchFirstChunk = `data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}` + "\n\n"
)

// benchChatStream is an OpenAI stream of texts text chunks then one tool call of args argument chunks.
func benchChatStream(texts, args int) ([]byte, int) {
	var b strings.Builder
	b.WriteString(benchFirstChunk)
	b.WriteString(strings.Repeat(benchTextChunk, texts))
	if args > 0 {
		b.WriteString(`data: {"id":"chatcmpl-B9","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}]}` + "\n\n")
		b.WriteString(strings.Repeat(benchArgsChunk, args))
	}
	b.WriteString(`data: {"id":"chatcmpl-B9","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]}` + "\n\n")
	b.WriteString(`data: {"id":"chatcmpl-B9","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":25,"completion_tokens":300,"total_tokens":325}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	chunks := 1 + texts + 3 + 1
	if args > 0 {
		chunks += 1 + args
	}
	return []byte(b.String()), chunks
}

// BenchmarkStreamFromChat reports the cost of a chunk: allocs/chunk and ns/chunk over whole streams (their
// first and last chunks included), and B/op, allocs/op per stream.
func BenchmarkStreamFromChat(b *testing.B) {
	for _, bc := range []struct {
		name        string
		texts, args int
	}{
		{"text", 250, 0},
		{"text_and_tool", 200, 50},
	} {
		b.Run(bc.name, func(b *testing.B) {
			in, chunks := benchChatStream(bc.texts, bc.args)
			buf := make([]byte, 32<<10)
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			for b.Loop() {
				s := StreamFromChat(io.NopCloser(bytes.NewReader(in)), "claude-sonnet-4-5")
				for {
					_, err := s.Read(buf)
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N*chunks), "allocs/chunk")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*chunks), "ns/chunk")
		})
	}
}

// repeatReader serves head, then chunk again and again.
type repeatReader struct {
	head, chunk []byte
	off         int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if len(r.head) > 0 {
		n := copy(p, r.head)
		r.head = r.head[n:]
		return n, nil
	}
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.chunk[r.off:])
		n += c
		r.off = (r.off + c) % len(r.chunk)
	}
	return n, nil
}

// TestStreamFromChatChunkAllocs checks that a text chunk, or a piece of a tool call's arguments, allocates
// nothing once the stream runs.
func TestStreamFromChatChunkAllocs(t *testing.T) {
	toolStart := `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]}` + "\n\n"
	tests := []struct {
		name, head, chunk, want string
	}{
		{"text", benchFirstChunk, benchTextChunk, "text_delta"},
		{"tool arguments", benchFirstChunk + toolStart, benchArgsChunk, "input_json_delta"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := StreamFromChat(io.NopCloser(&repeatReader{head: []byte(tc.head), chunk: []byte(tc.chunk)}), "m")
			buf := make([]byte, 64<<10)
			for range 10 { // message_start, the block's start, and the buffers' growth
				if _, err := s.Read(buf); err != nil {
					t.Fatal(err)
				}
			}
			allocs := testing.AllocsPerRun(200, func() {
				n, err := s.Read(buf)
				if err != nil || !bytes.Contains(buf[:n], []byte(tc.want)) {
					t.Fatalf("Read = %q, %v", buf[:n], err)
				}
			})
			if allocs != 0 {
				t.Errorf("a chunk allocates %v times, want 0", allocs)
			}
		})
	}
}

func BenchmarkToChat(b *testing.B) {
	in, err := readBenchFile(filepath.Join("testdata", "ingress", "request", "tools.anthropic.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ToChat(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFromChat(b *testing.B) {
	in, err := readBenchFile(filepath.Join("testdata", "ingress", "answer", "tool_calls.openai.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromChat(in, "claude-sonnet-4-5"); err != nil {
			b.Fatal(err)
		}
	}
}
