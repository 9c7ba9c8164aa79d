package gemini

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// streamModel is the request's model, which chunks name when Gemini's events do not.
const streamModel = "gemini-test"

func TestStreamGolden(t *testing.T) {
	for _, name := range caseNames(t, "testdata/stream", ".sse") {
		if strings.Contains(name, ".openai") {
			continue
		}
		for _, strict := range []bool{false, true} {
			wantFile := name + ".openai.sse"
			if strict {
				wantFile = name + ".openai.strict.sse"
			}
			t.Run(wantFile, func(t *testing.T) {
				pin(t)
				f, err := os.Open(filepath.Join("testdata/stream", name+".sse"))
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(Stream(f, streamModel, strict))
				if err != nil {
					t.Fatal(err)
				}
				path := filepath.Join("testdata/stream", wantFile)
				if *update {
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				gotEvents, wantEvents := sseEvents(t, string(got)), sseEvents(t, string(readFile(t, path)))
				if len(gotEvents) != len(wantEvents) {
					t.Fatalf("%d events, want %d:\n%s", len(gotEvents), len(wantEvents), got)
				}
				for i := range wantEvents {
					if wantEvents[i] == "[DONE]" || gotEvents[i] == "[DONE]" {
						if gotEvents[i] != wantEvents[i] {
							t.Errorf("event %d = %s, want %s", i, gotEvents[i], wantEvents[i])
						}
						continue
					}
					jsonEqual(t, []byte(gotEvents[i]), []byte(wantEvents[i]))
				}
			})
		}
	}
}

// TestStreamEmitsPerEvent feeds the stream one upstream event at a time and checks that each chunk is readable
// before the next event is written.
func TestStreamEmitsPerEvent(t *testing.T) {
	pin(t)
	upstream := readFile(t, "testdata/stream/text.sse")
	events := strings.SplitAfter(string(upstream), "\r\n\r\n")
	pr, pw := io.Pipe()
	out := bufio.NewReader(Stream(pr, streamModel, true))
	go func() {
		for _, ev := range events {
			if ev == "" {
				continue
			}
			if _, err := pw.Write([]byte(ev)); err != nil {
				return
			}
		}
	}()
	for i, want := range []string{`"content":"Hel"`, `"content":"lo <b>&"`, `"finish_reason":"stop"`} {
		done := make(chan string, 1)
		go func() {
			line, _ := out.ReadString('\n')
			_, _ = out.ReadString('\n') // the blank line
			done <- line
		}()
		select {
		case line := <-done:
			if !strings.Contains(line, want) {
				t.Fatalf("chunk %d = %s, want it to contain %s", i, line, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("chunk %d not emitted after its event was written", i)
		}
	}
	pw.Close()
	rest, err := io.ReadAll(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rest), `"usage"`) || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Errorf("end of stream = %q", rest)
	}
}

func TestStreamFailures(t *testing.T) {
	tests := []struct {
		name, upstream string
		readErr        error // when the upstream body itself fails
		wantChunks     int   // chunks emitted before the error
		wantErr        string
	}{
		{"error event", "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}]}\n\n" +
			"data: {\"error\":{\"code\":503,\"message\":\"The model is overloaded.\",\"status\":\"UNAVAILABLE\"}}\n\n",
			nil, 1, "UNAVAILABLE: The model is overloaded."},
		{"error array", `data: [{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED"}}]` + "\n\n", nil, 0, "quota"},
		{"ends before finishing", "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}]}\n\n", nil, 1, "ended before the answer finished"},
		{"empty stream", "", nil, 0, "ended before the answer finished"},
		{"not JSON", "data: {oops\n\n", nil, 0, "decode stream event"},
		{"broken body", "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}]}\n\n", errors.New("connection reset"), 1, "connection reset"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pin(t)
			var body io.Reader = strings.NewReader(tc.upstream)
			if tc.readErr != nil {
				body = io.MultiReader(body, &failingReader{tc.readErr})
			}
			got, err := io.ReadAll(Stream(io.NopCloser(body), streamModel, true))
			if err == nil || errors.Is(err, io.EOF) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
			if n := len(sseEvents(t, string(got))); n != tc.wantChunks {
				t.Errorf("%d chunks before the error, want %d: %s", n, tc.wantChunks, got)
			}
			if strings.Contains(string(got), "[DONE]") {
				t.Errorf("a failed stream must not end with [DONE]: %s", got)
			}
		})
	}
}

type failingReader struct{ err error }

func (r *failingReader) Read([]byte) (int, error) { return 0, r.err }

func TestStreamOddInputs(t *testing.T) {
	tests := []struct {
		name, upstream string
		want           []string // substrings of the events, in order
	}{
		{"comments, fields and multi-line data",
			": keepalive\nevent: message\nid: 1\nretry: 10\ndata: {\"candidates\":[{\"content\":\ndata: {\"parts\":[{\"text\":\"a\"}]},\"finishReason\":\"STOP\"}]}\n\n",
			[]string{`"content":"a"`, "[DONE]"}},
		{"last event without blank line",
			"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]},\"finishReason\":\"STOP\"}]}",
			[]string{`"finish_reason":"stop"`, "[DONE]"}},
		{"blocked prompt",
			"data: {\"promptFeedback\":{\"blockReason\":\"SAFETY\"},\"usageMetadata\":{\"promptTokenCount\":3,\"totalTokenCount\":3}}\r\n\r\n",
			[]string{`"finish_reason":"content_filter"`, `"usage":{"prompt_tokens":3,"completion_tokens":0,"total_tokens":3}`, "[DONE]"}},
		{"done marker", "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]},\"finishReason\":\"MAX_TOKENS\"}]}\n\ndata: [DONE]\n\ndata: {\"ignored\":true}\n\n",
			[]string{`"finish_reason":"length"`, "[DONE]"}},
		{"two candidates", "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}},{\"index\":1,\"content\":{\"parts\":[{\"text\":\"b\"}]}}]}\n\n" +
			"data: {\"candidates\":[{\"finishReason\":\"STOP\"},{\"index\":1,\"finishReason\":\"STOP\"}]}\n\n",
			[]string{`{"index":0,"delta":{"role":"assistant","content":"a"},"logprobs":null,"finish_reason":null},{"index":1,"delta":{"role":"assistant","content":"b"}`,
				`{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"},{"index":1,"delta":{},"logprobs":null,"finish_reason":"stop"}`, "[DONE]"}},
		{"long line", "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"" + strings.Repeat("x", 100000) + "\"}]},\"finishReason\":\"STOP\"}]}\n\n",
			[]string{strings.Repeat("x", 100000), "[DONE]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pin(t)
			got, err := io.ReadAll(Stream(io.NopCloser(strings.NewReader(tc.upstream)), streamModel, true))
			if err != nil {
				t.Fatal(err)
			}
			events := sseEvents(t, string(got))
			if len(events) != len(tc.want) {
				t.Fatalf("%d events, want %d: %s", len(events), len(tc.want), got)
			}
			for i, w := range tc.want {
				if !strings.Contains(events[i], w) {
					t.Errorf("event %d = %s, want it to contain %s", i, events[i], w)
				}
			}
		})
	}
}

func TestStreamClosesBody(t *testing.T) {
	body := &closeRecorder{Reader: strings.NewReader("")}
	if err := Stream(body, "", false).Close(); err != nil {
		t.Fatal(err)
	}
	if !body.closed {
		t.Error("Close did not close the upstream body")
	}
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }
