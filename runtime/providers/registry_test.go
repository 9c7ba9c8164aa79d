package providers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/jsonfield"
	"github.com/llmgw/gateway/runtime/providers"
	_ "github.com/llmgw/gateway/runtime/providers/anthropic"
	_ "github.com/llmgw/gateway/runtime/providers/azure"
	_ "github.com/llmgw/gateway/runtime/providers/bedrock"
	_ "github.com/llmgw/gateway/runtime/providers/google"
	_ "github.com/llmgw/gateway/runtime/providers/openai"
	_ "github.com/llmgw/gateway/runtime/providers/vertex"
)

func TestCanonical(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"openai", "openai", true},
		{"llmvendor", "openai", true},
		{"cloudx", "azure-openai", true},
		{"cloudy", "vertex-ai", true},
		{"cloudz", "bedrock", true},
		{"anthropic", "anthropic", true},
		{"groq", "groq", true},
		{"OpenAI", "", false},
		{"", "", false},
	}
	for _, tc := range tests {
		got, ok := providers.Canonical(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Canonical(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	ids := providers.Identifiers()
	if !slices.IsSorted(ids) || !slices.Contains(ids, "cloudz") || !slices.Contains(ids, "vertex-ai") {
		t.Errorf("Identifiers() = %v", ids)
	}
}

// TestFields pins that every field a shipped adapter reads is declared once, with the kinds config validation
// has always given them, and that no other provider knowledge is needed to find them.
func TestFields(t *testing.T) {
	want := map[string]providers.FieldKind{
		"resource_name": providers.String, "deployment_id": providers.String, "api_version": providers.String,
		"deployments": providers.Array, "cloudz_access_key_id": providers.String, "cloudz_secret_access_key": providers.String,
		"cloudz_region": providers.String, "cloudz_session_token": providers.String, "llmvendor_organization": providers.String,
		"llmvendor_project": providers.String, "cloudy_project_id": providers.String, "cloudy_region": providers.String,
		"cloudy_service_account_json": providers.Object, "cloudx_region": providers.String, "cloudx_deployment_name": providers.String,
		"cloudx_endpoint_name": providers.String, "cloudx_api_version": providers.String, "cloudx_deployment_type": providers.String,
		"anthropic_version": providers.String, "anthropic_beta": providers.String,
	}
	got := map[string]providers.FieldKind{}
	for _, f := range providers.Fields() {
		if _, dup := got[f.Name]; dup {
			t.Errorf("field %q listed twice", f.Name)
		}
		got[f.Name] = f.Kind
	}
	delete(got, "fake_zone") // module_test.go's provider, registered in this test binary too
	for name, kind := range want {
		if got[name] != kind {
			t.Errorf("field %q: kind %v, want %v", name, got[name], kind)
		}
	}
	if len(got) != len(want) {
		t.Errorf("Fields() has %d fields, want %d", len(got), len(want))
	}
}

func TestIdentity(t *testing.T) {
	d, ok := providers.Describe("azure-openai")
	if !ok {
		t.Fatal("azure-openai not registered")
	}
	headers := map[string]string{}
	identity := func(t *providers.Target) string { id, _ := d.Identify(t); return id }
	target := func(fields string) *providers.Target {
		var m map[string]json.RawMessage
		_ = json.Unmarshal([]byte(fields), &m)
		return &providers.Target{Provider: d.ID, BaseURL: "", APIKey: "k", Fields: m, Header: func(n string) string { return headers[n] }}
	}
	a := identity(target(`{"resource_name": "a"}`))
	if b := identity(target(`{"resource_name": "b"}`)); a == b {
		t.Errorf("two resources share an identity")
	}
	headers["x-gateway-cloudx-resource-name"] = "r"
	if b := identity(target(`{"resource_name": "a"}`)); a == b {
		t.Errorf("an addressing header does not change the identity")
	}
	headers["x-gateway-cloudx-model-name"] = "m"
	if b, c := identity(target(`{"resource_name": "a"}`)), identity(target(`{"resource_name": "a"}`)); b != c || !strings.HasPrefix(b, "azure-openai||") {
		t.Errorf("identity not stable or not prefixed: %q, %q", b, c)
	}
}

// TestIdentifyOnePass: Identify gives both names in one pass; the address leaves the API key out, and stays the
// value stored cache keys were made with.
func TestIdentifyOnePass(t *testing.T) {
	d, ok := providers.Describe("azure-openai")
	if !ok {
		t.Fatal("azure-openai not registered")
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal([]byte(`{"resource_name": "a", "deployment_id": "d"}`), &fields)
	headers := map[string]string{"x-gateway-cloudx-resource-name": "r"}
	target := func(key string) *providers.Target {
		return &providers.Target{Provider: d.ID, APIKey: key, Fields: fields, Header: func(n string) string { return headers[n] }}
	}
	id, addr := d.Identify(target("k"))
	if addr != "45a1ae63b2f7d166" { // the cache's keys hold it: a change would orphan every cached answer
		t.Errorf("address %s changed", addr)
	}
	if again, addrAgain := d.Identify(target("k")); again != id || addrAgain != addr {
		t.Errorf("Identify is not stable: %q %q, then %q %q", id, addr, again, addrAgain)
	}
	id2, addr2 := d.Identify(target("other"))
	if id2 == id || addr2 != addr {
		t.Errorf("another API key: identity %q (was %q), address %q (was %q); want a new identity, the same address", id2, id, addr2, addr)
	}
}

type nopAdapter struct{}

func (nopAdapter) NewRequest(context.Context, *providers.Target, *providers.Call) (*http.Request, error) {
	return nil, nil
}

func TestRegisterRefusesConflicts(t *testing.T) {
	tests := []struct {
		name string
		d    providers.Descriptor
	}{
		{"duplicate identifier", providers.Descriptor{ID: "openai", New: func() providers.Adapter { return nopAdapter{} }}},
		{"alias taken", providers.Descriptor{ID: "registry-test-a", Aliases: []string{"cloudx"}, New: func() providers.Adapter { return nopAdapter{} }}},
		{"field of another kind", providers.Descriptor{ID: "registry-test-b", New: func() providers.Adapter { return nopAdapter{} },
			Fields: []providers.Field{{Name: "deployments", Kind: providers.String}}}},
		{"key set of unknown field", providers.Descriptor{ID: "registry-test-c", New: func() providers.Adapter { return nopAdapter{} },
			KeySets: [][]string{{"nope"}}}},
		{"no constructor", providers.Descriptor{ID: "registry-test-d"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("Register did not panic")
				}
			}()
			providers.Register(tc.d)
		})
	}
	if _, ok := providers.Canonical("registry-test-a"); ok {
		t.Errorf("a refused descriptor was registered")
	}
}

func TestFieldValidate(t *testing.T) {
	o, err := jsonfield.NewObject(json.RawMessage(`{"cloudx_deployment_type": "hosted", "cloudz_region": "", "anthropic_beta": "x"}`), "targets[0]")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ field, wantParam string }{
		{"cloudx_deployment_type", "targets[0].cloudx_deployment_type"},
		{"cloudz_region", "targets[0].cloudz_region"},
		{"anthropic_beta", ""},
	}
	for _, tc := range tests {
		f, ok := providers.FieldByName(tc.field)
		if !ok {
			t.Fatalf("%s not registered", tc.field)
		}
		err := f.Validate(o)
		switch {
		case tc.wantParam == "" && err != nil:
			t.Errorf("%s: %v", tc.field, err)
		case tc.wantParam != "" && (err == nil || !strings.Contains(err.Error(), tc.wantParam)):
			t.Errorf("%s: error %v, want one naming %s", tc.field, err, tc.wantParam)
		}
	}
}
