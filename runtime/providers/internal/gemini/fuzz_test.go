package gemini

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzStream feeds arbitrary bytes to the stream translator: it must neither panic nor hang, and what it writes
// must be well-formed events ("data: <JSON>\n\n", and "data: [DONE]\n\n" last when the stream ends cleanly).
// Seeds: testdata/fuzz/FuzzStream and the recorded streams of testdata/stream.
func FuzzStream(f *testing.F) {
	files, _ := filepath.Glob("testdata/stream/*.sse")
	for _, name := range files {
		if !strings.Contains(name, ".openai") {
			b, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b, false)
		}
	}
	f.Fuzz(func(t *testing.T, upstream []byte, strict bool) {
		type result struct {
			out []byte
			err error
		}
		done := make(chan result, 1)
		go func() {
			out, err := io.ReadAll(Stream(io.NopCloser(strings.NewReader(string(upstream))), streamModel, strict))
			done <- result{out, err}
		}()
		var r result
		select {
		case r = <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the stream translator hangs")
		}
		events := strings.Split(string(r.out), "\n\n")
		if last := events[len(events)-1]; last != "" {
			t.Fatalf("output does not end with a blank line: %q", last)
		}
		events = events[:len(events)-1]
		for i, ev := range events {
			data, ok := strings.CutPrefix(ev, "data: ")
			if !ok {
				t.Fatalf("event %d lacks data: %q", i, ev)
			}
			if data == "[DONE]" {
				if i != len(events)-1 || r.err != nil {
					t.Fatalf("[DONE] at %d of %d, err %v", i, len(events), r.err)
				}
				continue
			}
			if !json.Valid([]byte(data)) {
				t.Fatalf("event %d is not JSON: %q", i, data)
			}
		}
		if r.err == nil && (len(events) == 0 || events[len(events)-1] != "data: [DONE]") {
			t.Fatalf("a clean end must finish with [DONE]: %q", r.out)
		}
	})
}
