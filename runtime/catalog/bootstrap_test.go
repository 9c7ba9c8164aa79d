package catalog_test

import (
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/bootstrap"
	"github.com/llmgw/gateway/runtime/catalog"
	_ "github.com/llmgw/gateway/runtime/providers/openai"
)

// TestStoredProviderOverrides checks the way overrides reach the catalogue: a stored provider's "models"
// field in the bootstrap file, validated there and kept with its fields.
func TestStoredProviderOverrides(t *testing.T) {
	f, err := bootstrap.Parse([]byte(`{"providers": [{"slug": "p", "provider": "openai", "api_key": "k",
		"models": [{"id": "gpt-4o", "context_window": 64000, "input_per_mtok": 1}]}]}`), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	raw := f.Providers[0].Fields[catalog.OverridesField]
	models, err := catalog.ParseOverrides(raw)
	if err != nil || len(models) != 1 {
		t.Fatalf("stored overrides %s: %v %v", raw, models, err)
	}
	if m, ok := catalog.LookupWith("openai", "gpt-4o-2024-08-06", raw); !ok || m.ContextWindow != 64000 {
		t.Errorf("LookupWith = %+v %v", m, ok)
	}
	_, err = bootstrap.Parse([]byte(`{"providers": [{"slug": "p", "provider": "openai", "api_key": "k",
		"models": [{"id": "gpt-4o", "context_window": -1}]}]}`), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "providers[0].models[0].context_window") {
		t.Errorf("err = %v, want one naming providers[0].models[0].context_window", err)
	}
}
