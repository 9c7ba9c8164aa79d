package examples

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/llmgw/gateway/runtime/bootstrap"
	"github.com/llmgw/gateway/storage"
)

// storeState reads back everything a bootstrap file can write to workspace ws.
type storeState struct {
	Workspaces []*storage.Workspace
	APIKeys    []*storage.APIKey
	Providers  []*storage.Provider
	Configs    []*storage.Config
	Prompts    []*storage.Prompt
	Policies   []*storage.RateLimitPolicy
	Guardrails []*storage.Guardrail
	Plugins    []*storage.Plugin
}

func readState(t *testing.T, st *storage.Store, ws string) storeState {
	t.Helper()
	var s storeState
	var errs [8]error
	s.Workspaces, errs[0] = st.Workspaces.List()
	s.APIKeys, errs[1] = st.APIKeys.List(ws)
	s.Providers, errs[2] = st.Providers.List(ws)
	s.Configs, errs[3] = st.Configs.List(ws)
	s.Prompts, errs[4] = st.Prompts.List(ws)
	s.Policies, errs[5] = st.Policies.List(ws)
	s.Guardrails, errs[6] = st.Guardrails.List(ws)
	s.Plugins, errs[7] = st.Plugins.List(ws)
	for _, err := range errs {
		if err != nil {
			t.Fatalf("read store: %v", err)
		}
	}
	return s
}

// TestBootstrapExample loads bootstrap.json as the gateway's --bootstrap does, applies it to an empty store,
// checks what it made, and applies it again to check that it is idempotent.
func TestBootstrapExample(t *testing.T) {
	const workspaceID = "5d0b8a52-3f7e-4c1a-9b6d-2e8f4a7c1d90"
	f, err := bootstrap.Load("bootstrap.json")
	if err != nil {
		t.Fatalf("Load(bootstrap.json): %v", err)
	}
	st, err := storage.Open("example", storage.Options{MasterKey: bytes.Repeat([]byte{1}, storage.MasterKeySize), InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	res, err := bootstrap.Apply(st, f)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	const entries = 9 // 1 workspace, 1 key, 2 providers, 2 configs, 1 prompt, 1 policy, 1 guardrail
	if res.Changed != entries || res.Unchanged != 0 {
		t.Fatalf("first Apply = %+v, want Changed %d", res, entries)
	}

	tests := []struct {
		name  string
		check func(t *testing.T) bool
	}{
		{"admin key", func(t *testing.T) bool {
			k, err := st.APIKeys.Lookup("gw-example-admin-key")
			return err == nil && k.Admin && k.WorkspaceID == workspaceID
		}},
		{"openai provider", func(t *testing.T) bool {
			p, err := st.Providers.Get(workspaceID, "openai-main")
			return err == nil && p.Provider == "openai" && string(p.Fields["api_key"]) == `"sk-replace-me"`
		}},
		{"ollama provider without key", func(t *testing.T) bool {
			p, err := st.Providers.Get(workspaceID, "local-ollama")
			if err != nil {
				return false
			}
			_, hasKey := p.Fields["api_key"]
			return p.Provider == "ollama" && !hasKey &&
				string(p.Fields["custom_host"]) == `"http://127.0.0.1:11434/v1"`
		}},
		{"fallback config", func(t *testing.T) bool {
			c, err := st.Configs.Get(workspaceID, "fallback-config")
			return err == nil && bytes.Contains(c.Config, []byte(`"@openai-main"`)) && bytes.Contains(c.Config, []byte(`"@local-ollama"`))
		}},
		{"published prompt", func(t *testing.T) bool {
			p, err := st.Prompts.Get(workspaceID, "welcome")
			return err == nil && len(p.Versions) == 1 && p.Versions[0].Version == 1 && p.Versions[0].Published
		}},
		{"rate-limit policy", func(t *testing.T) bool {
			p, err := st.Policies.Get(workspaceID, "8e2f6c1a-4b7d-4a9e-b3c5-1d0f7a6e2b48")
			return err == nil && p.Status == "active" && p.OrganisationID == "c4a7e1f2-8b3d-4e6a-a1c5-7f9d2b0e4a63"
		}},
		{"guardrail", func(t *testing.T) bool {
			g, err := st.Guardrails.Get(workspaceID, "no-emails")
			return err == nil && bytes.Contains(g.Guardrail, []byte(`"default.regexMatch"`))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.check(t) {
				t.Fatalf("%s is not stored as bootstrap.json says", tt.name)
			}
		})
	}

	before := readState(t, st, workspaceID)
	res, err = bootstrap.Apply(st, f)
	if err != nil {
		t.Fatalf("second Apply: %v", err)
	}
	if res.Changed != 0 || res.Unchanged != entries {
		t.Fatalf("second Apply = %+v, want Changed 0, Unchanged %d", res, entries)
	}
	if after := readState(t, st, workspaceID); !reflect.DeepEqual(before, after) {
		t.Fatalf("second Apply changed the store:\nbefore %+v\nafter  %+v", before, after)
	}
}
