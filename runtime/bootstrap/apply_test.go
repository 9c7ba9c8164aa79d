package bootstrap

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/llmgw/gateway/storage"
)

// storeDump is everything a store holds that Apply can write, read back through the public API.
type storeDump struct {
	Workspaces []*storage.Workspace
	APIKeys    map[string][]*storage.APIKey
	Providers  map[string][]*storage.Provider
	Configs    map[string][]*storage.Config
	Prompts    map[string][]*storage.Prompt
	Policies   map[string][]*storage.RateLimitPolicy
	Guardrails map[string][]*storage.Guardrail
	Plugins    map[string][]*storage.Plugin
	Wasm       map[string][]byte // workspace/plugin -> bytes
}

func dumpStore(t testing.TB, st *storage.Store) storeDump {
	t.Helper()
	d := storeDump{APIKeys: map[string][]*storage.APIKey{}, Providers: map[string][]*storage.Provider{},
		Configs: map[string][]*storage.Config{}, Prompts: map[string][]*storage.Prompt{},
		Policies: map[string][]*storage.RateLimitPolicy{}, Guardrails: map[string][]*storage.Guardrail{},
		Plugins: map[string][]*storage.Plugin{}, Wasm: map[string][]byte{}}
	var err error
	check := func(e error) {
		t.Helper()
		if e != nil {
			t.Fatalf("dump store: %v", e)
		}
	}
	d.Workspaces, err = st.Workspaces.List()
	check(err)
	for _, w := range d.Workspaces {
		d.APIKeys[w.ID], err = st.APIKeys.List(w.ID)
		check(err)
		d.Providers[w.ID], err = st.Providers.List(w.ID)
		check(err)
		d.Configs[w.ID], err = st.Configs.List(w.ID)
		check(err)
		d.Prompts[w.ID], err = st.Prompts.List(w.ID)
		check(err)
		d.Policies[w.ID], err = st.Policies.List(w.ID)
		check(err)
		d.Guardrails[w.ID], err = st.Guardrails.List(w.ID)
		check(err)
		d.Plugins[w.ID], err = st.Plugins.List(w.ID)
		check(err)
		for _, p := range d.Plugins[w.ID] {
			d.Wasm[w.ID+"/"+p.ID], err = st.Plugins.Wasm(w.ID, p.ID)
			check(err)
		}
	}
	return d
}

// stamps returns the creation and update times of every record in d, by kind/workspace/id.
func (d storeDump) stamps() map[string]storage.Stamps {
	out := map[string]storage.Stamps{}
	for _, w := range d.Workspaces {
		out["workspace/"+w.ID] = w.Stamps
	}
	for ws, list := range d.APIKeys {
		for _, x := range list {
			out["apikey/"+ws+"/"+x.ID] = x.Stamps
		}
	}
	for ws, list := range d.Providers {
		for _, x := range list {
			out["provider/"+ws+"/"+x.Slug] = x.Stamps
		}
	}
	for ws, list := range d.Configs {
		for _, x := range list {
			out["config/"+ws+"/"+x.ID] = x.Stamps
		}
	}
	for ws, list := range d.Prompts {
		for _, x := range list {
			out["prompt/"+ws+"/"+x.ID] = x.Stamps
		}
	}
	for ws, list := range d.Policies {
		for _, x := range list {
			out["policy/"+ws+"/"+x.ID] = x.Stamps
		}
	}
	for ws, list := range d.Guardrails {
		for _, x := range list {
			out["guardrail/"+ws+"/"+x.ID] = x.Stamps
		}
	}
	for ws, list := range d.Plugins {
		for _, x := range list {
			out["plugin/"+ws+"/"+x.ID] = x.Stamps
		}
	}
	return out
}

func mustApply(t testing.TB, st *storage.Store, f *File) Result {
	t.Helper()
	res, err := Apply(st, f)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return res
}

