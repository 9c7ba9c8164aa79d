package catalog

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
)

func TestEmbeddedFile(t *testing.T) {
	c, err := parse(modelsJSON)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Source map[string]string `json:"_source"`
		Models []fileModel       `json:"models"`
	}
	if err := json.Unmarshal(modelsJSON, &f); err != nil {
		t.Fatal(err)
	}
	if f.Source["_read"] == "" {
		t.Error("_source must say when the pages were read")
	}
	for i, m := range f.Models {
		if m.Provider == "" || m.ID == "" || m.ContextWindow <= 0 {
			t.Errorf("models[%d] %+v: provider, id and a positive context window are required", i, m)
		}
		if f.Source[m.Provider] == "" {
			t.Errorf("models[%d]: provider %q has no _source entry", i, m.Provider)
		}
		if len(m.Capabilities) == 0 {
			t.Errorf("models[%d] %s: no capabilities", i, m.ID)
		}
	}
	for _, p := range []string{"openai", "azure-openai", "anthropic", "bedrock", "google", "vertex-ai", "groq", "mistral-ai", "together-ai", "deepseek"} {
		if len(c.Models(p)) == 0 {
			t.Errorf("no models for provider %q", p)
		}
		if f.Source[p] == "" {
			t.Errorf("provider %q has no _source entry", p)
		}
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		name, provider, model string
		wantID                string // "" when not found
		wantWindow            int
	}{
		{"openai exact", "openai", "gpt-4o", "gpt-4o", 128000},
		{"openai dated snapshot", "openai", "gpt-4o-2024-08-06", "gpt-4o", 128000},
		{"openai mini dated", "openai", "gpt-4o-mini-2024-07-18", "gpt-4o-mini", 128000},
		{"openai short date", "openai", "gpt-3.5-turbo-0125", "gpt-3.5-turbo", 16385},
		{"openai reasoning dated", "openai", "o3-2025-04-16", "o3", 200000},
		{"azure serves openai models", "azure-openai", "gpt-4.1", "gpt-4.1", 1047576},
		{"anthropic exact", "anthropic", "claude-3-5-haiku-20241022", "claude-3-5-haiku-20241022", 200000},
		{"anthropic alias", "anthropic", "claude-sonnet-4-5", "claude-sonnet-4-5-20250929", 200000},
		{"anthropic latest", "anthropic", "claude-3-5-sonnet-latest", "claude-3-5-sonnet-20241022", 200000},
		{"anthropic 1M window", "anthropic", "claude-sonnet-4-6", "claude-sonnet-4-6", 1000000},
		{"bedrock exact", "bedrock", "anthropic.claude-3-5-sonnet-20240620-v1:0", "anthropic.claude-3-5-sonnet-20240620-v1:0", 200000},
		{"bedrock us profile", "bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic.claude-sonnet-4-5-20250929-v1:0", 200000},
		{"bedrock eu profile", "bedrock", "eu.anthropic.claude-3-7-sonnet-20250219-v1:0", "anthropic.claude-3-7-sonnet-20250219-v1:0", 200000},
		{"bedrock global profile", "bedrock", "global.anthropic.claude-haiku-4-5-20251001-v1:0", "anthropic.claude-haiku-4-5-20251001-v1:0", 200000},
		{"bedrock amazon", "bedrock", "amazon.nova-pro-v1:0", "amazon.nova-pro-v1:0", 300000},
		{"bedrock amazon profile", "bedrock", "us.amazon.nova-lite-v1:0", "amazon.nova-lite-v1:0", 300000},
		{"bedrock meta", "bedrock", "meta.llama3-1-70b-instruct-v1:0", "meta.llama3-1-70b-instruct-v1:0", 128000},
		{"bedrock mistral", "bedrock", "mistral.mistral-large-2407-v1:0", "mistral.mistral-large-2407-v1:0", 128000},
		{"bedrock cohere", "bedrock", "cohere.command-r-plus-v1:0", "cohere.command-r-plus-v1:0", 128000},
		{"google exact", "google", "gemini-2.5-pro", "gemini-2.5-pro", 1048576},
		{"google models/ prefix", "google", "models/gemini-2.5-flash", "gemini-2.5-flash", 1048576},
		{"google revision", "google", "gemini-2.0-flash-001", "gemini-2.0-flash", 1048576},
		{"vertex gemini", "vertex-ai", "gemini-2.5-flash-lite", "gemini-2.5-flash-lite", 1048576},
		{"vertex claude @version", "vertex-ai", "claude-3-5-sonnet@20240620", "claude-3-5-sonnet@20240620", 200000},
		{"vertex claude without version", "vertex-ai", "claude-sonnet-4-5", "claude-sonnet-4-5@20250929", 200000},
		{"groq", "groq", "llama-3.3-70b-versatile", "llama-3.3-70b-versatile", 131072},
		{"mistral", "mistral-ai", "mistral-large-latest", "mistral-large-latest", 128000},
		{"together", "together-ai", "meta-llama/Llama-3.3-70B-Instruct-Turbo", "meta-llama/Llama-3.3-70B-Instruct-Turbo", 131072},
		{"deepseek", "deepseek", "deepseek-chat", "deepseek-chat", 128000},
		{"unknown model", "openai", "gpt-unknown", "", 0},
		{"unknown provider", "nobody", "gpt-4o", "", 0},
		{"another provider's model", "openai", "claude-3-5-haiku-20241022", "", 0},
		{"empty model", "openai", "", "", 0},
		{"deepseek-v3 keeps its v3", "deepseek", "deepseek-v3", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := Lookup(tc.provider, tc.model)
			if ok != (tc.wantID != "") {
				t.Fatalf("Lookup(%q, %q) found %v (%+v), want %v", tc.provider, tc.model, ok, m, tc.wantID != "")
			}
			if !ok {
				return
			}
			if m.ID != tc.wantID || m.ContextWindow != tc.wantWindow || m.Provider != tc.provider {
				t.Errorf("Lookup(%q, %q) = %s/%s window %d, want %s/%s window %d", tc.provider, tc.model, m.Provider, m.ID, m.ContextWindow, tc.provider, tc.wantID, tc.wantWindow)
			}
		})
	}
}

