package jsonfield

import (
	"encoding/json"
	"testing"
)

func TestPathsAndKinds(t *testing.T) {
	tests := []struct{ name, got, want string }{
		{"join top", Join("", "retry"), "retry"},
		{"join nested", Join("retry", "attempts"), "retry.attempts"},
		{"join quoted", Join(Index("input_guardrails", 0), "default.regexMatch"), `input_guardrails[0]["default.regexMatch"]`},
		{"kind object", Kind(json.RawMessage(` {"a": 1}`)), "object"},
		{"kind nothing", Kind(nil), "nothing"},
		{"describe number", Describe(json.RawMessage(`2.5`)), "number 2.5"},
		{"suggest typo", Suggest("retyr", []string{"retry", "cache"}), "retry"},
		{"suggest none", Suggest("zzzzzz", []string{"retry", "cache"}), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}

func TestObjectReaders(t *testing.T) {
	o, err := NewObject(json.RawMessage(`{"s": "x", "n": null, "i": 2.0, "f": 2.5, "bad": "a\nb"}`), "targets[0]")
	if err != nil {
		t.Fatal(err)
	}
	if o.Has("n") || !o.Has("s") {
		t.Errorf("Has: null must read as absent")
	}
	if n, err := o.Integer("i", true, 0, 5); err != nil || *n != 2 {
		t.Errorf("Integer(i) = %v, %v", n, err)
	}
	if _, err := o.Integer("f", true, 0, 5); err == nil {
		t.Errorf("Integer(f) accepted 2.5")
	}
	if e := Invalid(o.At("f"), "x"); e.Param != "targets[0].f" || e.Code != CodeInvalidConfig {
		t.Errorf("Invalid = %+v", e)
	}
	if s, _, _ := o.Str("bad", false, true); !HasControl(s) {
		t.Errorf("HasControl(%q) = false", s)
	}
	if err := o.OnlyKeys("s", "n", "i", "f"); err == nil {
		t.Errorf("OnlyKeys let an unknown key through")
	}
}
