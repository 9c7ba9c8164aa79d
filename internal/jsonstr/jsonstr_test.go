package jsonstr

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestAppendStringRoundTrips(t *testing.T) {
	for _, s := range []string{"", "plain", `quo"te \ back`, "tab\tnew\nline\r", "\x00\x1f", "<a & b>", "é ü 漢字 🎉", "\u2028\u2029", "bad \xff utf8"} {
		out := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q: %s is not a JSON string: %v", s, out, err)
		}
		want := s
		if s == "bad \xff utf8" {
			want = "bad \ufffd utf8"
		}
		if back != want {
			t.Errorf("%q came back as %q", s, back)
		}
	}
	if got := string(AppendString(nil, "<&>")); got != `"<&>"` {
		t.Errorf("HTML characters escaped: %s", got)
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\", "\n\r\t\x00\x1f\x7f", "<a&b>", "é✓😀", "\xff\xfe", "a\u2028b\u2029", string([]byte{0xe2, 0x82})} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.Encode(s)
		if got := AppendString(nil, s); string(got) != strings.TrimSuffix(want.String(), "\n") {
			t.Errorf("AppendString(%q) = %s, encoding/json gives %s", s, got, want.String())
		}
	}
}

// FuzzUnquote checks Unquote against encoding/json.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`""`, `"plain"`, `"a\nb\u00e9\ud83d\ude00"`, `"\ud800x"`, `"\udc00\ud800"`, "\"\xff\xfe\"", `"\/\b\f\r\t\\\""`, `"\u12"`, `"x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, q []byte) {
		var want string
		wantErr := json.Unmarshal(q, &want)
		if _, err := ScanString(q, 0); len(q) == 0 || q[0] != '"' || err != nil {
			return // callers only unquote what ScanString accepted
		} else if end, _ := ScanString(q, 0); end != len(q) {
			return
		}
		got, ok := Unquote(q)
		if wantErr != nil || !ok || got != want {
			t.Fatalf("Unquote(%q) = %q, %v; encoding/json: %q, %v", q, got, ok, want, wantErr)
		}
		if b, ok := AppendUnquoteBytes([]byte("pre"), q); !ok || string(b) != "pre"+want {
			t.Fatalf("AppendUnquoteBytes(%q) = %q, %v; encoding/json: %q", q, b, ok, want)
		}
	})
}

func TestAppendUnquoteBytes(t *testing.T) {
	tests := []struct {
		name, q, want string
		ok            bool
	}{
		{"plain", `"plain"`, "plain", true},
		{"escapes", `"a\"b\\c\/\b\f\n\r\t"`, "a\"b\\c/\b\f\n\r\t", true},
		{"pair and lone surrogate", `"\u00e9\ud83d\ude00\ud800x"`, "é😀\ufffdx", true},
		{"invalid UTF-8", "\"a\xffb\"", "a\ufffdb", true},
		{"bad escape", `"a\x"`, "", false},
		{"short unicode escape", `"\u12"`, "", false},
		{"control character", "\"a\nb\"", "", false},
		{"not a literal", `plain`, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			scratch := make([]byte, 0, 64)
			got, ok := AppendUnquoteBytes(scratch, []byte(tc.q))
			if ok != tc.ok || ok && string(got) != tc.want {
				t.Errorf("AppendUnquoteBytes(%s) = %q, %v; want %q, %v", tc.q, got, ok, tc.want, tc.ok)
			}
			if allocs := testing.AllocsPerRun(10, func() { AppendUnquoteBytes(scratch[:0], []byte(tc.q)) }); allocs != 0 {
				t.Errorf("%v allocations into a large enough buffer", allocs)
			}
		})
	}
}

// FuzzSkipPlain: the eight-bytes-at-a-time skip stops exactly where the byte-at-a-time loop does.
func FuzzSkipPlain(f *testing.F) {
	for _, s := range []string{"", "abc", `abcdefgh"`, "abcdefghijklmno\\p", "ab\x01cdefghij", "日本語のテキスト\"", "\x7f\x80\xff\x1f"} {
		f.Add([]byte(s), 0)
	}
	f.Fuzz(func(t *testing.T, b []byte, i int) {
		if i < 0 || i > len(b) {
			return
		}
		want := i
		for want < len(b) && plain[b[want]] {
			want++
		}
		if got := skipPlain(b, i); got != want {
			t.Fatalf("skipPlain(%q, %d) = %d, want %d", b, i, got, want)
		}
	})
}
