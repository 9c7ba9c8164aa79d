package azure

import (
	"context"
	"testing"

	"github.com/llmgw/gateway/runtime/providers"
)

// BenchmarkNewRequest measures building one upstream request (the adapter's whole per-call work: Azure's answers
// and streams pass through untranslated).
func BenchmarkNewRequest(b *testing.B) {
	chat := []byte(`{"model":"gpt-4o","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Hello there, how are you today?"}],"temperature":0.2,"max_tokens":256}`)
	cases := []struct {
		name   string
		target providers.Target
	}{
		{"headers", providers.Target{APIKey: "0123456789abcdef0123456789abcdef", Header: headerFunc(map[string]string{
			headerResource: "contoso", headerDeployment: "gpt-4o", headerAPIVersion: "2024-10-21"})}},
		{"deployments alias", providers.Target{APIKey: "0123456789abcdef0123456789abcdef",
			Fields: fields(`{"resource_name":"contoso","deployments":` + threeDeployments + `}`), Header: noHeader}},
		{"v1 model rewrite", providers.Target{APIKey: "0123456789abcdef0123456789abcdef",
			Fields: fields(`{"resource_name":"contoso","deployment_id":"chat-prod","api_version":"v1"}`), Header: noHeader}},
		{"foundry serverless", providers.Target{APIKey: "k",
			Fields: fields(`{"cloudx_deployment_type":"serverless","cloudx_deployment_name":"phi-4","cloudx_region":"eastus2","cloudx_api_version":"2024-05-01-preview"}`), Header: noHeader}},
	}
	ctx := context.Background()
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			call := &providers.Call{Endpoint: providers.ChatCompletions, Body: chat}
			b.ReportAllocs()
			b.SetBytes(int64(len(chat)))
			for b.Loop() {
				if _, err := (Adapter{}).NewRequest(ctx, &tc.target, call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
