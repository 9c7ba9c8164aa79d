package anthropicmsg

import (
	"io"
	"os"
	"strings"
	"testing"
)

// TestReadersHandOverWhatIsBuffered: when the whole source is already buffered, one Read gives everything it
// translates to (up to the buffer's end), so that the relay writes a burst once, not once per event.
func TestReadersHandOverWhatIsBuffered(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		open     func(io.ReadCloser) io.ReadCloser
	}{
		{"egress", "testdata/stream/tools.sse", func(r io.ReadCloser) io.ReadCloser { return Stream(r, false) }},
		{"ingress", "testdata/ingress/stream/tools.openai.sse", func(r io.ReadCloser) io.ReadCloser { return StreamFromChat(r, "m") }},
	} {
		raw, err := os.ReadFile(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		whole, err := io.ReadAll(tc.open(io.NopCloser(strings.NewReader(string(raw)))))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		buf := make([]byte, 1<<20)
		n, _ := tc.open(io.NopCloser(strings.NewReader(string(raw)))).Read(buf)
		if string(buf[:n]) != string(whole) {
			t.Errorf("%s: one Read gave %d of %d bytes", tc.name, n, len(whole))
		}
	}
}
