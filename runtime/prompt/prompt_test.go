package prompt

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/llmgw/gateway/storage"
)

func vars(t testing.TB, doc string) map[string]any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(doc))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func render(t *testing.T, template, variables string, overrides map[string]json.RawMessage) map[string]any {
	t.Helper()
	tmpl, err := Compile([]byte(template))
	if err != nil {
		t.Fatal(err)
	}
	out, err := tmpl.Render(vars(t, variables), overrides)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("rendered body is not JSON: %v: %s", err, out)
	}
	return m
}

func contents(m map[string]any) []any {
	var out []any
	for _, msg := range m["messages"].([]any) {
		out = append(out, msg.(map[string]any)["content"])
	}
	return out
}

func TestRender(t *testing.T) {
	const tmpl = `{"provider": "@p", "model": "gpt-4o", "temperature": 0.2, "max_tokens": 100,
		"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
		"messages": [
			{"role": "system", "content": "You help {{company}}.{{#vip}} Be extra kind.{{/vip}}{{^vip}} Be brief.{{/vip}}"},
			{"role": "user", "name": "u1", "content": "Items:{{#items}} {{name}}={{qty}};{{/items}} Missing:[{{nope}}] Count: {{n}}"},
			{"role": "user", "content": [{"type": "text", "text": "Look at {{thing}}"}, {"type": "image_url", "image_url": {"url": "https://x/{{thing}}.png"}}]}]}`
	m := render(t, tmpl, `{"company": "A&B <Ltd> \"Quotes\" 'single'", "vip": true,
		"items": [{"name": "x", "qty": 1}, {"name": "y", "qty": 2.50}], "n": 12345678901, "thing": "a cat"}`, nil)
	got := contents(m)
	if got[0] != `You help A&B <Ltd> "Quotes" 'single'. Be extra kind.` {
		t.Errorf("system = %q (no HTML escaping, sections)", got[0])
	}
	if got[1] != "Items: x=1; y=2.50; Missing:[] Count: 12345678901" {
		t.Errorf("user = %q (lists, numbers as written, missing variables empty)", got[1])
	}
	parts := got[2].([]any)
	if parts[0].(map[string]any)["text"] != "Look at a cat" || parts[1].(map[string]any)["image_url"].(map[string]any)["url"] != "https://x/{{thing}}.png" {
		t.Errorf("parts = %v (only text parts are templates)", parts)
	}
	if m["model"] != "gpt-4o" || m["temperature"] != 0.2 || m["max_tokens"] != 100.0 || m["tools"] == nil {
		t.Errorf("hyperparameters = %v", m)
	}
	if _, ok := m["provider"]; ok {
		t.Errorf("the target is not part of the body: %v", m)
	}
	if m["messages"].([]any)[1].(map[string]any)["name"] != "u1" {
		t.Errorf("message fields lost: %v", m["messages"])
	}
	m = render(t, tmpl, `{"vip": false}`, map[string]json.RawMessage{"temperature": json.RawMessage(`0.9`), "seed": json.RawMessage(`7`)})
	if got := contents(m)[0]; got != "You help . Be brief." {
		t.Errorf("inverted section: %q", got)
	}
	if m["temperature"] != 0.9 || m["seed"] != 7.0 || m["max_tokens"] != 100.0 {
		t.Errorf("overrides: %v", m)
	}
}

func TestCompileRefuses(t *testing.T) {
	for _, tc := range []struct{ doc, field string }{
		{`[]`, ""},
		{`{"model": "m"}`, "messages"},
		{`{"messages": []}`, "messages"},
		{`{"messages": [{"content": "x"}]}`, "messages[0].role"},
		{`{"messages": [{"role": "user"}]}`, "messages[0].content"},
		{`{"messages": [{"role": "user", "content": 3}]}`, "messages[0].content"},
		{`{"messages": [{"role": "user", "content": "{{#open}}"}]}`, "messages[0].content"},
		{`{"messages": [{"role": "user", "content": [{"type": "text", "text": "{{/x}}"}]}]}`, "messages[0].content[0].text"},
		{`{"provider": 3, "messages": [{"role": "user", "content": "x"}]}`, "provider"},
	} {
		_, err := Compile([]byte(tc.doc))
		var pe *Error
		if !errors.As(err, &pe) || pe.Field != tc.field {
			t.Errorf("%s: error %v, want one naming %q", tc.doc, err, tc.field)
		}
	}
}

func TestRefAndSelect(t *testing.T) {
	p := &storage.Prompt{ID: "w", Versions: []storage.PromptVersion{{Version: 1}, {Version: 2, Published: true}, {Version: 3}}}
	for _, tc := range []struct {
		ref  string
		want int // 0: ErrNoVersion
	}{{"w", 2}, {"w@latest", 3}, {"w@1", 1}, {"w@3", 3}, {"w@4", 0}} {
		r, err := ParseRef(tc.ref)
		if err != nil {
			t.Fatal(err)
		}
		v, err := Select(p, r)
		switch {
		case tc.want == 0 && !errors.Is(err, ErrNoVersion):
			t.Errorf("%s: %v, want ErrNoVersion", tc.ref, err)
		case tc.want != 0 && (err != nil || v.Version != tc.want):
			t.Errorf("%s: %v %v, want version %d", tc.ref, v, err, tc.want)
		}
		if r.String() != tc.ref {
			t.Errorf("String() = %q, want %q", r.String(), tc.ref)
		}
	}
	p.Versions[1].Published = false
	if _, err := Select(p, Ref{ID: "w"}); !errors.Is(err, ErrNoVersion) {
		t.Errorf("no published version: %v", err)
	}
	for _, bad := range []string{"", "w@", "w@0", "w@-1", "w@x", "w@+1", "a/b", "w@1@2"} {
		if _, err := ParseRef(bad); err == nil {
			t.Errorf("ParseRef(%q) accepted", bad)
		}
	}
}

func TestCache(t *testing.T) {
	c := NewCache(2)
	docs := []string{
		`{"messages": [{"role": "user", "content": "a"}]}`,
		`{"messages": [{"role": "user", "content": "b"}]}`,
		`{"messages": [{"role": "user", "content": "c"}]}`,
	}
	a1, _ := c.Compile([]byte(docs[0]))
	a2, _ := c.Compile([]byte(docs[0]))
	if a1 != a2 {
		t.Fatal("the same template compiled twice")
	}
	for _, d := range docs {
		if _, err := c.Compile([]byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.m) > 2 {
		t.Fatalf("cache holds %d templates, bound 2", len(c.m))
	}
	if _, err := c.Compile([]byte(`{}`)); err == nil {
		t.Fatal("a bad template compiled")
	}
}

func BenchmarkRender(b *testing.B) {
	tmpl, err := Compile([]byte(`{"model": "gpt-4o-mini", "temperature": 0.2, "max_tokens": 256,
		"messages": [{"role": "system", "content": "You are the assistant of {{company}}. Answer in {{language}}."},
		{"role": "user", "content": "Hello, I am {{name}}. {{question}}"}]}`))
	if err != nil {
		b.Fatal(err)
	}
	v := vars(b, `{"company": "Acme", "language": "English", "name": "Ada", "question": "What can you do for me today?"}`)
	over := map[string]json.RawMessage{"temperature": json.RawMessage(`0.7`)}
	b.ReportAllocs()
	for b.Loop() {
		out, err := tmpl.Render(v, over)
		if err != nil || !bytes.HasSuffix(out, []byte("]}")) {
			b.Fatal(err)
		}
	}
}
