package ratelimit

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

var modelCases = []struct {
	body, want string
}{
	{`{"model":"gpt-4o"}`, "gpt-4o"},
	{` { "messages" : [ {"role":"user","content":"say \"model\": \"no\" {[" } ] , "model" : "m1" } `, "m1"},
	{`{"stream":true,"n":2,"x":null,"f":-1.5e3,"model":"m"}`, "m"},
	{`{"metadata":{"model":"inner"},"model":"outer"}`, "outer"},
	{`{"metadata":{"model":"inner"}}`, ""},
	{`{"model":"a","model":"b"}`, "b"},
	{`{"model":"a\u0062\"c"}`, "ab\"c"},
	{`{"mod\u0065l":"escaped-key"}`, "escaped-key"},
	{`{"model":"back\\"}`, `back\`},
	{`{"model":""}`, ""},
	{`{"model":42}`, ""},
	{`{"model":["x"]}`, ""},
	{`{}`, ""},
	{``, ""},
	{`[{"model":"x"}]`, ""},
	{`"model"`, ""},
	{`{"model":"unterminated}`, ""},
	{`{"model" "x"}`, ""},
	{`{"model":"x",}`, ""},
	{`{"a":{"b":[1,2,{"c":"]"}]},"model":"deep"}`, "deep"},
}

func TestBodyModel(t *testing.T) {
	for _, tt := range modelCases {
		if got := bodyModel([]byte(tt.body)); got != tt.want {
			t.Errorf("bodyModel(%s) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

// FuzzBodyModel checks the skimmer against encoding/json on every valid JSON object.
func FuzzBodyModel(f *testing.F) {
	for _, tt := range modelCases {
		f.Add(tt.body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		got := bodyModel([]byte(body)) // must not panic on anything
		// encoding/json replaces invalid UTF-8 where bodyModel keeps the bytes the provider will see.
		var obj map[string]json.RawMessage
		if !utf8.ValidString(body) || json.Unmarshal([]byte(body), &obj) != nil || obj == nil {
			return
		}
		var want string
		if json.Unmarshal(obj["model"], &want) != nil {
			want = ""
		}
		if got != want {
			t.Errorf("bodyModel(%s) = %q, encoding/json says %q", body, got, want)
		}
	})
}
