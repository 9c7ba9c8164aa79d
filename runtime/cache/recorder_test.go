package cache

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

var update = flag.Bool("update", false, "rewrite the golden answers in testdata/streams")

// record reads src through a recorder in reads of at most size bytes (0: as large as they come) and returns
// what passed through and the answers done received.
func record(t testing.TB, src []byte, size int) (passed []byte, answers [][]byte, err error) {
	t.Helper()
	var r io.Reader = bytes.NewReader(src)
	if size > 0 {
		r = &chunkedReader{r: r, n: size}
	}
	rec := NewRecorder(io.NopCloser(r), func(a []byte) { answers = append(answers, a) })
	passed, err = io.ReadAll(rec)
	if cerr := rec.Close(); err == nil {
		err = cerr
	}
	return passed, answers, err
}

// chunkedReader returns at most n bytes per Read.
type chunkedReader struct {
	r io.Reader
	n int
}

func (c *chunkedReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

func TestRecorderGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/streams/*.sse")
	if err != nil || len(files) == 0 {
		t.Fatalf("no streams: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var first []byte
			for _, size := range []int{0, 1, 7, 64} {
				passed, answers, err := record(t, src, size)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(passed, src) {
					t.Fatalf("reads of %d: the stream did not pass through unchanged", size)
				}
				if len(answers) != 1 {
					t.Fatalf("reads of %d: done called %d times", size, len(answers))
				}
				if !json.Valid(answers[0]) {
					t.Fatalf("answer is not JSON: %s", answers[0])
				}
				if first == nil {
					first = answers[0]
				} else if !bytes.Equal(first, answers[0]) {
					t.Fatalf("reads of %d give another answer:\n%s\n%s", size, answers[0], first)
				}
			}
			golden := strings.TrimSuffix(f, ".sse") + ".json"
			if *update {
				var pretty bytes.Buffer
				json.Indent(&pretty, first, "", "  ")
				if err := os.WriteFile(golden, append(pretty.Bytes(), '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, want); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(compact.Bytes(), first) {
				t.Fatalf("answer\n%s\nwant (%s)\n%s", first, golden, compact.Bytes())
			}
		})
	}
}

const (
	chunkA = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}`
	chunkB = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}`
	done   = "data: [DONE]"
)

func sseOf(lines ...string) string { return strings.Join(lines, "\n\n") + "\n\n" }

func TestRecorderCalls(t *testing.T) {
	want := `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"logprobs":null,"finish_reason":"stop"}]}`
	tests := []struct {
		name   string
		stream string
	}{
		{"plain", sseOf(chunkA, chunkB, done)},
		{"no space after data:", sseOf(strings.Replace(chunkA, "data: ", "data:", 1), chunkB, "data:[DONE]")},
		{"CR line endings", strings.ReplaceAll(sseOf(chunkA, chunkB, done), "\n", "\r")},
		{"CRLF line endings", strings.ReplaceAll(sseOf(chunkA, chunkB, done), "\n", "\r\n")},
		{"[DONE] without blank line", sseOf(chunkA, chunkB) + done + "\n"},
		{"[DONE] without line end", sseOf(chunkA, chunkB) + done},
		{"comments, ids and retry", ": hi\n\nid: 1\nretry: 100\n" + sseOf(chunkA, chunkB, done)},
		{"bytes after [DONE]", sseOf(chunkA, chunkB, done) + "data: {\"error\":{}}\n\n"},
		{"hook_results event", sseOf(chunkA, chunkB, `data: {"hook_results":{"before_request_hooks":[],"after_request_hooks":[]}}`, done)},
		{"ping event", sseOf(chunkA, "event: ping\ndata: {}", chunkB, done)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, size := range []int{0, 1, 3} {
				passed, answers, err := record(t, []byte(tc.stream), size)
				if err != nil || string(passed) != tc.stream {
					t.Fatalf("pass-through: %v, %q", err, passed)
				}
				if len(answers) != 1 || string(answers[0]) != want {
					t.Fatalf("reads of %d: answers %q, want %s", size, answers, want)
				}
			}
		})
	}
}

func TestRecorderDoesNotCall(t *testing.T) {
	tests := []struct {
		name   string
		stream string
	}{
		{"no [DONE]", sseOf(chunkA, chunkB)},
		{"cut mid-event", sseOf(chunkA) + chunkB[:40]},
		{"error event", sseOf(chunkA, `data: {"error":{"message":"overloaded","type":"server_error"}}`, done)},
		{"error in a chunk", sseOf(chunkA, strings.Replace(chunkB, `"choices"`, `"error":{"message":"x"},"choices"`, 1), done)},
		{"event: error", sseOf(chunkA, "event: error\ndata: {\"message\":\"x\"}", chunkB, done)},
		{"guardrail deny", sseOf(chunkA, chunkB, `data: {"error":{"message":"denied","type":"hooks_failed"}}`)},
		{"not JSON", sseOf(chunkA, "data: {oops", chunkB, done)},
		{"no finish_reason", sseOf(chunkA, strings.Replace(chunkB, `"stop"`, "null", 1), done)},
		{"no choices", sseOf(`data: {"id":"c1","choices":[],"usage":{"total_tokens":1}}`, done)},
		{"nothing", sseOf(done)},
		{"content_blocks", sseOf(chunkA, `data: {"id":"c1","choices":[{"index":0,"delta":{"content_blocks":[{"index":0,"delta":{"thinking":"x"}}]}}]}`, chunkB, done)},
		{"delta not an object", sseOf(chunkA, `data: {"id":"c1","choices":[{"index":0,"delta":"x"}]}`, chunkB, done)},
		{"chat then text", sseOf(chunkA, `data: {"object":"text_completion","choices":[{"index":0,"text":"x"}]}`, chunkB, done)},
		{"line too long", sseOf(chunkA, "data: \""+strings.Repeat("x", MaxEventSize)+"\"", chunkB, done)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			passed, answers, err := record(t, []byte(tc.stream), 0)
			if err != nil || string(passed) != tc.stream {
				t.Fatalf("pass-through: %v, %d bytes of %d", err, len(passed), len(tc.stream))
			}
			if len(answers) != 0 {
				t.Fatalf("done called with %s", answers[0])
			}
		})
	}
}

func TestRecorderReadError(t *testing.T) {
	boom := errors.New("connection reset")
	src := io.MultiReader(strings.NewReader(sseOf(chunkA, chunkB)), iotest.ErrReader(boom), strings.NewReader(sseOf(done)))
	called := false
	rec := NewRecorder(io.NopCloser(src), func([]byte) { called = true })
	if _, err := io.ReadAll(rec); !errors.Is(err, boom) {
		t.Fatalf("ReadAll error %v, want %v", err, boom)
	}
	if called {
		t.Fatal("done called for a broken stream")
	}
	// Closed before the end: never called, and src is closed.
	src2 := &closeRecorder{Reader: strings.NewReader(sseOf(chunkA, chunkB, done))}
	rec = NewRecorder(src2, func([]byte) { called = true })
	buf := make([]byte, 10)
	rec.Read(buf)
	rec.Close()
	if !src2.closed || called {
		t.Fatalf("after Close: src closed %v, done called %v", src2.closed, called)
	}
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

func TestRecorderToolCallsWithoutIndex(t *testing.T) {
	stream := sseOf(
		`data: {"id":"g","object":"chat.completion.chunk","created":2,"model":"gemini","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":"}}]}}]}`,
		`data: {"id":"g","object":"chat.completion.chunk","created":2,"model":"gemini","choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"1}"}}]}}]}`,
		`data: {"id":"g","object":"chat.completion.chunk","created":2,"model":"gemini","choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
		done)
	_, answers, _ := record(t, []byte(stream), 0)
	want := `{"id":"g","object":"chat.completion","created":2,"model":"gemini","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[` +
		`{"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}},{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]},"logprobs":null,"finish_reason":"tool_calls"}]}`
	if len(answers) != 1 || string(answers[0]) != want {
		t.Fatalf("answers %s\nwant %s", answers, want)
	}
}

// FuzzRecorder feeds arbitrary bytes, split at arbitrary places, through a recorder: they must pass through
// unchanged, done must be called at most once and with JSON, and how the bytes are split must not matter.
func FuzzRecorder(f *testing.F) {
	files, _ := filepath.Glob("testdata/streams/*.sse")
	for _, file := range files {
		b, _ := os.ReadFile(file)
		f.Add(b, uint8(1))
		f.Add(b, uint8(13))
	}
	f.Add([]byte(sseOf(chunkA, chunkB, done)), uint8(0))
	f.Add([]byte("data: [DONE]"), uint8(2))
	f.Add([]byte("data: {}\r\n\r\ndata: [DONE]\r"), uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, split uint8) {
		whole, a1, err := record(t, data, 0)
		if err != nil || !bytes.Equal(whole, data) {
			t.Fatalf("pass-through changed the bytes (%v)", err)
		}
		parts, a2, err := record(t, data, int(split)+1)
		if err != nil || !bytes.Equal(parts, data) {
			t.Fatalf("pass-through in reads of %d changed the bytes (%v)", int(split)+1, err)
		}
		if len(a1) > 1 || len(a2) > 1 {
			t.Fatalf("done called %d and %d times", len(a1), len(a2))
		}
		if len(a1) != len(a2) || len(a1) == 1 && !bytes.Equal(a1[0], a2[0]) {
			t.Fatalf("the split changed the answer: %q vs %q", a1, a2)
		}
		if len(a1) == 1 && !json.Valid(a1[0]) {
			t.Fatalf("answer is not JSON: %q", a1[0])
		}
	})
}
