package bootstrap

import (
	"errors"
	"testing"

	"github.com/llmgw/gateway/storage"
)

// TestCheckIDsOfConfigsAreValidated: a saved config's hooks and guardrails are compiled as requests would
// compile them, every target included, so that an unknown check id or a bad parameter stops the start.
func TestCheckIDsOfConfigsAreValidated(t *testing.T) {
	tests := []struct {
		name   string
		config string
		path   string
	}{
		{"unknown built-in", `{"input_guardrails": [{"deny": true, "default.wordCountt": {}}]}`,
			"configs[0].config.input_guardrails[0].default.wordCountt"},
		{"bad parameter in a target", `{"strategy": {"mode": "fallback"}, "targets": [{"provider": "@a"},
			{"provider": "@b", "before_request_hooks": [{"id": "h", "checks": [{"id": "regexMatch", "parameters": {"rule": "("}}]}]}]}`,
			"configs[0].config.targets[1].before_request_hooks[0].checks[0].parameters.rule"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(`{"configs": [{"id": "c", "config": `+tc.config+`}]}`), t.TempDir())
			ve := validationError(t, err)
			if _, ok := findProblem(ve.Problems, tc.path); !ok || len(ve.Problems) != 1 {
				t.Errorf("want one problem at %s; got:%s", tc.path, dumpProblems(ve.Problems))
			}
		})
	}
}

// TestChecksNamingPluginsMustFindThem: a guardrail or config of the file whose check names a plugin that
// neither the file (same workspace) nor the store has is refused before anything is written, naming the check;
// a plugin the file defines or the store holds is fine.
func TestChecksNamingPluginsMustFindThem(t *testing.T) {
	const ws = `"workspaces": [{"id": "` + exampleWorkspaceID + `", "slug": "default"}, {"slug": "other"}],`
	tests := []struct {
		name     string
		doc      string
		stored   string   // a plugin of workspace default already in the store
		problems []string // paths; none: the file applies
	}{
		{"guardrail naming a missing plugin",
			`{` + ws + ` "guardrails": [{"id": "g", "deny": true, "piii.detect": {}}]}`, "",
			[]string{"guardrails[0].piii.detect"}},
		{"guardrail check list naming a missing plugin",
			`{` + ws + ` "guardrails": [{"id": "g", "checks": [{"id": "piii.detect", "parameters": {}}]}]}`, "",
			[]string{"guardrails[0].checks[0].id"}},
		{"config naming a missing plugin",
			`{` + ws + ` "configs": [{"id": "c", "config": {"input_guardrails": [{"deny": true, "piii.detect": {}}]}}]}`, "",
			[]string{"configs[0].config.input_guardrails[0].piii.detect"}},
		{"config target naming a missing plugin",
			`{` + ws + ` "configs": [{"id": "c", "config": {"strategy": {"mode": "fallback"}, "targets": [{"provider": "@a",
				"output_guardrails": [{"pii.scan": {}}]}]}}]}`, "",
			[]string{"configs[0].config.targets[0].output_guardrails[0].pii.scan"}},
		{"every one is listed",
			`{` + ws + ` "guardrails": [{"id": "g", "piii.detect": {}}],
				"configs": [{"id": "c", "config": {"after_request_hooks": [{"id": "h", "checks": [{"id": "nope.x", "parameters": {}}]}]}}]}`, "",
			[]string{"guardrails[0].piii.detect", "configs[0].config.after_request_hooks[0].checks[0].id"}},
		{"plugin of the same file",
			`{` + ws + ` "guardrails": [{"id": "g", "deny": true, "pii.detect": {}}],
				"configs": [{"id": "c", "config": {"input_guardrails": [{"pii.detect": {}}]}}],
				"plugins": [{"id": "pii", "wasm": "path/to/pii.wasm"}]}`, "", nil},
		{"plugin of the same file by the workspace's ID",
			`{` + ws + ` "guardrails": [{"id": "g", "workspace": "` + exampleWorkspaceID + `", "pii.detect": {}}],
				"plugins": [{"id": "pii", "workspace": "default", "wasm": "path/to/pii.wasm"}]}`, "", nil},
		{"plugin of the same file in another workspace",
			`{` + ws + ` "guardrails": [{"id": "g", "pii.detect": {}}],
				"plugins": [{"id": "pii", "workspace": "other", "wasm": "path/to/pii.wasm"}]}`, "",
			[]string{"guardrails[0].pii.detect"}},
		{"plugin in the store (loaded or not)",
			`{` + ws + ` "guardrails": [{"id": "g", "pii.detect": {}}],
				"configs": [{"id": "c", "config": {"input_guardrails": [{"pii.detect": {}}]}}]}`, "pii", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newStore(t)
			if tc.stored != "" {
				if _, err := st.Workspaces.Put(&storage.Workspace{ID: exampleWorkspaceID, Slug: "default", OrganisationID: exampleOrgID}); err != nil {
					t.Fatal(err)
				}
				if _, _, err := st.Plugins.Put(exampleWorkspaceID, tc.stored, wasmModule); err != nil {
					t.Fatal(err)
				}
			}
			f := mustParse(t, tc.doc, exampleDir(t))
			res, err := Apply(st, f)
			if len(tc.problems) == 0 {
				if err != nil {
					t.Fatalf("Apply: %v", err)
				}
				return
			}
			ve := validationError(t, err)
			for _, path := range tc.problems {
				if _, ok := findProblem(ve.Problems, path, `no plugin "`, "exists", `define it under "plugins"`); !ok {
					t.Errorf("no problem at %s; got:%s", path, dumpProblems(ve.Problems))
				}
			}
			if len(ve.Problems) != len(tc.problems) {
				t.Errorf("%d problems, want %d:%s", len(ve.Problems), len(tc.problems), dumpProblems(ve.Problems))
			}
			if res != (Result{}) {
				t.Errorf("Apply wrote %+v", res)
			}
			if _, err := st.Guardrails.Get(exampleWorkspaceID, "g"); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("the guardrail was written: %v", err)
			}
		})
	}
}
