package schema

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/llmgw/gateway/runtime/gwerr"
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

func bodyModel(raw []byte) string {
	b := NewBody(raw)
	return b.Model()
}

func TestBodyModel(t *testing.T) {
	for _, tt := range modelCases {
		if got := bodyModel([]byte(tt.body)); got != tt.want {
			t.Errorf("bodyModel(%s) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

// FuzzBodyModel checks the scanner against encoding/json on every valid JSON object.
func FuzzBodyModel(f *testing.F) {
	for _, tt := range modelCases {
		f.Add(tt.body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		got := bodyModel([]byte(body)) // must not panic on anything
		if _, err := ReadBody([]byte(body)); err == nil && !json.Valid([]byte(body)) {
			t.Errorf("ReadBody accepted %q, which is not valid JSON", body)
		}
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

func TestReadBody(t *testing.T) {
	for _, tt := range []struct {
		body       string
		stream     bool
		model      string
		param, msg string // of the error; "" for none
	}{
		{body: `{"model":"m","stream":true}`, stream: true, model: "m"},
		{body: ` {"stream":false} `, model: ""},
		{body: `{"stream":null,"model":"a\u00e9"}`, model: "aé"},
		{body: `{"stream":"yes"}`, param: "stream", msg: "stream must be a boolean, not string"},
		{body: `{"stream":1}`, param: "stream", msg: "stream must be a boolean, not number"},
		{body: ``, msg: "request body is empty"},
		{body: `[1]`, msg: "must be a JSON object"},
		{body: `{"model":"x",}`, msg: "line 1, column 15"},
		{body: "{\n\"a\": tru}", msg: "line 2"},
		{body: `{"a":1} x`, msg: "malformed JSON body"},
		{body: `{"a":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`, msg: "nests deeper than 256 levels"},
	} {
		b, err := ReadBody([]byte(tt.body))
		if tt.msg == "" {
			if err != nil || b.Stream() != tt.stream || b.Model() != tt.model {
				t.Errorf("ReadBody(%s) = stream %v model %q err %v; want %v %q", tt.body, b.Stream(), b.Model(), err, tt.stream, tt.model)
			}
			continue
		}
		var ge *gwerr.Error
		if !errors.As(err, &ge) || ge.Status != 400 || ge.Param != tt.param || !strings.Contains(ge.Message, tt.msg) {
			t.Errorf("ReadBody(%s) error = %v; want a 400 naming %q saying %q", tt.body, err, tt.param, tt.msg)
		}
	}
}

func TestBodyParamsAndChatDecodeOnce(t *testing.T) {
	b := NewBody([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0.5}`))
	if p := b.Params(); p["temperature"] != 0.5 {
		t.Fatalf("Params = %v", p)
	}
	c1, err := b.Chat()
	if err != nil || c1.Model != "m" || len(c1.Messages) != 1 {
		t.Fatalf("Chat = %+v, %v", c1, err)
	}
	if c2, _ := b.Chat(); c2 != c1 {
		t.Error("Chat decoded the body twice")
	}
	bad := NewBody([]byte(`{"model":"m","messages":{"role":"user"}}`))
	if _, err := bad.Chat(); err == nil || !strings.Contains(err.Error(), "messages must be an array") {
		t.Errorf("Chat of a wrongly typed messages = %v", err)
	}
}

func BenchmarkReadBody(b *testing.B) {
	body := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello in five words, please."}],"temperature":0.2,"stream":true}`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		rb, err := ReadBody(body)
		if err != nil || !rb.Stream() || rb.Model() != "gpt-4o-mini" {
			b.Fatal(err)
		}
	}
}
