package providers

import (
	"encoding/json"
	"testing"
)

// FuzzStringField checks the plain-text fast path against the JSON decoder it stands in for.
func FuzzStringField(f *testing.F) {
	for _, seed := range []string{`"sk-abc"`, `""`, `"a\"b"`, `"caf\u00e9"`, `"café"`, `"\ud800"`, `12`, `null`, `"a`, `"` + "\x01" + `"`, `"https://x.example/v1"`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var want string
		if json.Unmarshal([]byte(raw), &want) != nil {
			want = ""
		}
		tg := &Target{Fields: map[string]json.RawMessage{"k": json.RawMessage(raw)}}
		if got := tg.StringField("k"); got != want {
			t.Fatalf("StringField(%q) = %q, json.Unmarshal gives %q", raw, got, want)
		}
	})
}
