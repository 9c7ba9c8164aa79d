package bootstrap

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/llmgw/gateway/storage"
)

func TestParsePromptTemplate(t *testing.T) {
	const msgs = `"messages": [{"role": "user", "content": "Hi {{name}}"}]`
	valid := []struct{ name, doc string }{
		{"messages only", `{` + msgs + `}`},
		{"DESIGN.md's example", `{"provider": "@mock-openai", "model": "m", ` + msgs + `, "temperature": 0.2}`},
		{"a provider id", `{"provider": "openai", "model": "gpt-4o", ` + msgs + `}`},
		{"a virtual key", `{"virtual_key": "mock-openai", ` + msgs + `}`},
		{"a saved config", `{"config": "cfg-a", ` + msgs + `}`},
		{"nulls mean absent", `{"provider": null, "virtual_key": null, "config": "cfg-a", "model": null, ` + msgs + `}`},
		{"content as parts, extra message fields", `{"messages": [{"role": "user", "name": "ann",
			"content": [{"type": "text", "text": "hi"}], "tool_call_id": "x"}]}`},
		{"hyperparameters pass as they are", `{` + msgs + `, "max_tokens": 5, "stop": ["\n"], "seed": 1,
			"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}], "tool_choice": "none",
			"response_format": {"type": "json_object"}, "thinking": {"type": "enabled", "budget_tokens": 100},
			"anything_else": {"x": [1]}}`},
	}
	for _, tc := range valid {
		t.Run(tc.name, func(t *testing.T) {
			if err := ParsePromptTemplate([]byte(tc.doc)); err != nil {
				t.Fatal(err)
			}
		})
	}

	invalid := []struct {
		name string
		doc  string
		// paths are the problems' paths in order; message is part of the first problem's message.
		paths   []string
		message string
	}{
		{"not an object", `[1]`, []string{""}, "must be an object, not array"},
		{"a string", `"Hi {{name}}"`, []string{""}, "must be an object, not string"},
		{"null", `null`, []string{""}, "must be an object, not null"},
		{"malformed", `{"messages": `, []string{""}, "unexpected end of JSON input"},
		{"messages missing", `{"model": "m"}`, []string{"messages"}, "is required"},
		{"messages empty", `{"messages": []}`, []string{"messages"}, "at least one message"},
		{"messages an object", `{"messages": {"role": "user"}}`, []string{"messages"}, "must be an array, not object"},
		{"message not an object", `{"messages": ["hi"]}`, []string{"messages[0]"}, "must be an object, not string"},
		{"content missing", `{"messages": [{"role": "user"}]}`, []string{"messages[0].content"}, "is required"},
		{"content a number", `{"messages": [{"role": "user", "content": 5}]}`, []string{"messages[0].content"}, "string or an array of parts, not number"},
		{"role missing in the second", `{"messages": [{"role": "system", "content": "a"}, {"content": "b"}]}`, []string{"messages[1].role"}, "is required"},
		{"name a number", `{"messages": [{"role": "user", "content": "a", "name": 1}]}`, []string{"messages[0].name"}, "must be a string"},
		{"model a number", `{"model": 4, ` + msgs + `}`, []string{"model"}, "must be a string, not number"},
		{"provider an object", `{"provider": {"id": "openai"}, ` + msgs + `}`, []string{"provider"}, "must be a string, not object"},
		{"virtual_key a number", `{"virtual_key": 1, ` + msgs + `}`, []string{"virtual_key"}, "must be a string, not number"},
		{"config an object", `{"config": {"retry": {"attempts": 1}}, ` + msgs + `}`, []string{"config"}, "must be a string, not object"},
		{"provider and virtual_key", `{"provider": "@p", "virtual_key": "p", ` + msgs + `}`, []string{"virtual_key"}, "cannot be set together with provider"},
		{"provider and config", `{"provider": "@p", "config": "c", ` + msgs + `}`, []string{"config"}, "cannot be set together with provider"},
		{"virtual_key and config", `{"config": "c", "virtual_key": "p", ` + msgs + `}`, []string{"config"}, "cannot be set together with virtual_key"},
		{"all three", `{"provider": "@p", "virtual_key": "p", "config": "c", ` + msgs + `}`, []string{"virtual_key", "config"}, "at most one of provider, virtual_key, config"},
		{"every problem", `{"messages": [{"content": 1}], "model": 2, "provider": "@p", "config": "c"}`,
			[]string{"messages[0].role", "messages[0].content", "model", "config"}, "is required"},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			err := ParsePromptTemplate([]byte(tc.doc))
			var te *TemplateError
			if !errors.As(err, &te) {
				t.Fatalf("err = %v, want a *TemplateError", err)
			}
			var paths []string
			for _, p := range te.Problems {
				paths = append(paths, p.Path)
			}
			if !reflect.DeepEqual(paths, tc.paths) {
				t.Fatalf("problem paths = %q, want %q (%v)", paths, tc.paths, err)
			}
			if !strings.Contains(te.Problems[0].Message, tc.message) {
				t.Fatalf("first problem %q does not say %q", te.Problems[0].Message, tc.message)
			}
			if tc.paths[0] != "" && !strings.HasPrefix(err.Error(), tc.paths[0]+": ") {
				t.Fatalf("error %q does not start with the field %q", err, tc.paths[0])
			}
		})
	}
	if err := ParsePromptTemplate([]byte(`{"messages": [{"role": "user"}]}`)); err == nil || err.Error() != "messages[0].content: is required" {
		t.Fatalf("err = %v, want exactly \"messages[0].content: is required\"", err)
	}
}

