package gemini

import (
	"io"
	"os"
	"strings"
	"testing"
)

// TestStreamHandsOverWhatIsBuffered: with the whole source buffered, one Read gives what every buffered event
// translates to, so that the relay writes a burst once, not once per event.
func TestStreamHandsOverWhatIsBuffered(t *testing.T) {
	raw, err := os.ReadFile("testdata/stream/text.sse")
	if err != nil {
		t.Fatal(err)
	}
	whole, err := io.ReadAll(Stream(io.NopCloser(strings.NewReader(string(raw))), "gemini-2.5-flash", false))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	n, _ := Stream(io.NopCloser(strings.NewReader(string(raw))), "gemini-2.5-flash", false).Read(buf)
	// What the end of the source makes (the finish and usage chunks, [DONE]) comes with the Read that sees it.
	got := string(buf[:n])
	if !strings.HasPrefix(string(whole), got) || strings.Count(got, "data: ") < 2 {
		t.Fatalf("one Read gave %d of %d bytes, %d events: every buffered event must leave at once", n, len(whole), strings.Count(got, "data: "))
	}
}
