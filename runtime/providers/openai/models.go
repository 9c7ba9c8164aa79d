package openai

import (
	"context"
	"net/http"
	"slices"

	"github.com/llmgw/gateway/runtime/providers"
)

var (
	_ providers.ModelLister      = Adapter{}
	_ providers.StreamUsageAsker = Adapter{}
)

// NewModelsRequest builds GET {base}/models with the authentication of NewRequest.
func (Adapter) NewModelsRequest(ctx context.Context, t *providers.Target) (*http.Request, error) {
	req, err := providers.NewManagementRequest(ctx, http.MethodGet, t.BaseURL+"/models", nil, "")
	if err != nil {
		return nil, err
	}
	authorize(req.Header, t)
	return req, nil
}

// TranslateModels passes the provider's list on as it is: it is OpenAI's.
func (Adapter) TranslateModels(_ *providers.Target, body []byte) ([]byte, error) { return body, nil }

// noStreamOptions lists the providers of Compatible that must not be sent stream_options: Mistral refuses
// unknown members with a 422 (and reports usage on every stream's last chunk), Perplexity reports usage on
// every chunk unasked.
var noStreamOptions = []string{"mistral-ai", "perplexity-ai"}

// AsksStreamUsage reports whether the target's provider takes stream_options.include_usage, which the engine
// then sets on every streamed chat completion (providers.StreamUsageAsker).
func (Adapter) AsksStreamUsage(t *providers.Target) bool {
	return !slices.Contains(noStreamOptions, t.Provider)
}