// A template is checked alike in a bootstrap file and alone: the file's prompt versions accept DESIGN.md's
// template, and refuse two provider references at the same path as ParsePromptTemplate, under the version.
func TestPromptTemplateRulesMatchTheBootstrapFile(t *testing.T) {
	f := mustParse(t, designExample, exampleDir(t))
	if err := ParsePromptTemplate(f.Prompts[0].Versions[0].Template); err != nil {
		t.Fatalf("the example file's template alone: %v", err)
	}
	for _, field := range []string{"virtual_key", "config"} {
		doc := `{"prompts": [{"id": "p", "versions": [{"template": {"provider": "@p", "` + field + `": "x",
			"messages": [{"role": "user", "content": "a"}]}}]}]}`
		_, err := Parse([]byte(doc), "")
		ve := validationError(t, err)
		if _, ok := findProblem(ve.Problems, "prompts[0].versions[0].template."+field, "cannot be set together with provider"); !ok {
			t.Fatalf("%s beside provider: no problem at its path; got:%s", field, dumpProblems(ve.Problems))
		}
	}
	// Each alone is a known string field, not an unknown one.
	for _, field := range []string{"virtual_key", "config"} {
		doc := `{"prompts": [{"id": "p", "versions": [{"template": {"` + field + `": "x", "messages": [{"role": "user", "content": "a"}]}}]}]}`
		mustParse(t, doc, "")
		doc = `{"prompts": [{"id": "p", "versions": [{"template": {"` + field + `": 3, "messages": [{"role": "user", "content": "a"}]}}]}]}`
		_, err := Parse([]byte(doc), "")
		ve := validationError(t, err)
		if _, ok := findProblem(ve.Problems, "prompts[0].versions[0].template."+field, "must be a string"); !ok {
			t.Fatalf("%s a number: got:%s", field, dumpProblems(ve.Problems))
		}
	}
}

func TestParsePromptTemplateChecksMustache(t *testing.T) {
	err := ParsePromptTemplate([]byte(`{"messages": [{"role": "user", "content": "ok"}, {"role": "user", "content": "Hi {{#name}}"}]}`))
	var te *TemplateError
	if !errors.As(err, &te) || len(te.Problems) != 1 || te.Problems[0].Path != "messages[1].content" || !strings.Contains(te.Problems[0].Message, "Mustache") {
		t.Fatalf("error %v, want one problem at messages[1].content naming Mustache", err)
	}
	_, err = Parse([]byte(`{"prompts": [{"id": "p", "versions": [{"template": {"messages": [{"role": "user", "content": [{"type": "text", "text": "{{/x}}"}]}]}}]}]}`), t.TempDir())
	if _, ok := findProblem(validationError(t, err).Problems, "prompts[0].versions[0].template.messages[0].content[0].text", "Mustache"); !ok {
		t.Fatalf("bootstrap: %v", err)
	}
}

// Applying the file again keeps the versions added since (over HTTP), and their publication.
func TestApplyKeepsLaterPromptVersions(t *testing.T) {
	st := newStore(t)
	doc := `{"prompts": [{"id": "p", "versions": [{"published": true, "template": {"messages": [{"role": "user", "content": "v1"}]}}]}]}`
	mustApply(t, st, mustParse(t, doc, t.TempDir()))
	ws, _ := st.Workspaces.Resolve("default")
	p, _ := st.Prompts.Get(ws.ID, "p")
	p.Versions = append(p.Versions, storage.PromptVersion{Version: 2, Published: true, Template: json.RawMessage(`{"messages": [{"role": "user", "content": "v2"}]}`)})
	p.Versions[0].Published = false
	if _, err := st.Prompts.Put(ws.ID, "p", p); err != nil {
		t.Fatal(err)
	}
	res := mustApply(t, st, mustParse(t, doc, t.TempDir()))
	got, _ := st.Prompts.Get(ws.ID, "p")
	if len(got.Versions) != 2 || got.Versions[0].Published || !got.Versions[1].Published {
		t.Fatalf("versions after applying the file again: %+v", got.Versions)
	}
	if res.Changed != 0 {
		t.Fatalf("applying the same file again changed %d records", res.Changed)
	}
}
