package bootstrap

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/llmgw/gateway/storage"
)

func TestParseDesignExample(t *testing.T) {
	dir := exampleDir(t)
	f := mustParse(t, designExample, dir)

	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"section sizes", func(t *testing.T) {
			got := []int{len(f.Workspaces), len(f.APIKeys), len(f.Providers), len(f.Configs), len(f.Prompts),
				len(f.RateLimitPolicies), len(f.Guardrails), len(f.Plugins)}
			if want := []int{1, 1, 1, 1, 1, 1, 1, 1}; !reflect.DeepEqual(got, want) {
				t.Fatalf("entries per section = %v, want %v", got, want)
			}
		}},
		{"workspace", func(t *testing.T) {
			want := Workspace{Path: "workspaces[0]", ID: exampleWorkspaceID, Slug: "default", OrganisationID: exampleOrgID}
			if !reflect.DeepEqual(f.Workspaces[0], want) {
				t.Fatalf("workspace = %+v, want %+v", f.Workspaces[0], want)
			}
		}},
		{"api key", func(t *testing.T) {
			want := APIKey{Path: "api_keys[0]", Key: "gw-secret", Workspace: "default", Admin: true}
			if !reflect.DeepEqual(f.APIKeys[0], want) {
				t.Fatalf("api key = %+v, want %+v", f.APIKeys[0], want)
			}
		}},
		{"provider", func(t *testing.T) {
			p := f.Providers[0]
			if p.Path != "providers[0]" || p.Slug != "mock-openai" || p.Workspace != "default" || p.Provider != "openai" || p.Name != "" {
				t.Fatalf("provider = %+v", p)
			}
			got := map[string]string{}
			for k, v := range p.Fields {
				got[k] = compactJSON(t, v)
			}
			want := map[string]string{"api_key": `"sk-x"`, "custom_host": `"http://127.0.0.1:9911/v1"`}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("provider fields = %v, want %v (slug, workspace, provider and name must not be fields)", got, want)
			}
		}},
		{"config", func(t *testing.T) {
			c := f.Configs[0]
			if c.Path != "configs[0]" || c.ID != "cfg-a" || c.Workspace != "default" || compactJSON(t, c.Config) != "{}" {
				t.Fatalf("config = %+v (config %s)", c, c.Config)
			}
		}},
		{"prompt", func(t *testing.T) {
			p := f.Prompts[0]
			if p.Path != "prompts[0]" || p.ID != "welcome" || p.Workspace != "default" || len(p.Versions) != 1 {
				t.Fatalf("prompt = %+v", p)
			}
			v := p.Versions[0]
			if v.Version != 1 || !v.Published {
				t.Fatalf("version = %+v, want version 1, published", v)
			}
			want := `{"provider": "@mock-openai", "model": "m", "messages": [{"role": "user", "content": "Hi {{name}}"}], "temperature": 0.2}`
			if !sameJSON(t, v.Template, []byte(want)) {
				t.Fatalf("template = %s, want %s (every template key, temperature included, is kept)", v.Template, want)
			}
		}},
		{"rate-limit policy", func(t *testing.T) {
			name := "n"
			want := Policy{Path: "rate_limit_policies[0]", ID: examplePolicyID, Workspace: "default", Type: "requests",
				Unit: "rpm", Value: 60, Status: "active", Name: &name, Conditions: []storage.PolicyMatch{},
				GroupBy: []storage.PolicyGroup{{Key: "api_key"}}}
			if !reflect.DeepEqual(f.RateLimitPolicies[0], want) {
				t.Fatalf("policy = %+v, want %+v", f.RateLimitPolicies[0], want)
			}
		}},
		{"guardrail", func(t *testing.T) {
			g := f.Guardrails[0]
			if g.Path != "guardrails[0]" || g.ID != "no-emails" || g.Workspace != "default" {
				t.Fatalf("guardrail = %+v", g)
			}
			want := `{"deny": true, "default.regexMatch": {"rule": "[a-z]+@[a-z]+\\.com", "not": true}}`
			if !sameJSON(t, g.Object, []byte(want)) {
				t.Fatalf("guardrail object = %s, want %s (without id and workspace)", g.Object, want)
			}
		}},
		{"plugin", func(t *testing.T) {
			p := f.Plugins[0]
			if p.Path != "plugins[0]" || p.ID != "pii" || p.Workspace != "default" {
				t.Fatalf("plugin = %+v", p)
			}
			if want := filepath.Join(dir, "path/to/pii.wasm"); p.File != want {
				t.Fatalf("plugin file = %q, want %q", p.File, want)
			}
			if !bytes.Equal(p.Wasm, wasmModule) {
				t.Fatalf("plugin wasm = %q, want %q", p.Wasm, wasmModule)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

// TestParseNormalises checks what Parse fills in or rewrites: canonical provider identifiers, the default
// workspace, version numbers, a policy's default status.
func TestParseNormalises(t *testing.T) {
	tests := []struct {
		name  string
		doc   string
		check func(t *testing.T, f *File)
	}{
		{"alias llmvendor is openai", `{"providers": [{"slug": "p", "provider": "llmvendor", "api_key": "k"}]}`,
			func(t *testing.T, f *File) {
				if got := f.Providers[0].Provider; got != "openai" {
					t.Fatalf("provider = %q, want openai", got)
				}
			}},
		{"alias cloudx is azure-openai", `{"providers": [{"slug": "p", "provider": "cloudx", "api_key": "k"}]}`,
			func(t *testing.T, f *File) {
				if got := f.Providers[0].Provider; got != "azure-openai" {
					t.Fatalf("provider = %q, want azure-openai", got)
				}
			}},
		{"alias cloudy is vertex-ai", `{"providers": [{"slug": "p", "provider": "cloudy", "cloudy_project_id": "x", "cloudy_region": "r"}]}`,
			func(t *testing.T, f *File) {
				if got := f.Providers[0].Provider; got != "vertex-ai" {
					t.Fatalf("provider = %q, want vertex-ai", got)
				}
			}},
		{"anthropic keeps the fields its adapter declares", `{"providers": [{"slug": "p", "provider": "anthropic", "api_key": "k", "anthropic_version": "2023-06-01", "anthropic_beta": "b"}]}`,
			func(t *testing.T, f *File) {
				if got := string(f.Providers[0].Fields["anthropic_beta"]); got != `"b"` {
					t.Fatalf("anthropic_beta = %s", got)
				}
			}},
		{"ollama needs no api_key", `{"providers": [{"slug": "p", "provider": "ollama"}]}`,
			func(t *testing.T, f *File) {
				if got := f.Providers[0].Provider; got != "ollama" {
					t.Fatalf("provider = %q, want ollama", got)
				}
			}},
		{"alias cloudz is bedrock", `{"providers": [{"slug": "p", "provider": "cloudz", "cloudz_access_key_id": "a", "cloudz_secret_access_key": "s"}]}`,
			func(t *testing.T, f *File) {
				if got := f.Providers[0].Provider; got != "bedrock" {
					t.Fatalf("provider = %q, want bedrock", got)
				}
			}},
		{"entries without workspace belong to default", `{
			"api_keys": [{"key": "gw-secret-1"}],
			"providers": [{"slug": "p", "provider": "openai", "api_key": "k"}],
			"configs": [{"id": "c", "config": {}}],
			"prompts": [{"id": "p", "versions": [{"template": {"messages": [{"role": "user", "content": "x"}]}}]}],
			"rate_limit_policies": [{"id": "` + examplePolicyID + `", "type": "tokens", "unit": "rpd", "value": 1}],
			"guardrails": [{"id": "g", "default.wordCount": {"maxWords": 2}}]}`,
			func(t *testing.T, f *File) {
				got := []string{f.APIKeys[0].Workspace, f.Providers[0].Workspace, f.Configs[0].Workspace,
					f.Prompts[0].Workspace, f.RateLimitPolicies[0].Workspace, f.Guardrails[0].Workspace}
				for i, w := range got {
					if w != storage.DefaultWorkspaceSlug {
						t.Errorf("entry %d: workspace = %q, want %q", i, w, storage.DefaultWorkspaceSlug)
					}
				}
			}},
		{"a named workspace is kept", `{"configs": [{"id": "c", "workspace": "team-a", "config": {}}]}`,
			func(t *testing.T, f *File) {
				if got := f.Configs[0].Workspace; got != "team-a" {
					t.Fatalf("workspace = %q, want team-a", got)
				}
			}},
		{"prompt versions are numbered from 1 in file order", `{"prompts": [{"id": "p", "name": "P", "versions": [
				{"template": {"messages": [{"role": "user", "content": "one"}]}},
				{"published": true, "template": {"messages": [{"role": "user", "content": "two"}]}},
				{"published": false, "template": {"messages": [{"role": "user", "content": "three"}]}}]}]}`,
			func(t *testing.T, f *File) {
				p := f.Prompts[0]
				if p.Name != "P" || len(p.Versions) != 3 {
					t.Fatalf("prompt = %+v", p)
				}
				for i, v := range p.Versions {
					if v.Version != i+1 {
						t.Errorf("versions[%d].Version = %d, want %d", i, v.Version, i+1)
					}
					if v.Published != (i == 1) {
						t.Errorf("versions[%d].Published = %v", i, v.Published)
					}
					if want := []string{"one", "two", "three"}[i]; !strings.Contains(string(v.Template), want) {
						t.Errorf("versions[%d].Template = %s, want the one saying %q", i, v.Template, want)
					}
				}
			}},
		{"policy status defaults to active, name and lists to empty", `{"rate_limit_policies": [
				{"id": "` + examplePolicyID + `", "type": "requests", "unit": "rph", "value": 2.5}]}`,
			func(t *testing.T, f *File) {
				p := f.RateLimitPolicies[0]
				if p.Status != "active" {
					t.Errorf("status = %q, want active", p.Status)
				}
				if p.Name != nil {
					t.Errorf("name = %q, want nil (null in the API)", *p.Name)
				}
				if p.Conditions == nil || len(p.Conditions) != 0 || p.GroupBy == nil || len(p.GroupBy) != 0 {
					t.Errorf("conditions = %#v, group_by = %#v, want empty non-nil lists (they encode as [])", p.Conditions, p.GroupBy)
				}
				if p.Value != 2.5 || p.Unit != "rph" {
					t.Errorf("value, unit = %v, %q", p.Value, p.Unit)
				}
			}},
		{"archived policy stays archived", `{"rate_limit_policies": [
				{"id": "` + examplePolicyID + `", "type": "requests", "unit": "rpm", "value": 1, "status": "archived",
				 "conditions": [{"key": "metadata.team", "value": "a"}, {"key": "model", "value": "m"}]}]}`,
			func(t *testing.T, f *File) {
				p := f.RateLimitPolicies[0]
				want := []storage.PolicyMatch{{Key: "metadata.team", Value: "a"}, {Key: "model", Value: "m"}}
				if p.Status != "archived" || !reflect.DeepEqual(p.Conditions, want) {
					t.Fatalf("policy = %+v", p)
				}
			}},
		{"null sections are empty", `{"workspaces": null, "api_keys": null, "providers": null, "configs": null,
				"prompts": null, "rate_limit_policies": null, "guardrails": null, "plugins": null}`,
			func(t *testing.T, f *File) {
				if !reflect.DeepEqual(*f, File{}) {
					t.Fatalf("file = %+v, want empty", *f)
				}
			}},
		{"provider fields keep their JSON", `{"providers": [{"slug": "v", "provider": "vertex-ai", "cloudy_region": "eu",
				"cloudy_service_account_json": {"type": "service_account"}, "name": "Vertex"}]}`,
			func(t *testing.T, f *File) {
				p := f.Providers[0]
				if p.Name != "Vertex" || len(p.Fields) != 2 || compactJSON(t, p.Fields["cloudy_service_account_json"]) != `{"type":"service_account"}` {
					t.Fatalf("provider = %+v", p)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, mustParse(t, tt.doc, t.TempDir()))
		})
	}
}

// TestParseAccepts lists files near the edge of what is valid.
func TestParseAccepts(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "ok.wasm", wasmModule)
	tests := []struct {
		name string
		doc  string
	}{
		{"empty object", `{}`},
		{"whitespace around the object", "\n\t {} \r\n\n"},
		{"empty sections", `{"workspaces": [], "api_keys": [], "plugins": []}`},
		{"ollama without api_key", `{"providers": [{"slug": "local", "provider": "ollama"}]}`},
		{"vllm without api_key", `{"providers": [{"slug": "local", "provider": "vllm", "custom_host": "http://127.0.0.1:8000/v1"}]}`},
		{"custom_host instead of api_key", `{"providers": [{"slug": "p", "provider": "openai", "custom_host": "https://llm.internal/v1"}]}`},
		{"azure deployment instead of api_key", `{"providers": [{"slug": "p", "provider": "azure-openai", "cloudx_deployment_name": "d",
			"cloudx_deployment_type": "managed", "cloudx_region": "r", "cloudx_api_version": "v"}]}`},
		{"one default deployment", `{"providers": [{"slug": "p", "provider": "azure-openai", "api_key": "k", "deployments": [
			{"deployment_id": "a", "alias": "a", "api_version": "v", "is_default": true},
			{"deployment_id": "b", "alias": "b", "api_version": "v", "is_default": false}]}]}`},
		{"workspace without id and organisation", `{"workspaces": [{"slug": "team-a", "name": "Team A"}]}`},
		{"workspace referenced by UUID", `{"workspaces": [{"id": "` + exampleWorkspaceID + `", "slug": "w"}],
			"configs": [{"id": "c", "workspace": "` + exampleWorkspaceID + `", "config": {"retry": {"attempts": 1}}}]}`},
		{"policy condition on metadata", `{"rate_limit_policies": [{"id": "` + examplePolicyID + `", "type": "tokens", "unit": "rpd",
			"value": 1000, "conditions": [{"key": "metadata.team", "value": "a"}], "group_by": [{"key": "metadata.user"}, {"key": "workspace_id"}]}]}`},
		{"policy name null", `{"rate_limit_policies": [{"id": "` + examplePolicyID + `", "type": "requests", "unit": "rpm", "value": 1, "name": null}]}`},
		{"message content as parts and extra message fields", `{"prompts": [{"id": "p", "versions": [{"template": {"messages": [
			{"role": "user", "content": [{"type": "text", "text": "hi"}], "tool_call_id": "x"}], "max_tokens": 5}}]}]}`},
		{"guardrail with checks list", `{"guardrails": [{"id": "g", "checks": [{"id": "default.wordCount", "parameters": {"maxWords": 3}}]}]}`},
		{"guardrail with checks list and top-level deny", `{"guardrails": [{"id": "g", "deny": true, "checks": [{"id": "wordCount", "parameters": {"maxWords": 3}}]}]}`},
		{"guardrail type", `{"guardrails": [{"id": "g", "type": "guardrail", "notNull": {}}]}`},
		{"guardrail check id without namespace", `{"guardrails": [{"id": "g", "wordCount": {"maxWords": 3}, "async": false,
			"on_fail": {"deny": true, "feedback": {"value": -1, "weight": 1, "metadata": {}}}}]}`},
		{"same slug in two workspaces", `{"workspaces": [{"slug": "a"}, {"slug": "b"}],
			"providers": [{"slug": "p", "workspace": "a", "provider": "openai", "api_key": "k"},
			              {"slug": "p", "workspace": "b", "provider": "openai", "api_key": "k"}]}`},
		{"plugin", `{"plugins": [{"id": "x", "wasm": "ok.wasm"}]}`},
		{"api key of 512 characters", `{"api_keys": [{"key": "` + strings.Repeat("k", 512) + `"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustParse(t, tt.doc, dir)
		})
	}
}

// TestParseRejects: each row holds one problem; the ValidationError must name it at its exact JSON path.
func TestParseRejects(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "ok.wasm", wasmModule)
	writeFile(t, dir, "text.wasm", []byte("(module)\n"))
	const (
		pid   = examplePolicyID
		prov  = `{"slug": "p", "provider": "openai", "api_key": "k"}`
		msgs  = `"messages": [{"role": "user", "content": "hi"}]`
		polOK = `"id": "` + pid + `", "type": "requests", "unit": "rpm", "value": 1`
	)
	tests := []struct {
		name       string
		doc        string
		path       string
		keywords   []string
		notContain string // the message must not hold this (a secret)
	}{
		// The file as a whole.
		{"not JSON", `{"workspaces": [`, "(file)", []string{"not a JSON object"}, ""},
		{"empty file", ``, "(file)", []string{"not a JSON object"}, ""},
		{"null", `null`, "(file)", []string{"null"}, ""},
		{"array", `[{"workspaces": []}]`, "(file)", []string{"not a JSON object"}, ""},
		{"string", `"workspaces"`, "(file)", []string{"not a JSON object"}, ""},
		{"a second object after the first", `{"workspaces": []} {"workspaces": [{"slug": "a/b"}]}`, "(file)", []string{"after the JSON object"}, ""},
		{"a stray closing brace", `{"workspaces": []}}`, "(file)", []string{"after the JSON object"}, ""},
		{"text after the object", `{} garbage`, "(file)", []string{"after the JSON object"}, ""},
		{"unknown section", `{"workspace": []}`, "workspace", []string{"unknown section", "workspaces"}, ""},
		{"section not an array", `{"providers": {"slug": "p"}}`, "providers", []string{"must be an array", "object"}, ""},
		{"section a string", `{"configs": "cfg-a"}`, "configs", []string{"must be an array", "string"}, ""},
		{"item not an object", `{"configs": ["cfg-a"]}`, "configs[0]", []string{"must be an object", "string"}, ""},
		{"second item null", `{"api_keys": [{"key": "gw-secret-1"}, null]}`, "api_keys[1]", []string{"must be an object", "null"}, ""},

		// Unknown fields, in every section and nested object.
		{"unknown field in workspaces", `{"workspaces": [{"slug": "w", "colour": "red"}]}`, "workspaces[0].colour", []string{"unknown field"}, ""},
		{"unknown field in api_keys", `{"api_keys": [{"key": "gw-secret-1", "colour": "red"}]}`, "api_keys[0].colour", []string{"unknown field"}, ""},
		{"unknown field in providers", `{"providers": [{"slug": "p", "provider": "openai", "api_key": "k", "colour": "red"}]}`, "providers[0].colour", []string{"unknown field"}, ""},
		{"unknown field in configs", `{"configs": [{"id": "c", "config": {}, "colour": "red"}]}`, "configs[0].colour", []string{"unknown field"}, ""},
		{"unknown field in prompts", `{"prompts": [{"id": "p", "colour": "red", "versions": [{"template": {` + msgs + `}}]}]}`, "prompts[0].colour", []string{"unknown field"}, ""},
		{"unknown field in a prompt version", `{"prompts": [{"id": "p", "versions": [{"colour": "red", "template": {` + msgs + `}}]}]}`, "prompts[0].versions[0].colour", []string{"unknown field"}, ""},
		{"unknown field in rate_limit_policies", `{"rate_limit_policies": [{` + polOK + `, "colour": "red"}]}`, "rate_limit_policies[0].colour", []string{"unknown field"}, ""},
		{"unknown field in a policy condition", `{"rate_limit_policies": [{` + polOK + `, "conditions": [{"key": "model", "value": "m", "op": "eq"}]}]}`, "rate_limit_policies[0].conditions[0].op", []string{"unknown field"}, ""},
		{"unknown field in a policy group_by", `{"rate_limit_policies": [{` + polOK + `, "group_by": [{"key": "model", "colour": "red"}]}]}`, "rate_limit_policies[0].group_by[0].colour", []string{"unknown field"}, ""},
		{"unknown field in guardrails", `{"guardrails": [{"id": "g", "default.wordCount": {}, "a.b.c": {}}]}`, "guardrails[0].a.b.c", []string{"unknown field"}, ""},
		{"unknown field in a guardrail on_fail", `{"guardrails": [{"id": "g", "default.wordCount": {}, "on_fail": {"colour": "red"}}]}`, "guardrails[0].on_fail.colour", []string{"unknown field"}, ""},
		{"unknown field in a guardrail check", `{"guardrails": [{"id": "g", "checks": [{"id": "default.wordCount", "parameters": {}, "colour": "red"}]}]}`, "guardrails[0].checks[0].colour", []string{"unknown field"}, ""},
		{"unknown field in plugins", `{"plugins": [{"id": "x", "wasm": "ok.wasm", "colour": "red"}]}`, "plugins[0].colour", []string{"unknown field"}, ""},
		{"unknown field in a deployment", `{"providers": [{"slug": "p", "provider": "azure-openai", "api_key": "k", "deployments": [{"deployment_id": "a", "alias": "a", "api_version": "v", "colour": "red"}]}]}`, "providers[0].deployments[0].colour", []string{"unknown field"}, ""},

		// Missing required fields.
		{"workspace slug missing", `{"workspaces": [{"id": "` + exampleWorkspaceID + `"}]}`, "workspaces[0].slug", []string{"is required"}, ""},
		{"workspace slug empty", `{"workspaces": [{"slug": ""}]}`, "workspaces[0].slug", []string{"must not be empty"}, ""},
		{"api key missing", `{"api_keys": [{"admin": true}]}`, "api_keys[0].key", []string{"is required"}, ""},
		{"provider slug missing", `{"providers": [{"provider": "openai", "api_key": "k"}]}`, "providers[0].slug", []string{"is required"}, ""},
		{"provider identifier missing", `{"providers": [{"slug": "p", "api_key": "k"}]}`, "providers[0].provider", []string{"is required"}, ""},
		{"config id missing", `{"configs": [{"config": {}}]}`, "configs[0].id", []string{"is required"}, ""},
		{"config body missing", `{"configs": [{"id": "c"}]}`, "configs[0].config", []string{"is required"}, ""},
		{"config body null", `{"configs": [{"id": "c", "config": null}]}`, "configs[0].config", []string{"is required"}, ""},
		{"prompt versions missing", `{"prompts": [{"id": "p"}]}`, "prompts[0].versions", []string{"is required"}, ""},
		{"prompt versions empty", `{"prompts": [{"id": "p", "versions": []}]}`, "prompts[0].versions", []string{"at least one version"}, ""},
		{"prompt template missing", `{"prompts": [{"id": "p", "versions": [{"published": true}]}]}`, "prompts[0].versions[0].template", []string{"is required"}, ""},
		{"prompt messages missing", `{"prompts": [{"id": "p", "versions": [{"template": {"model": "m"}}]}]}`, "prompts[0].versions[0].template.messages", []string{"is required"}, ""},
		{"prompt messages empty", `{"prompts": [{"id": "p", "versions": [{"template": {"messages": []}}]}]}`, "prompts[0].versions[0].template.messages", []string{"at least one message"}, ""},
		{"message role missing", `{"prompts": [{"id": "p", "versions": [{"template": {"messages": [{"content": "hi"}]}}]}]}`, "prompts[0].versions[0].template.messages[0].role", []string{"is required"}, ""},
		{"message content missing", `{"prompts": [{"id": "p", "versions": [{"template": {"messages": [{"role": "user"}]}}]}]}`, "prompts[0].versions[0].template.messages[0].content", []string{"is required"}, ""},
		{"policy id missing", `{"rate_limit_policies": [{"type": "requests", "unit": "rpm", "value": 1}]}`, "rate_limit_policies[0].id", []string{"is required"}, ""},
		{"policy type missing", `{"rate_limit_policies": [{"id": "` + pid + `", "unit": "rpm", "value": 1}]}`, "rate_limit_policies[0].type", []string{"is required"}, ""},
		{"policy unit missing", `{"rate_limit_policies": [{"id": "` + pid + `", "type": "requests", "value": 1}]}`, "rate_limit_policies[0].unit", []string{"is required"}, ""},
		{"policy value missing", `{"rate_limit_policies": [{"id": "` + pid + `", "type": "requests", "unit": "rpm"}]}`, "rate_limit_policies[0].value", []string{"is required"}, ""},
		{"policy condition value missing", `{"rate_limit_policies": [{` + polOK + `, "conditions": [{"key": "model"}]}]}`, "rate_limit_policies[0].conditions[0].value", []string{"is required"}, ""},
		{"policy group_by key missing", `{"rate_limit_policies": [{` + polOK + `, "group_by": [{}]}]}`, "rate_limit_policies[0].group_by[0].key", []string{"is required"}, ""},
		{"guardrail id missing", `{"guardrails": [{"default.wordCount": {}}]}`, "guardrails[0].id", []string{"is required"}, ""},
		{"guardrail check parameters missing", `{"guardrails": [{"id": "g", "checks": [{"id": "default.wordCount"}]}]}`, "guardrails[0].checks[0].parameters", []string{"is required"}, ""},
		{"guardrail check id missing", `{"guardrails": [{"id": "g", "checks": [{"parameters": {}}]}]}`, "guardrails[0].checks[0].id", []string{"is required"}, ""},
		{"plugin id missing", `{"plugins": [{"wasm": "ok.wasm"}]}`, "plugins[0].id", []string{"is required"}, ""},
		{"plugin wasm missing", `{"plugins": [{"id": "x"}]}`, "plugins[0].wasm", []string{"is required"}, ""},
		{"deployment alias missing", `{"providers": [{"slug": "p", "provider": "azure-openai", "api_key": "k", "deployments": [{"deployment_id": "a", "api_version": "v"}]}]}`, "providers[0].deployments[0].alias", []string{"is required"}, ""},

		// Wrong JSON types.
		{"workspace slug a number", `{"workspaces": [{"slug": 7}]}`, "workspaces[0].slug", []string{"must be a string", "number"}, ""},
		{"api key admin a string", `{"api_keys": [{"key": "gw-secret-1", "admin": "yes"}]}`, "api_keys[0].admin", []string{"must be a boolean", "string"}, ""},
		{"api key a number", `{"api_keys": [{"key": 12345678}]}`, "api_keys[0].key", []string{"must be a string", "number"}, ""},
		{"provider api_key a number", `{"providers": [{"slug": "p", "provider": "openai", "api_key": 5}]}`, "providers[0].api_key", []string{"must be a string", "number"}, ""},
		{"service account json a string", `{"providers": [{"slug": "p", "provider": "vertex-ai", "cloudy_region": "r", "cloudy_project_id": "x", "cloudy_service_account_json": "{}"}]}`, "providers[0].cloudy_service_account_json", []string{"must be an object", "string"}, ""},
		{"deployments an object", `{"providers": [{"slug": "p", "provider": "azure-openai", "api_key": "k", "deployments": {}}]}`, "providers[0].deployments", []string{"must be an array", "object"}, ""},
		{"config body an array", `{"configs": [{"id": "c", "config": []}]}`, "configs[0].config", []string{"must be an object", "array"}, ""},
		{"prompt versions an object", `{"prompts": [{"id": "p", "versions": {}}]}`, "prompts[0].versions", []string{"must be an array", "object"}, ""},
		{"prompt template a string", `{"prompts": [{"id": "p", "versions": [{"template": "Hi"}]}]}`, "prompts[0].versions[0].template", []string{"must be an object", "string"}, ""},
		{"prompt published a string", `{"prompts": [{"id": "p", "versions": [{"published": "yes", "template": {` + msgs + `}}]}]}`, "prompts[0].versions[0].published", []string{"must be a boolean"}, ""},
		{"message content a number", `{"prompts": [{"id": "p", "versions": [{"template": {"messages": [{"role": "user", "content": 5}]}}]}]}`, "prompts[0].versions[0].template.messages[0].content", []string{"string or an array", "number"}, ""},
		{"template model a number", `{"prompts": [{"id": "p", "versions": [{"template": {"model": 4, ` + msgs + `}}]}]}`, "prompts[0].versions[0].template.model", []string{"must be a string"}, ""},
		{"policy value a string", `{"rate_limit_policies": [{"id": "` + pid + `", "type": "requests", "unit": "rpm", "value": "60"}]}`, "rate_limit_policies[0].value", []string{"must be a number", "string"}, ""},
		{"policy conditions an object", `{"rate_limit_policies": [{` + polOK + `, "conditions": {}}]}`, "rate_limit_policies[0].conditions", []string{"must be an array"}, ""},
		{"guardrail deny a string", `{"guardrails": [{"id": "g", "default.wordCount": {}, "deny": "true"}]}`, "guardrails[0].deny", []string{"must be a boolean"}, ""},
		{"plugin wasm a number", `{"plugins": [{"id": "x", "wasm": 1}]}`, "plugins[0].wasm", []string{"must be a string"}, ""},

		// Bad values.
		{"workspace slug with a slash", `{"workspaces": [{"slug": "a/b"}]}`, "workspaces[0].slug", []string{`"a/b"`, "not a valid identifier"}, ""},
		{"workspace id not a UUID", `{"workspaces": [{"id": "uuid", "slug": "w"}]}`, "workspaces[0].id", []string{"not a UUID"}, ""},
		{"workspace id a braced UUID", `{"workspaces": [{"id": "{` + exampleWorkspaceID + `}", "slug": "w"}]}`, "workspaces[0].id", []string{"not a UUID"}, ""},
		{"organisation id not a UUID", `{"workspaces": [{"slug": "w", "organisation_id": "org-1"}]}`, "workspaces[0].organisation_id", []string{"not a UUID"}, ""},
		{"workspace reference with a slash", `{"configs": [{"id": "c", "workspace": "a/b", "config": {}}]}`, "configs[0].workspace", []string{"not a workspace ID or slug"}, ""},
		{"api key too short", `{"api_keys": [{"key": "short"}]}`, "api_keys[0].key", []string{"8 to 512"}, "short"},
		{"api key too long", `{"api_keys": [{"key": "` + strings.Repeat("k", 513) + `"}]}`, "api_keys[0].key", []string{"8 to 512"}, ""},
		{"api key with a space", `{"api_keys": [{"key": "gw secret key"}]}`, "api_keys[0].key", []string{"without spaces"}, "gw secret key"},
		{"api key with a non-ASCII letter", `{"api_keys": [{"key": "gw-sécret-key"}]}`, "api_keys[0].key", []string{"printable ASCII"}, ""},
		{"unknown provider", `{"providers": [{"slug": "p", "provider": "acme", "api_key": "k"}]}`, "providers[0].provider", []string{`unknown provider "acme"`, "openai", "ollama", "llmvendor"}, ""},
		{"provider slug with a slash", `{"providers": [{"slug": "a/b", "provider": "openai", "api_key": "k"}]}`, "providers[0].slug", []string{"not a valid identifier"}, ""},
		{"custom_host ftp", `{"providers": [{"slug": "p", "provider": "openai", "api_key": "k", "custom_host": "ftp://x"}]}`, "providers[0].custom_host", []string{`"ftp://x"`, "http or https"}, ""},
		{"custom_host not a URL", `{"providers": [{"slug": "p", "provider": "openai", "api_key": "k", "custom_host": "not a url"}]}`, "providers[0].custom_host", []string{"http or https"}, ""},
		{"custom_host without host", `{"providers": [{"slug": "p", "provider": "openai", "api_key": "k", "custom_host": "http:///v1"}]}`, "providers[0].custom_host", []string{"http or https"}, ""},
		{"cloudx_deployment_type other", `{"providers": [{"slug": "p", "provider": "azure-openai", "api_key": "k", "cloudx_deployment_type": "other"}]}`, "providers[0].cloudx_deployment_type", []string{"serverless", "managed", `"other"`}, ""},
		{"two default deployments", `{"providers": [{"slug": "p", "provider": "azure-openai", "api_key": "k", "deployments": [
			{"deployment_id": "a", "alias": "a", "api_version": "v", "is_default": true},
			{"deployment_id": "b", "alias": "b", "api_version": "v", "is_default": true}]}]}`, "providers[0].deployments[1].is_default", []string{"only one", "default"}, ""},
		{"provider field empty", `{"providers": [{"slug": "p", "provider": "azure-openai", "api_key": "k", "resource_name": ""}]}`, "providers[0].resource_name", []string{"must not be empty"}, ""},
		{"another provider's credentials do not stand in for api_key", `{"providers": [{"slug": "p", "provider": "openai", "cloudz_access_key_id": "a"}]}`, "providers[0].api_key", []string{"is required"}, ""},
		{"provider without api_key or custom_host", `{"providers": [{"slug": "p", "provider": "openai"}]}`, "providers[0].api_key", []string{"is required", `"openai"`, "custom_host"}, ""},
		{"alias without api_key names the canonical provider", `{"providers": [{"slug": "p", "provider": "llmvendor", "llmvendor_organization": "o"}]}`, "providers[0].api_key", []string{"is required", `"openai"`}, ""},
		{"two published versions", `{"prompts": [{"id": "p", "versions": [{"published": true, "template": {` + msgs + `}}, {"published": true, "template": {` + msgs + `}}]}]}`, "prompts[0].versions", []string{"at most one", "published"}, ""},
		{"policy type bytes", `{"rate_limit_policies": [{"id": "` + pid + `", "type": "bytes", "unit": "rpm", "value": 1}]}`, "rate_limit_policies[0].type", []string{"requests", "tokens", `"bytes"`}, ""},
		{"policy unit rps", `{"rate_limit_policies": [{"id": "` + pid + `", "type": "requests", "unit": "rps", "value": 1}]}`, "rate_limit_policies[0].unit", []string{"rpm", "rph", "rpd", `"rps"`}, ""},
		{"policy value 0", `{"rate_limit_policies": [{"id": "` + pid + `", "type": "requests", "unit": "rpm", "value": 0}]}`, "rate_limit_policies[0].value", []string{"greater than 0"}, ""},
		{"policy value negative", `{"rate_limit_policies": [{"id": "` + pid + `", "type": "requests", "unit": "rpm", "value": -5}]}`, "rate_limit_policies[0].value", []string{"greater than 0"}, ""},
		{"policy status deleted", `{"rate_limit_policies": [{` + polOK + `, "status": "deleted"}]}`, "rate_limit_policies[0].status", []string{"active", "archived", `"deleted"`}, ""},
		{"policy id not a UUID", `{"rate_limit_policies": [{"id": "policy-1", "type": "requests", "unit": "rpm", "value": 1}]}`, "rate_limit_policies[0].id", []string{`"policy-1"`, "not a UUID"}, ""},
		{"policy condition key colour", `{"rate_limit_policies": [{` + polOK + `, "conditions": [{"key": "colour", "value": "red"}]}]}`, "rate_limit_policies[0].conditions[0].key", []string{`unknown key "colour"`, "metadata.<name>"}, ""},
		{"policy condition key metadata. without a name", `{"rate_limit_policies": [{` + polOK + `, "conditions": [{"key": "metadata.", "value": "x"}]}]}`, "rate_limit_policies[0].conditions[0].key", []string{"unknown key"}, ""},
		{"policy group_by key colour", `{"rate_limit_policies": [{` + polOK + `, "group_by": [{"key": "colour"}]}]}`, "rate_limit_policies[0].group_by[0].key", []string{`unknown key "colour"`}, ""},
		{"guardrail without checks", `{"guardrails": [{"id": "g", "deny": true}]}`, "guardrails[0]", []string{`"g"`, "no checks"}, ""},
		{"guardrail with an empty checks list", `{"guardrails": [{"id": "g", "checks": []}]}`, "guardrails[0]", []string{"no checks"}, ""},
		{"guardrail check parameters a string", `{"guardrails": [{"id": "g", "default.regexMatch": "[a-z]+"}]}`, "guardrails[0].default.regexMatch", []string{"must be an object", "string"}, ""},
		{"guardrail checks item parameters an array", `{"guardrails": [{"id": "g", "checks": [{"id": "default.wordCount", "parameters": []}]}]}`, "guardrails[0].checks[0].parameters", []string{"must be an object", "array"}, ""},
		{"guardrail check id with a space", `{"guardrails": [{"id": "g", "checks": [{"id": "word count", "parameters": {}}]}]}`, "guardrails[0].checks[0].id", []string{"not a check id"}, ""},
		{"plugin file missing", `{"plugins": [{"id": "x", "wasm": "missing.wasm"}]}`, "plugins[0].wasm", []string{`"missing.wasm"`, "not found"}, ""},
		{"plugin file not wasm", `{"plugins": [{"id": "x", "wasm": "text.wasm"}]}`, "plugins[0].wasm", []string{"not a WebAssembly module"}, ""},
		{"plugin file a folder", `{"plugins": [{"id": "x", "wasm": "."}]}`, "plugins[0].wasm", nil, ""},
		{"plugin id with a slash", `{"plugins": [{"id": "a/b", "wasm": "ok.wasm"}]}`, "plugins[0].id", []string{"not a valid identifier"}, ""},

		// The same thing twice in one section.
		{"duplicate workspace slug", `{"workspaces": [{"slug": "w"}, {"slug": "w"}]}`, "workspaces[1].slug", []string{"duplicate", "workspaces[0]"}, ""},
		{"duplicate workspace id", `{"workspaces": [{"id": "` + exampleWorkspaceID + `", "slug": "a"}, {"id": "` + exampleWorkspaceID + `", "slug": "b"}]}`, "workspaces[1].id", []string{"duplicate", "workspaces[0]"}, ""},
		{"duplicate api key", `{"api_keys": [{"key": "gw-very-secret"}, {"key": "gw-very-secret", "admin": true}]}`, "api_keys[1].key", []string{"duplicate", "api_keys[0]"}, "gw-very-secret"},
		{"duplicate provider slug", `{"providers": [` + prov + `, ` + prov + `]}`, "providers[1].slug", []string{"duplicate", "providers[0]"}, ""},
		{"duplicate provider slug, default named and implied", `{"providers": [{"slug": "p", "workspace": "default", "provider": "openai", "api_key": "k"}, ` + prov + `]}`, "providers[1].slug", []string{"duplicate"}, ""},
		{"duplicate config id", `{"configs": [{"id": "c", "config": {}}, {"id": "c", "config": {"retry": {"attempts": 1}}}]}`, "configs[1].id", []string{"duplicate", "configs[0]"}, ""},
		{"duplicate prompt id", `{"prompts": [{"id": "p", "versions": [{"template": {` + msgs + `}}]}, {"id": "p", "versions": [{"template": {` + msgs + `}}]}]}`, "prompts[1].id", []string{"duplicate", "prompts[0]"}, ""},
		{"duplicate policy id", `{"rate_limit_policies": [{` + polOK + `}, {` + polOK + `, "workspace": "other"}]}`, "rate_limit_policies[1].id", []string{"duplicate", "rate_limit_policies[0]"}, ""},
		{"duplicate guardrail id", `{"guardrails": [{"id": "g", "wordCount": {}}, {"id": "g", "wordCount": {}}]}`, "guardrails[1].id", []string{"duplicate", "guardrails[0]"}, ""},
		{"duplicate plugin id", `{"plugins": [{"id": "x", "wasm": "ok.wasm"}, {"id": "x", "wasm": "ok.wasm"}]}`, "plugins[1].id", []string{"duplicate", "plugins[0]"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse([]byte(tt.doc), dir)
			ve := validationError(t, err)
			if f != nil {
				t.Errorf("Parse returned a *File beside its error")
			}
			p, ok := findProblem(ve.Problems, tt.path, tt.keywords...)
			if !ok {
				t.Fatalf("no problem at %s with %q; got:%s", tt.path, tt.keywords, dumpProblems(ve.Problems))
			}
			if tt.notContain != "" && strings.Contains(p.Message, tt.notContain) {
				t.Errorf("message %q shows the secret %q", p.Message, tt.notContain)
			}
			if tt.notContain != "" && strings.Contains(ve.Error(), tt.notContain) {
				t.Errorf("error %q shows the secret %q", ve.Error(), tt.notContain)
			}
			if !strings.Contains(ve.Error(), p.String()) {
				t.Errorf("Error() = %q does not show %q", ve.Error(), p.String())
			}
		})
	}
}

// TestParseReportsEveryProblem: one file with problems in several sections lists them all, and the error text
// shows each path.
func TestParseReportsEveryProblem(t *testing.T) {
	doc := `{
	  "colours": [],
	  "workspaces": [{"slug": "a/b"}, {"id": "nope", "slug": "ok"}],
	  "api_keys": [{"key": "short", "admin": "yes"}],
	  "providers": [{"slug": "p", "provider": "acme", "api_key": "k"}, {"slug": "q", "provider": "openai", "custom_host": "ftp://x"}],
	  "configs": [{"id": "c"}],
	  "prompts": [{"id": "p", "versions": [{"template": {"messages": [{"role": "user", "content": 5}]}}]}],
	  "rate_limit_policies": [{"id": "x", "type": "bytes", "unit": "rpm", "value": 0, "status": "deleted"}],
	  "guardrails": [{"id": "g"}],
	  "plugins": [{"id": "pl", "wasm": "missing.wasm"}]
	}`
	want := []struct {
		path    string
		keyword string
	}{
		{"colours", "unknown section"},
		{"workspaces[0].slug", "not a valid identifier"},
		{"workspaces[1].id", "not a UUID"},
		{"api_keys[0].key", "8 to 512"},
		{"api_keys[0].admin", "must be a boolean"},
		{"providers[0].provider", "unknown provider"},
		{"providers[1].custom_host", "http or https"},
		{"configs[0].config", "is required"},
		{"prompts[0].versions[0].template.messages[0].content", "string or an array"},
		{"rate_limit_policies[0].id", "not a UUID"},
		{"rate_limit_policies[0].type", "must be one of"},
		{"rate_limit_policies[0].value", "greater than 0"},
		{"rate_limit_policies[0].status", "must be one of"},
		{"guardrails[0]", "no checks"},
		{"plugins[0].wasm", "not found"},
	}
	f, err := Parse([]byte(doc), t.TempDir())
	ve := validationError(t, err)
	if f != nil {
		t.Error("Parse returned a *File beside its error")
	}
	msg := ve.Error()
	for _, w := range want {
		t.Run(w.path, func(t *testing.T) {
			if _, ok := findProblem(ve.Problems, w.path, w.keyword); !ok {
				t.Errorf("no problem at %s with %q; got:%s", w.path, w.keyword, dumpProblems(ve.Problems))
			}
			if !strings.Contains(msg, w.path+": ") {
				t.Errorf("Error() does not name %s:\n%s", w.path, msg)
			}
		})
	}
	if len(ve.Problems) != len(want) {
		t.Errorf("%d problems, want exactly %d:%s", len(ve.Problems), len(want), dumpProblems(ve.Problems))
	}
	if !strings.Contains(msg, "(15 problems)") {
		t.Errorf("Error() does not count the problems: %q", strings.SplitN(msg, "\n", 2)[0])
	}
}

// TestValidationErrorText pins the error text's shape: the file, the count, one problem a line.
func TestValidationErrorText(t *testing.T) {
	tests := []struct {
		name string
		err  *ValidationError
		want string
	}{
		{"one problem", &ValidationError{File: "boot.json", Problems: []Problem{{Path: "configs[0].id", Message: "is required"}}},
			"bootstrap file boot.json is invalid (1 problem):\n  configs[0].id: is required"},
		{"two problems", &ValidationError{File: "b.json", Problems: []Problem{{Path: "a", Message: "x"}, {Path: "b[1].c", Message: "y"}}},
			"bootstrap file b.json is invalid (2 problems):\n  a: x\n  b[1].c: y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Fatalf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestParseRawValuesAreValidJSON: the raw JSON values a parsed file carries are valid JSON on their own.
func TestParseRawValuesAreValidJSON(t *testing.T) {
	f := mustParse(t, designExample, exampleDir(t))
	tests := []struct {
		name string
		raw  []byte
	}{
		{"config", f.Configs[0].Config},
		{"template", f.Prompts[0].Versions[0].Template},
		{"guardrail", f.Guardrails[0].Object},
		{"provider api_key", f.Providers[0].Fields["api_key"]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !json.Valid(tt.raw) {
				t.Fatalf("%s is not valid JSON: %q", tt.name, tt.raw)
			}
		})
	}
}

func TestParseValidatesSavedConfigs(t *testing.T) {
	tests := []struct {
		name, config, path, mention string
	}{
		{"unknown key", `{"retry": {"attempts": 1}, "colour": 1}`, "configs[0].config.colour", "unknown"},
		{"nested path", `{"strategy": {"mode": "fallback"}, "targets": [{"virtual_key": "a"}, {"virtual_key": "b", "retry": {"attempts": "x"}}]}`,
			"configs[0].config.targets[1].retry.attempts", "integer"},
		{"no key set", `{"name": "x"}`, "configs[0].config", "key sets"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(`{"configs": [{"id": "c", "config": `+tc.config+`}]}`), "")
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v", err)
			}
			if len(ve.Problems) != 1 || ve.Problems[0].Path != tc.path || !strings.Contains(ve.Problems[0].Message, tc.mention) {
				t.Fatalf("problems %v, want one at %s mentioning %q", ve.Problems, tc.path, tc.mention)
			}
		})
	}
	if _, err := Parse([]byte(`{"configs": [{"id": "c", "config": {}}]}`), ""); err != nil {
		t.Fatalf("an empty config (DESIGN.md's example) is refused: %v", err)
	}
}

func TestParseCompilesSavedGuardrails(t *testing.T) {
	tests := []struct {
		name, guardrail, path string
		ok                    bool
	}{
		{"built-in", `{"id": "g", "default.wordCount": {"maxWords": 3}}`, "", true},
		{"plugin check", `{"id": "g", "pii.detect": {"action": "redact"}}`, "", true},
		{"unknown built-in", `{"id": "g", "default.wordCountt": {}}`, "guardrails[0].default.wordCountt", false},
		{"bad parameter", `{"id": "g", "default.regexMatch": {"rule": "("}}`, "guardrails[0].default.regexMatch", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(`{"guardrails": [`+tc.guardrail+`]}`), "")
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) != 1 || !strings.HasPrefix(ve.Problems[0].Path, tc.path) {
				t.Fatalf("err = %v, want one problem at %s", err, tc.path)
			}
		})
	}
}
