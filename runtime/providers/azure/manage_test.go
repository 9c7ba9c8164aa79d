package azure

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
)

func TestNewManagementRequest(t *testing.T) {
	jwt := "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln"
	fields := func(kv ...string) map[string]json.RawMessage {
		m := map[string]json.RawMessage{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]], _ = json.Marshal(kv[i+1])
		}
		return m
	}
	tests := []struct {
		name           string
		target         providers.Target
		url            string
		apiKey, bearer string
		param          string // of the 400, when the target has no management API
	}{
		{"resource", providers.Target{APIKey: "k1", Fields: fields("resource_name", "myres")},
			"https://myres.openai.azure.com/openai/fine_tuning/jobs?api-version=2024-10-21&limit=2", "k1", "", ""},
		{"resource from the header, its version", providers.Target{APIKey: "k1", Header: func(name string) string {
			return map[string]string{headerResource: "hdr", headerAPIVersion: "2025-01-01-preview"}[name]
		}}, "https://hdr.openai.azure.com/openai/fine_tuning/jobs?api-version=2025-01-01-preview&limit=2", "k1", "", ""},
		{"custom host, v1, Entra token", providers.Target{APIKey: jwt, BaseURL: "https://proxy.example.com", Fields: fields("api_version", "v1")},
			"https://proxy.example.com/openai/v1/fine_tuning/jobs?limit=2", "", "Bearer " + jwt, ""},
		{"no resource", providers.Target{APIKey: "k"}, "", "", "", headerResource},
		{"foundry", providers.Target{APIKey: "k", Fields: fields("cloudx_deployment_name", "d", "cloudx_region", "eastus")}, "", "", "", "x-gateway-virtual-key"},
		{"model inference endpoint", providers.Target{APIKey: "k", BaseURL: "https://r.services.ai.azure.com/models"}, "", "", "", "x-gateway-virtual-key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := Adapter{}.NewManagementRequest(context.Background(), &tc.target, "GET", "/fine_tuning/jobs", url.Values{"limit": {"2"}}, nil, "")
			if tc.param != "" {
				var ge *gwerr.Error
				if !errors.As(err, &ge) || ge.Status != 400 || ge.Param != tc.param {
					t.Fatalf("err = %v, want a 400 naming %s", err, tc.param)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.URL.String() != tc.url {
				t.Errorf("url = %s, want %s", req.URL, tc.url)
			}
			if req.Header.Get("Api-Key") != tc.apiKey || req.Header.Get("Authorization") != tc.bearer {
				t.Errorf("auth = api-key %q, authorization %q", req.Header.Get("Api-Key"), req.Header.Get("Authorization"))
			}
		})
	}
}
