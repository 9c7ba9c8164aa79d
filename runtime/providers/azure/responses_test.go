package azure

import (
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/llmgw/gateway/runtime/providers"
)

func TestResponsesURLs(t *testing.T) {
	tests := []struct {
		name, fields, url, model string
	}{
		{"deployment, default version", `{"resource_name":"r","deployment_id":"d"}`,
			"https://r.openai.azure.com/openai/responses?api-version=" + ResponsesAPIVersion, "d"},
		{"deployment, chosen version", `{"resource_name":"r","deployment_id":"d","api_version":"2025-05-01-preview"}`,
			"https://r.openai.azure.com/openai/responses?api-version=2025-05-01-preview", "d"},
		{"v1", `{"resource_name":"r","deployment_id":"d","api_version":"v1"}`, "https://r.openai.azure.com/openai/v1/responses", "d"},
	}
	if !(Adapter{}).NativeResponses() {
		t.Fatal("Azure OpenAI serves the responses API")
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tg := &providers.Target{Fields: fields(tc.fields), Header: noHeader, APIKey: "k"}
			req, err := Adapter{}.NewRequest(context.Background(), tg, &providers.Call{Endpoint: providers.Responses, Body: []byte(`{"model":"gpt-4o","input":"Hi"}`)})
			if err != nil {
				t.Fatal(err)
			}
			if req.URL.String() != tc.url {
				t.Errorf("url %s, want %s", req.URL, tc.url)
			}
			body, _ := io.ReadAll(req.Body)
			var m struct{ Model string }
			if json.Unmarshal(body, &m); m.Model != tc.model {
				t.Errorf("body model %q, want the deployment %q: %s", m.Model, tc.model, body)
			}
		})
	}
}
