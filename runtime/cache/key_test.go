package cache

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

var testTarget = Target{Provider: "openai", BaseURL: "https://api.openai.com/v1"}

func mustKey(t *testing.T, ws string, tg Target, endpoint, body, ns string, md map[string]string) Key {
	t.Helper()
	k, err := KeyOf(ws, tg, endpoint, []byte(body), ns, md)
	if err != nil {
		t.Fatalf("KeyOf(%s): %v", body, err)
	}
	return k
}

func TestKeyOfSame(t *testing.T) {
	base := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}}}}}]}`
	tests := []struct {
		name string
		body string
	}{
		{"white space", "{\n  \"model\": \"gpt-4o\",\n\t\"messages\": [ {\"role\": \"user\", \"content\": \"hi\"} ],\r\n \"temperature\": 0.2, \"tools\": [{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}}}] }  "},
		{"top-level order", `{"temperature":0.2,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}}}}}],"messages":[{"role":"user","content":"hi"}],"model":"gpt-4o"}`},
		{"nested order", `{"model":"gpt-4o","messages":[{"content":"hi","role":"user"}],"temperature":0.2,"tools":[{"function":{"parameters":{"properties":{"a":{"type":"string"}},"type":"object"},"name":"f"},"type":"function"}]}`},
		{"stream", `{"stream":true,"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}}}}}]}`},
		{"stream options", `{"model":"gpt-4o","stream":false,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}],"temperature":0.2,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}}}}}]}`},
	}
	want := mustKey(t, "ws1", testTarget, "chat/completions", base, "", nil)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustKey(t, "ws1", testTarget, "chat/completions", tc.body, "", nil); got != want {
				t.Fatalf("key %s, want %s", got, want)
			}
		})
	}
	// Metadata order does not matter; an empty map is no map.
	a := mustKey(t, "ws1", testTarget, "chat/completions", base, "", map[string]string{"a": "1", "b": "2", "c": "3"})
	b := mustKey(t, "ws1", testTarget, "chat/completions", base, "", map[string]string{"c": "3", "b": "2", "a": "1"})
	if a != b {
		t.Fatal("metadata order changes the key")
	}
	if mustKey(t, "ws1", testTarget, "chat/completions", base, "", map[string]string{}) != want {
		t.Fatal("empty metadata differs from none")
	}
	// A namespace replaces the metadata.
	n1 := mustKey(t, "ws1", testTarget, "chat/completions", base, "team-a", map[string]string{"_user": "u1"})
	n2 := mustKey(t, "ws1", testTarget, "chat/completions", base, "team-a", map[string]string{"_user": "u2", "trace": "x"})
	if n1 != n2 {
		t.Fatal("with a namespace, metadata still changes the key")
	}
}

func TestKeyOfDiffers(t *testing.T) {
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2}`
	type in struct {
		ws       string
		tg       Target
		endpoint string
		body     string
		ns       string
		md       map[string]string
	}
	base := in{"ws1", testTarget, "chat/completions", body, "", nil}
	tests := []struct {
		name string
		in   in
	}{
		{"workspace", in{"ws2", testTarget, "chat/completions", body, "", nil}},
		{"provider", in{"ws1", Target{"groq", testTarget.BaseURL}, "chat/completions", body, "", nil}},
		{"host", in{"ws1", Target{"openai", "http://127.0.0.1:9911/v1"}, "chat/completions", body, "", nil}},
		{"endpoint", in{"ws1", testTarget, "completions", body, "", nil}},
		{"model", in{"ws1", testTarget, "chat/completions", strings.Replace(body, "gpt-4o", "gpt-4o-mini", 1), "", nil}},
		{"parameter", in{"ws1", testTarget, "chat/completions", strings.Replace(body, "0.2", "0.3", 1), "", nil}},
		{"number as written", in{"ws1", testTarget, "chat/completions", strings.Replace(body, "0.2", "0.20", 1), "", nil}},
		{"message", in{"ws1", testTarget, "chat/completions", strings.Replace(body, `"hi"`, `"hi!"`, 1), "", nil}},
		{"array order", in{"ws1", testTarget, "chat/completions", `{"model":"gpt-4o","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}],"temperature":0.2}`, "", nil}},
		{"metadata", in{"ws1", testTarget, "chat/completions", body, "", map[string]string{"_user": "u1"}}},
		{"namespace", in{"ws1", testTarget, "chat/completions", body, "ns", nil}},
		{"field boundaries", in{"ws", Target{"1openai", testTarget.BaseURL}, "chat/completions", body, "", nil}},
		{"metadata boundaries", in{"ws1", testTarget, "chat/completions", body, "", map[string]string{"a": "b=c"}}},
	}
	want := mustKey(t, base.ws, base.tg, base.endpoint, base.body, base.ns, base.md)
	seen := map[Key]string{want: "base"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := mustKey(t, tc.in.ws, tc.in.tg, tc.in.endpoint, tc.in.body, tc.in.ns, tc.in.md)
			if prev, dup := seen[got]; dup {
				t.Fatalf("same key as %s", prev)
			}
			seen[got] = tc.name
		})
	}
	if mustKey(t, "ws1", testTarget, "chat/completions", body, "", map[string]string{"a=b": "c"}) ==
		mustKey(t, "ws1", testTarget, "chat/completions", body, "", map[string]string{"a": "b=c"}) {
		t.Fatal("metadata a=b:c and a:b=c share a key")
	}
}

