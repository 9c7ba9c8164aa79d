package openai

import (
	"bytes"
	"context"
	"net/http"

	"github.com/llmgw/gateway/runtime/providers"
)

// Compatible lists the providers that speak OpenAI's wire format on their own base URL; this adapter serves them
// all.
var Compatible = []string{"openai", "groq", "mistral-ai", "together-ai", "deepseek", "fireworks-ai", "openrouter",
	"perplexity-ai", "ollama", "vllm", "lm-studio", "x-ai"}

func init() {
	for _, id := range Compatible {
		providers.Register(id, Adapter{})
	}
}

// Adapter calls OpenAI and OpenAI-compatible providers. The caller's body goes upstream as it is: both sides
// speak the same format, so nothing is decoded or re-encoded.
type Adapter struct{}

var _ providers.Adapter = Adapter{}

// NewRequest builds POST {base}/chat/completions (or /completions, /embeddings) with Bearer authentication.
func (Adapter) NewRequest(ctx context.Context, t *providers.Target, c *providers.Call) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.BaseURL+c.Endpoint.Path(), bytes.NewReader(c.Body))
	if err != nil {
		return nil, err
	}
	for name, values := range t.Forward {
		req.Header[name] = values
	}
	req.Header.Set("Content-Type", "application/json")
	if c.Stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	if t.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.APIKey)
	}
	if org := t.StringField("llmvendor_organization"); org != "" {
		req.Header.Set("OpenAI-Organization", org)
	}
	if project := t.StringField("llmvendor_project"); project != "" {
		req.Header.Set("OpenAI-Project", project)
	}
	return req, nil
}
