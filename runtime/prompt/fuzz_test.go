package prompt

import (
	"encoding/json"
	"testing"
)

// FuzzCompileRender: any template either fails to compile with an *Error, or renders (with any variables)
// into a JSON object; nothing panics. Seeds in testdata/fuzz/FuzzCompileRender.
func FuzzCompileRender(f *testing.F) {
	f.Add([]byte(`{"model": "m", "messages": [{"role": "user", "content": "Hi {{name}}{{#items}}{{.}}{{/items}}"}]}`), []byte(`{"name": "<a&b>", "items": [1, "x"]}`))
	f.Add([]byte(`{"messages": [{"role": "user", "content": [{"type": "text", "text": "{{^x}}none{{/x}}"}, {"type": "image_url"}]}]}`), []byte(`{}`))
	f.Add([]byte(`{"messages": [{"role": "user", "content": "{{#a}}"}]}`), []byte(`{"a": null}`))
	f.Fuzz(func(t *testing.T, template, variables []byte) {
		tmpl, err := Compile(template)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("Compile error of type %T: %v", err, err)
			}
			return
		}
		var vars map[string]any
		if json.Unmarshal(variables, &vars) != nil {
			vars = nil
		}
		out, err := tmpl.Render(vars, map[string]json.RawMessage{"seed": json.RawMessage(`1`)})
		if err != nil {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("rendered body is not a JSON object: %v\n%s", err, out)
		}
	})
}

func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"welcome", "welcome@latest", "welcome@3", "w@0", "w@", "@", "a@b@c", "w@99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		if err != nil {
			return
		}
		if back, err := ParseRef(r.String()); err != nil || back != r {
			t.Fatalf("%q parsed as %+v, which prints as %q and parses back as %+v, %v", s, r, r.String(), back, err)
		}
	})
}