func TestPrices(t *testing.T) {
	m, _ := Lookup("openai", "gpt-4o")
	if m.InputPerMTok != 2.5 || m.OutputPerMTok != 10 || !m.Has(Responses) {
		t.Errorf("gpt-4o = %+v", m)
	}
	// Inherited without prices: Azure's were not read.
	if m, _ := Lookup("azure-openai", "gpt-4o"); m.InputPerMTok != 0 || m.OutputPerMTok != 0 || m.ContextWindow != 128000 {
		t.Errorf("azure gpt-4o = %+v, want the window without prices", m)
	}
	if m, _ := Lookup("anthropic", "claude-haiku-4-5"); m.InputPerMTok != 1 || m.OutputPerMTok != 5 || m.MaxOutputTokens != 64000 {
		t.Errorf("claude-haiku-4-5 = %+v", m)
	}
}

func TestBase(t *testing.T) {
	tests := map[string]string{
		"gpt-4o-2024-08-06":                            "gpt-4o",
		"claude-3-5-haiku-20241022":                    "claude-3-5-haiku",
		"claude-3-5-sonnet@20240620":                   "claude-3-5-sonnet",
		"models/gemini-1.5-pro-002":                    "gemini-1.5-pro",
		"us.anthropic.claude-3-5-sonnet-20241022-v2:0": "anthropic.claude-3-5-sonnet",
		"anthropic.claude-opus-4-6-v1":                 "anthropic.claude-opus-4-6",
		"amazon.titan-embed-text-v2:0":                 "amazon.titan-embed-text",
		"claude-3-5-sonnet-latest":                     "claude-3-5-sonnet",
		"deepseek-v3":                                  "deepseek-v3",
		"gpt-4o":                                       "gpt-4o",
		"claude-opus-4-1":                              "claude-opus-4-1",
		"eu":                                           "eu",
	}
	for in, want := range tests {
		if got := base(in); got != want {
			t.Errorf("base(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLookupDoesNotAllocate(t *testing.T) {
	Default()
	allocs := testing.AllocsPerRun(100, func() {
		_, _ = Lookup("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0")
		_, _ = Lookup("openai", "gpt-4o")
	})
	if allocs != 0 {
		t.Errorf("Lookup allocates %v times", allocs)
	}
}

func TestOverrides(t *testing.T) {
	raw := json.RawMessage(`[{"id":"gpt-4o","context_window":64000,"max_output_tokens":4096,"input_per_mtok":1,"output_per_mtok":2,"capabilities":["chat"]},
		{"id":"ft:gpt-4o-mini:acme::abc","context_window":128000}]`)
	models, err := ParseOverrides(raw)
	if err != nil {
		t.Fatal(err)
	}
	c := Default().WithOverrides("openai", models)
	if m, ok := c.Lookup("openai", "gpt-4o"); !ok || m.ContextWindow != 64000 || m.InputPerMTok != 1 || m.Provider != "openai" {
		t.Errorf("overridden gpt-4o = %+v", m)
	}
	if m, ok := c.Lookup("openai", "gpt-4o-2024-08-06"); !ok || m.ContextWindow != 64000 {
		t.Errorf("overridden gpt-4o by its dated name = %+v", m)
	}
	if m, ok := c.Lookup("openai", "ft:gpt-4o-mini:acme::abc"); !ok || m.ContextWindow != 128000 || m.InputPerMTok != 0 {
		t.Errorf("added model = %+v %v", m, ok)
	}
	if m, ok := c.Lookup("openai", "gpt-4.1"); !ok || m.ContextWindow != 1047576 {
		t.Errorf("other models stay: %+v", m)
	}
	// The default catalogue is untouched, and so are other providers.
	if m, _ := Lookup("openai", "gpt-4o"); m.ContextWindow != 128000 {
		t.Errorf("default changed: %+v", m)
	}
	if _, ok := c.Lookup("anthropic", "claude-haiku-4-5"); !ok {
		t.Error("another provider lost its models")
	}
	if Default().WithOverrides("openai", nil) != Default() {
		t.Error("no overrides should return the catalogue itself")
	}
}

func TestParseOverridesErrors(t *testing.T) {
	tests := []struct{ name, raw, param string }{
		{"not an array", `{"id":"x"}`, "models"},
		{"not an object", `["x"]`, "models[0]"},
		{"unknown member", `[{"id":"x","context_window":1,"price":2}]`, "models[0]"},
		{"no id", `[{"context_window":1000}]`, "models[0].id"},
		{"no window", `[{"id":"x"}]`, "models[0].context_window"},
		{"output past window", `[{"id":"x","context_window":10,"max_output_tokens":11}]`, "models[0].max_output_tokens"},
		{"negative price", `[{"id":"x","context_window":10,"input_per_mtok":-1}]`, "models[0].input_per_mtok"},
		{"unknown capability", `[{"id":"x","context_window":10,"capabilities":["chat","flying"]}]`, "models[0].capabilities[1]"},
		{"twice", `[{"id":"x","context_window":10},{"id":"x","context_window":20}]`, "models[1].id"},
		{"aliases", `[{"id":"x","context_window":10,"aliases":["y"]}]`, "models[0].aliases"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseOverrides(json.RawMessage(tc.raw))
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Status != http.StatusBadRequest || ge.Param != tc.param {
				t.Fatalf("err = %v (%+v), want a 400 naming %q", err, ge, tc.param)
			}
		})
	}
	if m, err := ParseOverrides(json.RawMessage(`null`)); err != nil || m != nil {
		t.Errorf("null: %v %v", m, err)
	}
}

func TestParseRejectsBadFiles(t *testing.T) {
	bad := []string{
		`{"models":[{"provider":"p","id":"m","context_window":0}]}`,
		`{"models":[{"provider":"","id":"m","context_window":5}]}`,
		`{"models":[{"provider":"p","id":"m","context_window":5},{"provider":"p","id":"m","context_window":6}]}`,
		`{"models":[],"inherit":[{"provider":"a","from":"missing"}]}`,
		`not json`,
	}
	for _, b := range bad {
		if _, err := parse([]byte(b)); err == nil {
			t.Errorf("parse(%s) succeeded", b)
		}
	}
}

// TestConcurrentLookup hammers the default catalogue and derived ones from many goroutines (run with -race).
func TestConcurrentLookup(t *testing.T) {
	done := make(chan struct{})
	for g := 0; g < 8; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 500; i++ {
				c := Default().WithOverrides("groq", []Model{{ID: "x", ContextWindow: 10}})
				if _, ok := c.Lookup("groq", "x"); !ok {
					t.Error("override lost")
					return
				}
				if _, ok := Lookup("openai", "gpt-4o-2024-11-20"); !ok {
					t.Error("lookup failed")
					return
				}
			}
		}()
	}
	for g := 0; g < 8; g++ {
		<-done
	}
}

func TestCost(t *testing.T) {
	if usd, ok := Cost("openai", "gpt-4o-mini-2024-07-18", nil, 1_000_000, 1_000_000); !ok || usd != 0.15+0.6 {
		t.Errorf("Cost(gpt-4o-mini) = %v, %v; want 0.75", usd, ok)
	}
	if _, ok := Cost("openai", "no-such-model", nil, 10, 10); ok {
		t.Error("an unknown model was priced")
	}
}