func TestKeyOfRefuses(t *testing.T) {
	for _, body := range []string{``, `[]`, `"x"`, `null`, `{`, `{"a":}`, `{"a":1,}`, `{"a":1} x`, `{"a":01}`, `{"a":"\x01"}`, `{"a":"\q"}`,
		strings.Repeat(`{"a":`, 300) + "1" + strings.Repeat("}", 300)} {
		if _, err := KeyOf("ws", testTarget, "chat/completions", []byte(body), "", nil); err == nil {
			t.Errorf("KeyOf(%.40q) succeeded", body)
		}
	}
}

// canonical returns the canonical body of b as KeyOf hashes it.
func canonical(b []byte) ([]byte, error) {
	c := &canon{}
	if err := c.topObject(b, skipStream); err != nil {
		return nil, err
	}
	return c.out, nil
}

func TestCanonical(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{}`, `{}`},
		{` { "b" : [ 1 , { "d" : null , "c" : true } , [ ] , { } ] , "a" : -1.5e+3 } `, `{"a":-1.5e+3,"b":[1,{"c":true,"d":null},[],{}]}`},
		{`{"a":2,"a":1}`, `{"a":2,"a":1}`}, // duplicates keep their order, so the last still wins
		{`{"stream":true,"x":"\u00e9\n","stream_options":{}}`, `{"x":"\u00e9\n"}`},
		{`{"b":{"stream":1}}`, `{"b":{"stream":1}}`}, // only top-level stream members go
	}
	for _, tc := range tests {
		got, err := canonical([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("canonical(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{}`, `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`,
		`{"a":[1,2.5e-3,-0,true,false,null,"\u0041\"\\"],"b":{"y":1,"x":2}}`, `{"a":2,"a":1}`, `[1]`, `{"a":"\ud800"}`, `{"a":1e}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := canonical(b)
		valid := json.Valid(b) && bytes.TrimLeft(b, " \t\r\n")[0] == '{'
		if (err == nil) != valid {
			if err == errTooDeep {
				return
			}
			t.Fatalf("canonical(%q) error %v, but encoding/json says valid=%v", b, err, valid)
		}
		if err != nil {
			return
		}
		v, w := decodeNumbers(t, b), decodeNumbers(t, got)
		delete(v, "stream")
		delete(v, "stream_options")
		if !reflect.DeepEqual(v, w) {
			t.Fatalf("canonical(%q) = %q: a different value", b, got)
		}
		again, err := canonical(got)
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("canonical is not idempotent: %q then %q (%v)", got, again, err)
		}
	})
}

func decodeNumbers(t *testing.T, b []byte) map[string]any {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v map[string]any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return v
}

func TestPartition(t *testing.T) {
	body := `{"model":"gpt-4o","temperature":0.2,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"What is the capital of France?"}]}`
	p0, q, ok := Partition("ws1", testTarget, "chat/completions", []byte(body), "", nil)
	if !ok || q != "What is the capital of France?" {
		t.Fatalf("Partition = %v, %q", ok, q)
	}
	same := []struct{ name, body string }{
		{"other wording", strings.Replace(body, "What is the capital of France?", "France's capital city?", 1)},
		{"stream and formatting", `{"stream":true, "messages":[{"content":"Be brief.","role":"system"},{"role":"user","content":"Capital of France"}],"model":"gpt-4o","temperature":0.2}`},
		{"parts", strings.Replace(body, `"What is the capital of France?"`, `[{"type":"text","text":"What is the"},{"type":"text","text":"capital?"}]`, 1)},
	}
	for _, tc := range same {
		t.Run(tc.name, func(t *testing.T) {
			p, _, ok := Partition("ws1", testTarget, "chat/completions", []byte(tc.body), "", nil)
			if !ok || p != p0 {
				t.Fatalf("partition %s (ok %v), want %s", p, ok, p0)
			}
		})
	}
	if _, q, _ := Partition("ws1", testTarget, "chat/completions", []byte(same[2].body), "", nil); q != "What is the\ncapital?" {
		t.Fatalf("query of text parts = %q", q)
	}
	differ := []struct{ name, body string }{
		{"model", strings.Replace(body, "gpt-4o", "gpt-4o-mini", 1)},
		{"parameter", strings.Replace(body, "0.2", "0.7", 1)},
		{"system prompt", strings.Replace(body, "Be brief.", "Answer in French.", 1)},
		{"history", strings.Replace(body, `{"role":"user"`, `{"role":"user","content":"Hello"},{"role":"assistant","content":"Hi!"},{"role":"user"`, 1)},
	}
	for _, tc := range differ {
		t.Run(tc.name, func(t *testing.T) {
			p, _, ok := Partition("ws1", testTarget, "chat/completions", []byte(tc.body), "", nil)
			if !ok || p == p0 {
				t.Fatalf("partition %s (ok %v): want another than %s", p, ok, p0)
			}
		})
	}
	if p, _, _ := Partition("ws2", testTarget, "chat/completions", []byte(body), "", nil); p == p0 {
		t.Fatal("another workspace shares the partition")
	}
	if p, _, _ := Partition("ws1", testTarget, "chat/completions", []byte(body), "", map[string]string{"a": "b"}); p == p0 {
		t.Fatal("metadata does not change the partition")
	}
	// The query is the last user message, even with a tool turn after it.
	tool := `{"model":"m","messages":[{"role":"user","content":"first"},{"role":"assistant","content":"ok"},{"role":"user","content":"second"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"42"}]}`
	if _, q, ok := Partition("ws1", testTarget, "chat/completions", []byte(tool), "", nil); !ok || q != "second" {
		t.Fatalf("query = %q, %v; want second", q, ok)
	}
	none := []string{
		`{"model":"m","messages":[{"role":"system","content":"s"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"   "}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"what is this"},{"type":"image_url","image_url":{"url":"data:"}}]}]}`,
		`{"model":"m","prompt":"hi"}`,
		`{"model":"m","messages":"hi"}`,
		`{"model":"m","messages":[{"role":"user","content":"hi"}]`,
	}
	for _, b := range none {
		if _, _, ok := Partition("ws1", testTarget, "chat/completions", []byte(b), "", nil); ok {
			t.Errorf("Partition(%s) = ok", b)
		}
	}
}

// benchBody is a chat request of about 1 KB.
var benchBody = []byte(`{"model":"gpt-4o-mini","temperature":0.2,"max_tokens":512,"stream":true,"stream_options":{"include_usage":true},` +
	`"messages":[{"role":"system","content":"You are a helpful assistant that answers questions about European geography in one short paragraph."},` +
	`{"role":"user","content":"What is the capital of France, and what river runs through it?"},` +
	`{"role":"assistant","content":"The capital of France is Paris, and the Seine runs through it, dividing the city into the Left Bank and the Right Bank."},` +
	`{"role":"user","content":"And which bridges over that river are the oldest? Name three and say when each was built, please."}],` +
	`"tools":[{"type":"function","function":{"name":"lookup_landmark","description":"Look up facts about a landmark by name.",` +
	`"parameters":{"type":"object","properties":{"name":{"type":"string","description":"The landmark's name"},"city":{"type":"string"}},"required":["name"]}}}],` +
	`"tool_choice":"auto","user":"user-1234","seed":42}`)

var sinkKey Key

func BenchmarkKeyOf(b *testing.B) {
	if len(benchBody) < 900 || len(benchBody) > 1200 {
		b.Fatalf("body is %d bytes, want about 1 KB", len(benchBody))
	}
	md := map[string]string{"_user": "u1", "env": "prod"}
	b.SetBytes(int64(len(benchBody)))
	b.ReportAllocs()
	for b.Loop() {
		k, err := KeyOf("8c4f2a8e-6c1b-4e0e-9d55-3f1f5b8b2a11", testTarget, "chat/completions", benchBody, "", md)
		if err != nil {
			b.Fatal(err)
		}
		sinkKey = k
	}
}

func BenchmarkPartition(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := Partition("8c4f2a8e-6c1b-4e0e-9d55-3f1f5b8b2a11", testTarget, "chat/completions", benchBody, "", nil); !ok {
			b.Fatal("no partition")
		}
	}
}
