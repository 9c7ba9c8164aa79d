package routes

import (
	"io"
	"net/http"
	"testing"

	_ "github.com/llmgw/gateway/runtime/providers/azure"
)

// Smoke tests of each shipped adapter through the whole gateway: the OpenAI-shaped request goes in, the
// provider's wire format reaches a local upstream, an OpenAI-shaped answer comes back. The adapters' own
// packages test their translation in depth.

func TestAzureThroughTheGateway(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, chatAnswer)
	})
	for _, provider := range []string{"azure-openai", "cloudx"} {
		a := f.chat(t, chatBody, HeaderProvider, provider, "Authorization", "Bearer azure-key", HeaderCustomHost, up.URL,
			"x-gateway-cloudx-deployment-id", "gpt4o-prod", "x-gateway-cloudx-api-version", "2024-10-21")
		if a.status != 200 || string(a.body) != chatAnswer || a.header.Get(HeaderAnswerProvider) != "azure-openai" {
			t.Fatalf("%s: %d %s", provider, a.status, a.body)
		}
		r, _ := up.lastRequest()
		if r.URL.Path != "/openai/deployments/gpt4o-prod/chat/completions" || r.URL.Query().Get("api-version") != "2024-10-21" {
			t.Errorf("%s: upstream got %s", provider, r.URL)
		}
		if r.Header.Get("api-key") != "azure-key" || r.Header.Get("Authorization") != "" {
			t.Errorf("%s: upstream auth api-key=%q Authorization=%q", provider, r.Header.Get("api-key"), r.Header.Get("Authorization"))
		}
	}
}