func TestApplyDesignExample(t *testing.T) {
	st := newStore(t)
	f := mustParse(t, designExample, exampleDir(t))
	res := mustApply(t, st, f)
	if res.Changed != exampleEntries || res.Unchanged != 0 {
		t.Fatalf("Apply on an empty store = %+v, want Changed %d, Unchanged 0", res, exampleEntries)
	}

	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"workspace", func(t *testing.T) {
			list, err := st.Workspaces.List()
			if err != nil || len(list) != 1 {
				t.Fatalf("workspaces = %v, %v; want exactly one", list, err)
			}
			w := list[0]
			if w.ID != exampleWorkspaceID || w.Slug != "default" || w.OrganisationID != exampleOrgID {
				t.Fatalf("workspace = %+v", w)
			}
			if w.CreatedAt.IsZero() || !w.UpdatedAt.Equal(w.CreatedAt) {
				t.Fatalf("stamps of a new workspace = %+v", w.Stamps)
			}
		}},
		{"admin api key", func(t *testing.T) {
			k, err := st.APIKeys.Lookup("gw-secret")
			if err != nil {
				t.Fatalf("Lookup(gw-secret): %v", err)
			}
			if !k.Admin || k.WorkspaceID != exampleWorkspaceID || k.Hint != "cret" {
				t.Fatalf("key = %+v, want admin of %s", k, exampleWorkspaceID)
			}
			if _, err := uuid.Parse(k.ID); err != nil {
				t.Fatalf("key ID %q is not a UUID", k.ID)
			}
			if _, err := st.APIKeys.Lookup("gw-secreT"); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("Lookup of another secret = %v, want ErrNotFound", err)
			}
		}},
		{"provider", func(t *testing.T) {
			p, err := st.Providers.Get(exampleWorkspaceID, "mock-openai")
			if err != nil {
				t.Fatalf("Providers.Get: %v", err)
			}
			if p.Provider != "openai" || p.Slug != "mock-openai" || p.WorkspaceID != exampleWorkspaceID {
				t.Fatalf("provider = %+v", p)
			}
			got := map[string]string{}
			for k, v := range p.Fields {
				got[k] = compactJSON(t, v)
			}
			want := map[string]string{"api_key": `"sk-x"`, "custom_host": `"http://127.0.0.1:9911/v1"`}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("provider fields = %v, want %v", got, want)
			}
		}},
		{"config", func(t *testing.T) {
			c, err := st.Configs.Get(exampleWorkspaceID, "cfg-a")
			if err != nil {
				t.Fatalf("Configs.Get: %v", err)
			}
			if c.ID != "cfg-a" || c.WorkspaceID != exampleWorkspaceID || compactJSON(t, c.Config) != "{}" {
				t.Fatalf("config = %+v (%s)", c, c.Config)
			}
		}},
		{"prompt", func(t *testing.T) {
			p, err := st.Prompts.Get(exampleWorkspaceID, "welcome")
			if err != nil {
				t.Fatalf("Prompts.Get: %v", err)
			}
			if p.ID != "welcome" || p.WorkspaceID != exampleWorkspaceID || len(p.Versions) != 1 {
				t.Fatalf("prompt = %+v", p)
			}
			v := p.Versions[0]
			want := `{"provider": "@mock-openai", "model": "m", "messages": [{"role": "user", "content": "Hi {{name}}"}], "temperature": 0.2}`
			if v.Version != 1 || !v.Published || !sameJSON(t, v.Template, []byte(want)) {
				t.Fatalf("version = %+v (%s)", v, v.Template)
			}
		}},
		{"rate-limit policy", func(t *testing.T) {
			p, err := st.Policies.Get(exampleWorkspaceID, examplePolicyID)
			if err != nil {
				t.Fatalf("Policies.Get: %v", err)
			}
			if p.ID != examplePolicyID || p.WorkspaceID != exampleWorkspaceID || p.OrganisationID != exampleOrgID {
				t.Fatalf("policy ids = %s %s %s; want the organisation of the workspace", p.ID, p.WorkspaceID, p.OrganisationID)
			}
			if p.Type != "requests" || p.Unit != "rpm" || p.Value != 60 || p.Status != "active" || p.Name == nil || *p.Name != "n" {
				t.Fatalf("policy = %+v", p)
			}
			if len(p.Conditions) != 0 || !reflect.DeepEqual(p.GroupBy, []storage.PolicyGroup{{Key: "api_key"}}) {
				t.Fatalf("policy conditions %v, group_by %v", p.Conditions, p.GroupBy)
			}
		}},
		{"guardrail", func(t *testing.T) {
			g, err := st.Guardrails.Get(exampleWorkspaceID, "no-emails")
			if err != nil {
				t.Fatalf("Guardrails.Get: %v", err)
			}
			want := `{"deny": true, "default.regexMatch": {"rule": "[a-z]+@[a-z]+\\.com", "not": true}}`
			if g.ID != "no-emails" || g.WorkspaceID != exampleWorkspaceID || !sameJSON(t, g.Guardrail, []byte(want)) {
				t.Fatalf("guardrail = %+v (%s), want object %s without id and workspace", g, g.Guardrail, want)
			}
		}},
		{"plugin", func(t *testing.T) {
			p, err := st.Plugins.Get(exampleWorkspaceID, "pii")
			if err != nil {
				t.Fatalf("Plugins.Get: %v", err)
			}
			sum := sha256.Sum256(wasmModule)
			if p.ID != "pii" || p.WorkspaceID != exampleWorkspaceID || p.SHA256 != hex.EncodeToString(sum[:]) || p.Size != len(wasmModule) {
				t.Fatalf("plugin = %+v", p)
			}
			wasm, err := st.Plugins.Wasm(exampleWorkspaceID, "pii")
			if err != nil || !bytes.Equal(wasm, wasmModule) {
				t.Fatalf("Plugins.Wasm = %q, %v; want %q", wasm, err, wasmModule)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

func TestApplyIdempotent(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		entries int  // the file's entries: each written by the first Apply, unchanged by the second
		implied bool // the first Apply also makes workspace "default", which is no entry of the file
	}{
		{"DESIGN.md example", designExample, exampleEntries, false},
		{"implied default workspace", `{"api_keys": [{"key": "gw-secret-2"}],
			"providers": [{"slug": "p", "provider": "llmvendor", "api_key": "k"}],
			"rate_limit_policies": [{"id": "` + examplePolicyID + `", "type": "tokens", "unit": "rpd", "value": 5}]}`, 3, true},
		{"workspaces without ids", `{"workspaces": [{"slug": "a", "name": "A"}, {"slug": "b"}],
			"configs": [{"id": "c", "workspace": "a", "config": {"retry": {"attempts": 2}}}, {"id": "c", "workspace": "b", "config": {}}]}`, 4, false},
		{"spaced JSON values and secret objects", `{"providers": [{"slug": "v", "provider": "vertex-ai", "cloudy_region": "eu",
			"cloudy_service_account_json": { "type" : "service_account", "keys" : [ 1, 2 ] },
			"deployments": [ {"deployment_id": "d", "alias": "a", "api_version": "v"} ]}],
			"configs": [{"id": "c", "config": { "retry" : { "attempts" : 2 } , "cache": {"mode": "simple"} }}],
			"guardrails": [{"id": "g", "wordCount": { "maxWords" : 3 }, "on_fail": {"feedback": {"value": 1}}}]}`, 3, true},
		{"workspace referenced by UUID", `{"workspaces": [{"id": "` + exampleWorkspaceID + `", "slug": "w", "organisation_id": "` + exampleOrgID + `"}],
			"prompts": [{"id": "p", "workspace": "` + exampleWorkspaceID + `", "versions": [
				{"template": {"messages": [{"role": "user", "content": "a"}]}},
				{"published": true, "template": {"messages": [{"role": "system", "content": "b"}]}}]}]}`, 2, false},
		{"policy without name", `{"rate_limit_policies": [{"id": "` + examplePolicyID + `", "type": "requests", "unit": "rph", "value": 1, "name": null,
			"conditions": [{"key": "metadata.team", "value": "x"}]}]}`, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := exampleDir(t)
			st := newStore(t)
			f := mustParse(t, tt.doc, dir)
			first := tt.entries
			if tt.implied {
				first++
			}
			if res := mustApply(t, st, f); res.Changed != first || res.Unchanged != 0 {
				t.Fatalf("first Apply = %+v, want Changed %d", res, first)
			}
			before := dumpStore(t, st)

			res := mustApply(t, st, f)
			if res.Changed != 0 || res.Unchanged != tt.entries {
				t.Fatalf("second Apply of the same file = %+v, want Changed 0, Unchanged %d", res, tt.entries)
			}
			if after := dumpStore(t, st); !reflect.DeepEqual(before, after) {
				t.Fatalf("second Apply changed the store:\nbefore %+v\nafter  %+v", before, after)
			}

			// A new process parses the file again: still nothing to do.
			res = mustApply(t, st, mustParse(t, tt.doc, dir))
			if res.Changed != 0 {
				t.Fatalf("Apply of the file parsed again = %+v, want Changed 0", res)
			}
			if after := dumpStore(t, st); !reflect.DeepEqual(before, after) {
				t.Fatalf("Apply of the file parsed again changed the store:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
}

func TestApplyUpdates(t *testing.T) {
	otherWasm := append(append([]byte(nil), wasmModule...), 0x00, 0x01, 0x00) // plus an empty custom section
	tests := []struct {
		name        string
		edit        func(doc string) string
		prepare     func(t *testing.T, dir string) // changes files beside the bootstrap file
		wantChanged int
		check       func(t *testing.T, st *storage.Store)
	}{
		{"provider api_key", func(doc string) string { return strings.Replace(doc, `"sk-x"`, `"sk-y"`, 1) }, nil, 1,
			func(t *testing.T, st *storage.Store) {
				p, err := st.Providers.Get(exampleWorkspaceID, "mock-openai")
				if err != nil || compactJSON(t, p.Fields["api_key"]) != `"sk-y"` {
					t.Fatalf("provider = %+v, %v; want api_key sk-y", p, err)
				}
			}},
		{"policy value", func(doc string) string { return strings.Replace(doc, `"value": 60`, `"value": 61`, 1) }, nil, 1,
			func(t *testing.T, st *storage.Store) {
				p, err := st.Policies.Get(exampleWorkspaceID, examplePolicyID)
				if err != nil || p.Value != 61 {
					t.Fatalf("policy = %+v, %v; want value 61", p, err)
				}
			}},
		{"provider api_key and policy value", func(doc string) string {
			return strings.Replace(strings.Replace(doc, `"sk-x"`, `"sk-y"`, 1), `"value": 60`, `"value": 120`, 1)
		}, nil, 2,
			func(t *testing.T, st *storage.Store) {
				p, err := st.Policies.Get(exampleWorkspaceID, examplePolicyID)
				if err != nil || p.Value != 120 {
					t.Fatalf("policy = %+v, %v; want value 120", p, err)
				}
			}},
		{"api key loses admin", func(doc string) string { return strings.Replace(doc, `"admin": true`, `"admin": false`, 1) }, nil, 1,
			func(t *testing.T, st *storage.Store) {
				k, err := st.APIKeys.Lookup("gw-secret")
				if err != nil || k.Admin {
					t.Fatalf("key = %+v, %v; want not admin", k, err)
				}
			}},
		{"guardrail deny", func(doc string) string { return strings.Replace(doc, `"deny": true`, `"deny": false`, 1) }, nil, 1,
			func(t *testing.T, st *storage.Store) {
				g, err := st.Guardrails.Get(exampleWorkspaceID, "no-emails")
				if err != nil || !strings.Contains(compactJSON(t, g.Guardrail), `"deny":false`) {
					t.Fatalf("guardrail = %s, %v; want deny false", g.Guardrail, err)
				}
			}},
		{"new prompt version", func(doc string) string {
			return strings.Replace(doc, `"temperature": 0.2}}]`, `"temperature": 0.2}}, {"template": {"messages": [{"role": "user", "content": "v2"}]}}]`, 1)
		}, nil, 1,
			func(t *testing.T, st *storage.Store) {
				p, err := st.Prompts.Get(exampleWorkspaceID, "welcome")
				if err != nil || len(p.Versions) != 2 || p.Versions[1].Version != 2 || p.Versions[1].Published {
					t.Fatalf("prompt = %+v, %v; want a second, unpublished version 2", p, err)
				}
			}},
		{"plugin bytes", func(doc string) string { return doc }, func(t *testing.T, dir string) {
			writeFile(t, dir, "path/to/pii.wasm", otherWasm)
		}, 1,
			func(t *testing.T, st *storage.Store) {
				wasm, err := st.Plugins.Wasm(exampleWorkspaceID, "pii")
				if err != nil || !bytes.Equal(wasm, otherWasm) {
					t.Fatalf("wasm = %q, %v; want %q", wasm, err, otherWasm)
				}
				p, _ := st.Plugins.Get(exampleWorkspaceID, "pii")
				sum := sha256.Sum256(otherWasm)
				if p == nil || p.SHA256 != hex.EncodeToString(sum[:]) || p.Size != len(otherWasm) {
					t.Fatalf("plugin = %+v, want the new digest", p)
				}
			}},
		{"organisation changes the workspace and its policy", func(doc string) string {
			return strings.Replace(doc, exampleOrgID, "11111111-2222-4333-8444-555555555555", 1)
		}, nil, 2,
			func(t *testing.T, st *storage.Store) {
				p, err := st.Policies.Get(exampleWorkspaceID, examplePolicyID)
				if err != nil || p.OrganisationID != "11111111-2222-4333-8444-555555555555" {
					t.Fatalf("policy = %+v, %v; want the new organisation", p, err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := exampleDir(t)
			st := newStore(t)
			mustApply(t, st, mustParse(t, designExample, dir))
			before := dumpStore(t, st)

			if tt.prepare != nil {
				tt.prepare(t, dir)
			}
			doc := tt.edit(designExample)
			res := mustApply(t, st, mustParse(t, doc, dir))
			if res.Changed != tt.wantChanged || res.Unchanged != exampleEntries-tt.wantChanged {
				t.Fatalf("Apply of the edited file = %+v, want Changed %d, Unchanged %d", res, tt.wantChanged, exampleEntries-tt.wantChanged)
			}
			tt.check(t, st)

			old, now := before.stamps(), dumpStore(t, st).stamps()
			if len(old) != len(now) {
				t.Fatalf("records: %d before, %d after; an update must not add or remove any", len(old), len(now))
			}
			updated := 0
			for k, s := range now {
				if !s.CreatedAt.Equal(old[k].CreatedAt) {
					t.Errorf("%s: created_at moved from %v to %v", k, old[k].CreatedAt, s.CreatedAt)
				}
				if s.UpdatedAt.Before(old[k].UpdatedAt) {
					t.Errorf("%s: updated_at went back from %v to %v", k, old[k].UpdatedAt, s.UpdatedAt)
				}
				if !s.UpdatedAt.Equal(old[k].UpdatedAt) {
					updated++
				}
			}
			if updated != tt.wantChanged {
				t.Errorf("%d records have a new updated_at, want %d", updated, tt.wantChanged)
			}

			// And the edited file is now the steady state.
			if res := mustApply(t, st, mustParse(t, doc, dir)); res.Changed != 0 {
				t.Fatalf("Apply of the edited file again = %+v, want Changed 0", res)
			}
		})
	}
}

// TestApplyUnknownWorkspace: a reference to a workspace that neither the file nor the store has fails the
// whole file before anything is written.
func TestApplyUnknownWorkspace(t *testing.T) {
	const head = `"workspaces": [{"id": "` + exampleWorkspaceID + `", "slug": "default"}],
		"api_keys": [{"key": "gw-secret"}],`
	tests := []struct {
		name  string
		doc   string
		paths []string
	}{
		{"config", `{` + head + ` "configs": [{"id": "c", "workspace": "nope", "config": {}}]}`, []string{"configs[0].workspace"}},
		{"api key", `{"workspaces": [{"slug": "default"}], "api_keys": [{"key": "gw-secret-2", "workspace": "nope"}]}`, []string{"api_keys[0].workspace"}},
		{"provider", `{` + head + ` "providers": [{"slug": "p", "workspace": "nope", "provider": "ollama"}]}`, []string{"providers[0].workspace"}},
		{"prompt", `{` + head + ` "prompts": [{"id": "p", "workspace": "nope", "versions": [{"template": {"messages": [{"role": "user", "content": "x"}]}}]}]}`, []string{"prompts[0].workspace"}},
		{"policy", `{` + head + ` "rate_limit_policies": [{"id": "` + examplePolicyID + `", "workspace": "nope", "type": "requests", "unit": "rpm", "value": 1}]}`, []string{"rate_limit_policies[0].workspace"}},
		{"guardrail", `{` + head + ` "guardrails": [{"id": "g", "workspace": "nope", "wordCount": {}}]}`, []string{"guardrails[0].workspace"}},
		{"plugin", `{` + head + ` "plugins": [{"id": "x", "workspace": "nope", "wasm": "path/to/pii.wasm"}]}`, []string{"plugins[0].workspace"}},
		{"unknown UUID", `{` + head + ` "configs": [{"id": "c", "workspace": "11111111-2222-4333-8444-555555555555", "config": {}}]}`, []string{"configs[0].workspace"}},
		{"every bad reference is listed", `{` + head + `
			"configs": [{"id": "c", "config": {}}, {"id": "d", "workspace": "nope", "config": {}}],
			"guardrails": [{"id": "g", "workspace": "other", "wordCount": {}}]}`, []string{"configs[1].workspace", "guardrails[0].workspace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStore(t)
			f := mustParse(t, tt.doc, exampleDir(t))
			res, err := Apply(st, f)
			ve := validationError(t, err)
			for _, path := range tt.paths {
				if _, ok := findProblem(ve.Problems, path, "no workspace"); !ok {
					t.Errorf("no problem at %s; got:%s", path, dumpProblems(ve.Problems))
				}
				if !strings.Contains(ve.Error(), path) {
					t.Errorf("Error() does not name %s: %s", path, ve.Error())
				}
			}
			if len(ve.Problems) != len(tt.paths) {
				t.Errorf("%d problems, want %d:%s", len(ve.Problems), len(tt.paths), dumpProblems(ve.Problems))
			}
			if res != (Result{}) {
				t.Errorf("Result = %+v, want zero when nothing is written", res)
			}
			if ws, err := st.Workspaces.List(); err != nil || len(ws) != 0 {
				t.Errorf("workspaces after a failed Apply = %v, %v; want none", ws, err)
			}
			if _, err := st.APIKeys.Lookup("gw-secret"); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("Lookup(gw-secret) after a failed Apply = %v, want ErrNotFound", err)
			}
		})
	}
}

// TestApplyDefaultWorkspace: "default" is created when an entry needs it and does not exist, and reused when
// it does.
func TestApplyDefaultWorkspace(t *testing.T) {
	const existingID, existingOrg = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee", "99999999-8888-4777-8666-555555555555"
	tests := []struct {
		name        string
		prepare     func(t *testing.T, st *storage.Store)
		doc         string
		wantChanged int
		wantID      string // "" = a new random UUID
	}{
		{"implied and missing", nil, `{"providers": [{"slug": "p", "provider": "ollama"}]}`, 2, ""},
		{"named and missing", nil, `{"configs": [{"id": "c", "workspace": "default", "config": {}}]}`, 2, ""},
		{"several entries create it once", nil, `{"api_keys": [{"key": "gw-secret", "admin": true}],
			"configs": [{"id": "c", "config": {}}], "guardrails": [{"id": "g", "workspace": "default", "wordCount": {}}]}`, 4, ""},
		{"existing", func(t *testing.T, st *storage.Store) {
			if _, err := st.Workspaces.Put(&storage.Workspace{ID: existingID, Slug: "default", OrganisationID: existingOrg}); err != nil {
				t.Fatal(err)
			}
		}, `{"providers": [{"slug": "p", "provider": "ollama"}]}`, 1, existingID},
		{"made by the first start", func(t *testing.T, st *storage.Store) {
			if _, err := st.Initialize(); err != nil {
				t.Fatal(err)
			}
		}, `{"api_keys": [{"key": "gw-secret", "admin": true}]}`, 1, "first-start"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStore(t)
			wantID := tt.wantID
			if tt.prepare != nil {
				tt.prepare(t, st)
				if wantID == "first-start" {
					list, _ := st.Workspaces.List()
					wantID = list[0].ID
				}
			}
			f := mustParse(t, tt.doc, t.TempDir())
			res := mustApply(t, st, f)
			if res.Changed != tt.wantChanged {
				t.Fatalf("Apply = %+v, want Changed %d", res, tt.wantChanged)
			}
			list, err := st.Workspaces.List()
			if err != nil || len(list) != 1 {
				t.Fatalf("workspaces = %v, %v; want exactly one", list, err)
			}
			w := list[0]
			if w.Slug != storage.DefaultWorkspaceSlug {
				t.Fatalf("workspace slug = %q", w.Slug)
			}
			if _, err := uuid.Parse(w.ID); err != nil {
				t.Fatalf("workspace ID %q is not a UUID", w.ID)
			}
			if _, err := uuid.Parse(w.OrganisationID); err != nil {
				t.Fatalf("organisation ID %q is not a UUID", w.OrganisationID)
			}
			if wantID != "" && w.ID != wantID {
				t.Fatalf("workspace ID = %s, want the existing %s", w.ID, wantID)
			}
			d := dumpStore(t, st)
			n := len(d.APIKeys[w.ID]) + len(d.Providers[w.ID]) + len(d.Configs[w.ID]) + len(d.Guardrails[w.ID])
			if want := len(f.APIKeys) + len(f.Providers) + len(f.Configs) + len(f.Guardrails); tt.name == "made by the first start" {
				if n != want+1 { // the first-start key is there too
					t.Fatalf("%d records in default, want %d", n, want+1)
				}
			} else if n != want {
				t.Fatalf("%d records in default, want %d", n, want)
			}
			if res := mustApply(t, st, f); res.Changed != 0 {
				t.Fatalf("second Apply = %+v, want Changed 0 (default must not be made twice)", res)
			}
			if again, _ := st.Workspaces.List(); len(again) != 1 || again[0].ID != w.ID {
				t.Fatalf("workspaces after a second Apply = %v", again)
			}
		})
	}
}

// TestApplyExistingWorkspace: a file's workspace meets the one the store has under its slug.
func TestApplyExistingWorkspace(t *testing.T) {
	const storedID, storedOrg = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee", "99999999-8888-4777-8666-555555555555"
	tests := []struct {
		name        string
		doc         string
		wantErrPath string // "" = success
		wantOrg     string
		wantChanged int
	}{
		{"another id is refused", `{"workspaces": [{"id": "` + exampleWorkspaceID + `", "slug": "team"}],
			"providers": [{"slug": "p", "workspace": "team", "provider": "ollama"}]}`, "workspaces[0].id", "", 0},
		{"the same id", `{"workspaces": [{"id": "` + storedID + `", "slug": "team"}], "configs": [{"id": "c", "workspace": "team", "config": {}}]}`, "", storedOrg, 1},
		{"no id adopts the stored one", `{"workspaces": [{"slug": "team"}], "configs": [{"id": "c", "workspace": "team", "config": {}}]}`, "", storedOrg, 1},
		{"a new organisation", `{"workspaces": [{"slug": "team", "organisation_id": "` + exampleOrgID + `"}]}`, "", exampleOrgID, 1},
		{"a new name", `{"workspaces": [{"slug": "team", "name": "The Team"}]}`, "", storedOrg, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStore(t)
			if _, err := st.Workspaces.Put(&storage.Workspace{ID: storedID, Slug: "team", OrganisationID: storedOrg}); err != nil {
				t.Fatal(err)
			}
			before := dumpStore(t, st)
			res, err := Apply(st, mustParse(t, tt.doc, t.TempDir()))
			if tt.wantErrPath != "" {
				ve := validationError(t, err)
				if _, ok := findProblem(ve.Problems, tt.wantErrPath, storedID); !ok {
					t.Fatalf("no problem at %s naming %s; got:%s", tt.wantErrPath, storedID, dumpProblems(ve.Problems))
				}
				if after := dumpStore(t, st); !reflect.DeepEqual(before, after) {
					t.Fatalf("a refused file changed the store:\nbefore %+v\nafter  %+v", before, after)
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if res.Changed != tt.wantChanged {
				t.Errorf("Apply = %+v, want Changed %d", res, tt.wantChanged)
			}
			list, _ := st.Workspaces.List()
			if len(list) != 1 || list[0].ID != storedID || list[0].OrganisationID != tt.wantOrg {
				t.Fatalf("workspaces = %+v, want one with ID %s, organisation %s", list, storedID, tt.wantOrg)
			}
			if !list[0].CreatedAt.Equal(before.Workspaces[0].CreatedAt) {
				t.Errorf("created_at moved")
			}
		})
	}
}

func TestLoad(t *testing.T) {
	cwdWasm, err := os.ReadFile("testdata/empty.wasm")
	if err != nil {
		t.Fatal(err)
	}
	otherWasm := append(append([]byte(nil), wasmModule...), 0x00, 0x01, 0x00)
	tests := []struct {
		name     string
		files    map[string][]byte // written in the bootstrap file's folder
		doc      string
		wantErr  string // a problem path; "" = success
		wantFile string // the plugin's resolved path, relative to the folder ("cwd:" = the working folder)
		wantWasm []byte
	}{
		{"invalid file", nil, `{"configs": [{"id": "c"}]}`, "configs[0].config", "", nil},
		{"plugin beside the file", map[string][]byte{"mod.wasm": wasmModule}, `{"plugins": [{"id": "m", "wasm": "mod.wasm"}]}`, "", "mod.wasm", wasmModule},
		{"plugin in a subfolder", map[string][]byte{"plugins/mod.wasm": wasmModule}, `{"plugins": [{"id": "m", "wasm": "plugins/mod.wasm"}]}`, "", "plugins/mod.wasm", wasmModule},
		{"plugin in the working folder", nil, `{"plugins": [{"id": "m", "wasm": "testdata/empty.wasm"}]}`, "", "cwd:testdata/empty.wasm", cwdWasm},
		{"the file's folder wins over the working folder", map[string][]byte{"testdata/empty.wasm": otherWasm},
			`{"plugins": [{"id": "m", "wasm": "testdata/empty.wasm"}]}`, "", "testdata/empty.wasm", otherWasm},
		{"plugin nowhere", nil, `{"plugins": [{"id": "m", "wasm": "nowhere.wasm"}]}`, "plugins[0].wasm", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range tt.files {
				writeFile(t, dir, name, data)
			}
			path := writeFile(t, dir, "bootstrap.json", []byte(tt.doc))
			f, err := Load(path)
			if tt.wantErr != "" {
				ve := validationError(t, err)
				if ve.File != path {
					t.Errorf("ValidationError.File = %q, want %q", ve.File, path)
				}
				if !strings.Contains(ve.Error(), path) || !strings.Contains(ve.Error(), tt.wantErr) {
					t.Errorf("Error() = %q, want the file %s and the path %s", ve.Error(), path, tt.wantErr)
				}
				if _, ok := findProblem(ve.Problems, tt.wantErr); !ok {
					t.Errorf("no problem at %s; got:%s", tt.wantErr, dumpProblems(ve.Problems))
				}
				if f != nil {
					t.Error("Load returned a *File beside its error")
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			want := filepath.Join(dir, tt.wantFile)
			if rel, ok := strings.CutPrefix(tt.wantFile, "cwd:"); ok {
				want = rel
			}
			if got := f.Plugins[0].File; got != want {
				t.Errorf("plugin file = %q, want %q", got, want)
			}
			if !bytes.Equal(f.Plugins[0].Wasm, tt.wantWasm) {
				t.Errorf("plugin wasm = %q, want %q", f.Plugins[0].Wasm, tt.wantWasm)
			}
		})
	}

	t.Run("missing file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "absent.json")
		f, err := Load(path)
		var ve *ValidationError
		if err == nil || errors.As(err, &ve) || f != nil {
			t.Fatalf("Load(missing) = %v, %v; want a plain error", f, err)
		}
		if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), path) {
			t.Fatalf("error %q should wrap ErrNotExist and name %s", err, path)
		}
	})
}

// TestApplyDuplicateThroughAnotherReference: two entries that name one workspace two ways (its slug and its
// UUID, or "default" implied and by UUID) name the same record twice. Parse cannot see it; Apply must refuse the
// file, or the later entry would silently overwrite the earlier on every run and Changed would never reach 0.
func TestApplyDuplicateThroughAnotherReference(t *testing.T) {
	const (
		wsDefault = `"workspaces": [{"id": "` + exampleWorkspaceID + `", "slug": "default"}],`
		byID      = `"workspace": "` + exampleWorkspaceID + `"`
		msgs      = `"messages": [{"role": "user", "content": "hi"}]`
	)
	tests := []struct {
		name string
		doc  string
		path string
	}{
		{"config, implied default and UUID", `{` + wsDefault + ` "configs": [{"id": "c", "config": {"retry": {"attempts": 1}}}, {"id": "c", ` + byID + `, "config": {"retry": {"attempts": 2}}}]}`, "configs[1].id"},
		{"provider, slug and UUID", `{` + wsDefault + ` "providers": [{"slug": "p", "workspace": "default", "provider": "ollama"},
			{"slug": "p", ` + byID + `, "provider": "openai", "api_key": "k"}]}`, "providers[1].slug"},
		{"prompt", `{` + wsDefault + ` "prompts": [{"id": "p", ` + byID + `, "versions": [{"template": {` + msgs + `}}]},
			{"id": "p", "versions": [{"template": {` + msgs + `}}]}]}`, "prompts[1].id"},
		{"guardrail", `{` + wsDefault + ` "guardrails": [{"id": "g", "wordCount": {}}, {"id": "g", ` + byID + `, "wordCount": {}}]}`, "guardrails[1].id"},
		{"plugin", `{` + wsDefault + ` "plugins": [{"id": "x", "wasm": "path/to/pii.wasm"}, {"id": "x", ` + byID + `, "wasm": "path/to/pii.wasm"}]}`, "plugins[1].id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStore(t)
			res, err := Apply(st, mustParse(t, tt.doc, exampleDir(t)))
			ve := validationError(t, err)
			if _, ok := findProblem(ve.Problems, tt.path, "duplicate", "[0]"); !ok {
				t.Fatalf("no duplicate problem at %s; got:%s", tt.path, dumpProblems(ve.Problems))
			}
			if ws, _ := st.Workspaces.List(); len(ws) != 0 || res != (Result{}) {
				t.Fatalf("a refused file wrote %d workspaces, result %+v", len(ws), res)
			}
		})
	}

	t.Run("the same id in two workspaces is fine", func(t *testing.T) {
		st := newStore(t)
		doc := `{"workspaces": [{"slug": "a"}, {"id": "` + exampleWorkspaceID + `", "slug": "b"}],
			"configs": [{"id": "c", "workspace": "a", "config": {}}, {"id": "c", ` + byID + `, "config": {}}]}`
		f := mustParse(t, doc, "")
		if res := mustApply(t, st, f); res.Changed != 4 {
			t.Fatalf("Apply = %+v, want Changed 4", res)
		}
		if res := mustApply(t, st, f); res.Changed != 0 {
			t.Fatalf("second Apply = %+v, want Changed 0", res)
		}
	})
}
