package bootstrap

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/jsoncheck"
	"github.com/llmgw/gateway/runtime/prompt"
	"github.com/llmgw/gateway/storage"
)

// A template is checked alike in a bootstrap file and alone: the file's prompt versions accept DESIGN.md's
// template, and refuse two provider references at the same path as ParsePromptTemplate, under the version.
func TestPromptTemplateRulesMatchTheBootstrapFile(t *testing.T) {
	f := mustParse(t, designExample, exampleDir(t))
	if err := prompt.CheckTemplate(f.Prompts[0].Versions[0].Template); err != nil {
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
	err := prompt.CheckTemplate([]byte(`{"messages": [{"role": "user", "content": "ok"}, {"role": "user", "content": "Hi {{#name}}"}]}`))
	var te *jsoncheck.Error
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
