package routes

import (
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestTextInterner shows that interned texts are the caller's to keep although the bytes they came from are
// reused (as fiber reuses a request's header buffer), that a held text is handed out again without a copy, and
// that the interner stays within its bounds.
func TestTextInterner(t *testing.T) {
	in := textInterner{maxEntries: 4, maxLen: 8}
	buf := []byte("config-1")
	first := in.intern(unsafe.String(&buf[0], len(buf)))
	copy(buf, "xxxxxxxx")
	if first != "config-1" {
		t.Fatalf("interned text %q changed with the buffer it came from", first)
	}
	buf = []byte("config-1")
	again := in.intern(unsafe.String(&buf[0], len(buf)))
	if again != "config-1" || unsafe.StringData(again) != unsafe.StringData(first) {
		t.Fatal("a held text was copied again")
	}
	if got := in.intern(""); got != "" {
		t.Fatalf("intern(\"\") = %q", got)
	}
	long := strings.Repeat("a", 9)
	if got := in.intern(long); got != long {
		t.Fatalf("long text %q", got)
	}
	if _, held := in.texts[long]; held {
		t.Fatal("a text longer than maxLen is held")
	}
	for i := range 10 {
		s := "c" + strconv.Itoa(i)
		if got := in.intern(s); got != s {
			t.Fatalf("intern(%q) = %q", s, got)
		}
		if len(in.texts) > in.maxEntries {
			t.Fatalf("%d texts held, at most %d allowed", len(in.texts), in.maxEntries)
		}
	}
}

// BenchmarkTextInterner is the cost of a held config's lookup, which replaces a copy of the header per request.
func BenchmarkTextInterner(b *testing.B) {
	cfg := `{"strategy":{"mode":"fallback"},"targets":[{"provider":"openai","api_key":"sk","custom_host":"http://127.0.0.1:8080/v1"}]}`
	in := textInterner{maxEntries: 256, maxLen: 16 << 10}
	in.intern(cfg)
	buf := []byte(cfg)
	b.ReportAllocs()
	for b.Loop() {
		in.intern(unsafe.String(&buf[0], len(buf)))
	}
}
