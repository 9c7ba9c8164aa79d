package google

import (
	"context"
	"io"
	"net/http"
	"strings"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/providers/internal/gemini"
	"github.com/llmgw/gateway/runtime/schema"
)

func init() {
	providers.Register(providers.Descriptor{ID: "google", BaseURL: "https://generativelanguage.googleapis.com",
		New: func() providers.Adapter { return Adapter{} }})
}

// Adapter calls the Gemini API. It holds no state and is safe for concurrent use.
type Adapter struct{}

var (
	_ providers.Adapter            = Adapter{}
	_ providers.ResponseTranslator = Adapter{}
	_ providers.StreamTranslator   = Adapter{}
	_ providers.ErrorTranslator    = Adapter{}
)

// NewRequest translates the call and builds POST {base}/v1beta/models/{model}:generateContent (or
// :streamGenerateContent?alt=sse, :embedContent, :batchEmbedContents) with the API key in x-goog-api-key.
func (Adapter) NewRequest(ctx context.Context, t *providers.Target, c *providers.Call) (*http.Request, error) {
	var body []byte
	var model, method string
	var err error
	switch c.Endpoint {
	case providers.ChatCompletions:
		var in *schema.ChatRequest
		if in, err = c.Chat(); err != nil {
			return nil, err
		}
		body, model, err = gemini.ChatRequest(in)
		method = ":generateContent"
		if c.Stream {
			method = ":streamGenerateContent?alt=sse"
		}
	case providers.Embeddings:
		var in *schema.EmbeddingsRequest
		if in, err = schema.DecodeEmbeddings(c.Body); err != nil {
			return nil, err
		}
		var batch bool
		body, model, batch, err = gemini.EmbedRequest(in)
		method = ":embedContent"
		if batch {
			method = ":batchEmbedContents"
		}
	default:
		return nil, gwerr.BadRequest("", "google does not serve %s; use /chat/completions or /embeddings", c.Endpoint.Path())
	}
	if err != nil {
		return nil, err
	}
	resource, err := resourceName(model)
	if err != nil {
		return nil, err
	}
	req, err := providers.PostJSON(ctx, t, c, baseURL(t)+"/v1beta/"+resource+method, body)
	if err != nil {
		return nil, err
	}
	if t.APIKey != "" {
		req.Header.Set("x-goog-api-key", t.APIKey)
	}
	return req, nil
}

// resourceName is the model's resource name: models/{model}, or tunedModels/{id}.
func resourceName(model string) (string, error) {
	if id, ok := strings.CutPrefix(model, "tunedModels/"); ok {
		if err := gemini.CheckModel(id); err != nil {
			return "", err
		}
		return model, nil
	}
	if err := gemini.CheckModel(model); err != nil {
		return "", err
	}
	return "models/" + model, nil
}

// baseURL is the scheme and host (and any path prefix) before /v1beta.
func baseURL(t *providers.Target) string {
	base := t.BaseURL
	if base == "" {
		base = providers.DefaultBaseURL("google")
	}
	base = strings.TrimRight(base, "/")
	return strings.TrimSuffix(base, "/v1beta")
}

// TranslateResponse turns a generateContent answer into a chat.completion, or an embedContent or
// batchEmbedContents answer into an embeddings list.
func (Adapter) TranslateResponse(_ *providers.Target, c *providers.Call, body []byte) ([]byte, error) {
	if c.Endpoint == providers.Embeddings {
		in, err := schema.DecodeEmbeddings(c.Body)
		if err != nil {
			return nil, err
		}
		return gemini.EmbedResponse(body, in)
	}
	in, _ := c.Chat() // NewRequest refused a body that does not decode
	return gemini.ChatResponse(body, gemini.ModelOf(in), c.Strict)
}

// TranslateStream turns streamGenerateContent's server-sent events into chat.completion.chunk events.
func (Adapter) TranslateStream(_ *providers.Target, c *providers.Call, body io.ReadCloser) io.ReadCloser {
	in, _ := c.Chat() // NewRequest refused a body that does not decode
	return gemini.Stream(body, gemini.ModelOf(in), c.Strict)
}

// TranslateError turns a Google error body into OpenAI's error shape with provider_error.
func (Adapter) TranslateError(_ *providers.Target, _ *providers.Call, status int, body []byte) []byte {
	return gemini.Error(status, body)
}
