package jsonstr

import (
	"encoding/json"
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
