package azure

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
)

// FuzzNewRequest feeds arbitrary fields, cloud headers, bodies and keys to NewRequest. It must never panic, must
// fail only with a 400 *gwerr.Error, and every request it builds must stay on Azure's domains (no field or header
// can move the host) and carry at most one credential header.
func FuzzNewRequest(f *testing.F) {
	f.Add(`{"resource_name":"contoso","deployment_id":"gpt-4o"}`, "", "", "", "", []byte(`{"model":"gpt-4o","messages":[]}`), "k")
	f.Add(`{}`, "contoso", "dep", "2024-10-21", "", []byte(`{"messages":[]}`), "eyJ0eXAiOiJKV1QifQ.eyJhIjoxfQ.c2ln")
	f.Add(`{"resource_name":"r","deployments":[{"deployment_id":"a","alias":"x","api_version":"v1"}]}`, "", "", "", "x", []byte(`{}`), "k")
	f.Add(`{"cloudx_deployment_type":"serverless","cloudx_deployment_name":"n","cloudx_region":"eastus"}`, "", "", "", "", []byte(`{}`), "k")
	f.Add(`{"cloudx_endpoint_name":"ep","cloudx_region":"r","cloudx_deployment_name":"d/../x"}`, "", "", "", "", []byte(`[]`), "")
	f.Add(`{"resource_name":"evil.example/x?"}`, "a@b", "../../x", "1&x=2", "", []byte(`null`), "Bearer ")
	f.Fuzz(func(t *testing.T, fieldsJSON, resource, dep, version, model string, body []byte, key string) {
		var fs map[string]json.RawMessage
		_ = json.Unmarshal([]byte(fieldsJSON), &fs)
		hdr := map[string]string{headerResource: resource, headerDeployment: dep, headerAPIVersion: version, headerModelName: model}
		tg := &providers.Target{Provider: ID, APIKey: key, Fields: fs, Header: headerFunc(hdr)}
		for _, e := range []providers.Endpoint{providers.ChatCompletions, providers.Embeddings} {
			req, err := Adapter{}.NewRequest(context.Background(), tg, &providers.Call{Endpoint: e, Body: body})
			if err != nil {
				var ge *gwerr.Error
				if !errors.As(err, &ge) || ge.Status != 400 {
					t.Fatalf("err = %v, want a 400 *gwerr.Error", err)
				}
				continue
			}
			host := req.URL.Hostname()
			label, domain, ok := strings.Cut(host, ".")
			if !ok || !isLabel(label) || req.URL.Scheme != "https" || req.URL.User != nil || req.URL.Port() != "" ||
				(domain != "openai.azure.com" && !strings.HasSuffix(domain, ".models.ai.azure.com") && !strings.HasSuffix(domain, ".inference.ml.azure.com")) {
				t.Fatalf("request left Azure: %s", req.URL)
			}
			if domain != "openai.azure.com" {
				region, _, _ := strings.Cut(domain, ".")
				if !isLabel(region) {
					t.Fatalf("bad region label in %s", req.URL)
				}
			}
			if req.Header.Get("Api-Key") != "" && req.Header.Get("Authorization") != "" {
				t.Fatalf("two credentials: %v", req.Header)
			}
		}
	})
}
