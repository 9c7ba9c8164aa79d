package runtime

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/llmgw/gateway/runtime/config"
)

func TestPatchBody(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		overrides map[string]string
		want      string
	}{
		{"replaced in place", `{"model":"a", "temperature": 1,"n":2}`, map[string]string{"temperature": "0.5"},
			`{"model":"a", "temperature": 0.5,"n":2}`},
		{"added in key order after the last member", `{"model":"a"}`, map[string]string{"top_p": "1", "max_tokens": "9"},
			`{"model":"a","max_tokens":9,"top_p":1}`},
		{"added before the caller's closing white space", "{\n  \"model\": \"a\"\n}\n", map[string]string{"n": "1"},
			"{\n  \"model\": \"a\",\"n\":1\n}\n"},
		{"empty object", ` { } `, map[string]string{"model": `"m"`}, ` {"model":"m" } `},
		{"every duplicate replaced", `{"model":"a","model":"b"}`, map[string]string{"model": `"c"`}, `{"model":"c","model":"c"}`},
		{"escaped key matched", `{"mod\u0065l":"a"}`, map[string]string{"model": `"c"`}, `{"mod\u0065l":"c"}`},
		{"nested members untouched", `{"messages":[{"model":"x","content":"say \"model\": \\"}],"model":"a"}`,
			map[string]string{"model": `{"k":[1]}`}, `{"messages":[{"model":"x","content":"say \"model\": \\"}],"model":{"k":[1]}}`},
		{"replaced and added", `{"model":"a","stream":false}`, map[string]string{"model": `"b"`, "user": `"u"`},
			`{"model":"b","stream":false,"user":"u"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := &config.Node{OverrideParams: map[string]json.RawMessage{}}
			for k, v := range tc.overrides {
				n.OverrideParams[k] = json.RawMessage(v)
			}
			got, err := patchBody([]byte(tc.body), n)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("patchBody(%s) = %s, want %s", tc.body, got, tc.want)
			}
		})
	}
}

func TestPatchBodyUnchanged(t *testing.T) {
	body := []byte(`{"model":"a"}`)
	got, err := patchBody(body, &config.Node{})
	if err != nil || &got[0] != &body[0] {
		t.Errorf("without override_params the caller's bytes must go upstream as they are: %s, %v", got, err)
	}
	for _, bad := range []string{``, `null`, `[1]`, `{"a":1`, `{"a" 1}`, `{"a":"x}`, `{"a":1,}`, `{1:2}`} {
		if _, err := patchBody([]byte(bad), &config.Node{OverrideParams: map[string]json.RawMessage{"a": json.RawMessage(`2`)}}); err == nil {
			t.Errorf("patchBody(%q) patched a body that is not an object", bad)
		}
	}
}

func TestFillUser(t *testing.T) {
	tests := []struct {
		name, body, user, want string
	}{
		{"added", `{"model":"a"}`, "u-1", `{"model":"a","user":"u-1"}`},
		{"escaped", `{"model":"a"}`, "a\"b\n", `{"model":"a","user":"a\"b\n"}`},
		{"the caller's kept", `{"user":"mine","model":"a"}`, "u-1", `{"user":"mine","model":"a"}`},
		{"a null user is the caller's", `{"user":null}`, "u-1", `{"user":null}`},
		{"no metadata", `{"model":"a"}`, "", `{"model":"a"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := &Request{Metadata: map[string]string{}}
			if tc.user != "" {
				req.Metadata["_user"] = tc.user
			}
			got, err := fillUser([]byte(tc.body), req)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("fillUser(%s) = %s, want %s", tc.body, got, tc.want)
			}
		})
	}
}

// FuzzSetMembers checks the one-pass patch against encoding/json: decoding the patched body gives what
// decoding the caller's body and setting the member gives (the last of duplicate keys wins in both), and no
// member of the name is left with another value. Seeds are in testdata/fuzz/FuzzSetMembers.
func FuzzSetMembers(f *testing.F) {
	f.Add(`{"model":"a","messages":[{"role":"user","content":"hi \"there\" \\"}]}`, "model", `"b"`, false)
	f.Add(`{"user":"x"}`, "user", `"y"`, true)
	f.Fuzz(func(t *testing.T, body, name, value string, onlyMissing bool) {
		var before map[string]json.RawMessage
		if json.Unmarshal([]byte(body), &before) != nil || before == nil || !json.Valid([]byte(value)) || !utf8.ValidString(name) {
			return // patches apply to checked bodies; their names were decoded from JSON and their values are JSON
		}
		out, err := setMembers([]byte(body), []memberPatch{{name: name, value: []byte(value)}}, onlyMissing)
		if err != nil {
			t.Fatalf("setMembers(%q): %v", body, err)
		}
		var after map[string]json.RawMessage
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("setMembers(%q) = %q, not JSON: %v", body, out, err)
		}
		if _, has := before[name]; !has || !onlyMissing {
			before[name] = json.RawMessage(value)
		}
		if !reflect.DeepEqual(decodeAll(t, before), decodeAll(t, after)) {
			t.Fatalf("setMembers(%q, %q, %s) = %q; encoding/json gives %v", body, name, value, out, before)
		}
		if !onlyMissing { // every duplicate of the name has the value: a first-wins parser sees it too
			_, err := eachBodyMember(out, func(m bodyMember) {
				if keyIs(out[m.key:m.keyEnd], name) && !jsonEqual(out[m.value:m.end], []byte(value)) {
					t.Fatalf("setMembers(%q) = %q left %s for %q", body, out, out[m.value:m.end], name)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	})
}

func decodeAll(t *testing.T, m map[string]json.RawMessage) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		out[k] = x
	}
	return out
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
