package openai

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"

	"github.com/llmgw/gateway/runtime/providers"
)

// Compatible lists the providers that speak OpenAI's wire format, with their default base URLs; this adapter
// serves them all.
var Compatible = []struct {
	ID, BaseURL string
	Keyless     bool // runs on the operator's machine: no API key
	// Media are the endpoints beyond chat, completions, embeddings and responses that the provider serves in
	// OpenAI's shape at its base URL, as its API reference documents them (media.go); a call of another one is
	// a 400 from the gateway.
	Media []providers.Endpoint
}{
	{"openai", "https://api.openai.com/v1", false, providers.MediaEndpoints},
	{"groq", "https://api.groq.com/openai/v1", false, groqMedia},
	{"mistral-ai", "https://api.mistral.ai/v1", false, mistralMedia},
	{"together-ai", "https://api.together.xyz/v1", false, togetherMedia},
	{"deepseek", "https://api.deepseek.com/v1", false, nil},
	{"fireworks-ai", "https://api.fireworks.ai/inference/v1", false, nil},
	{"openrouter", "https://openrouter.ai/api/v1", false, openrouterMedia},
	{"perplexity-ai", "https://api.perplexity.ai", false, nil},
	{"ollama", "http://localhost:11434/v1", true, ollamaMedia},
	{"vllm", "http://localhost:8000/v1", true, vllmMedia},
	{"lm-studio", "http://localhost:1234/v1", true, nil},
	{"x-ai", "https://api.x.ai/v1", false, xaiMedia},
}

// Fields are the provider fields NewRequest reads. They select an OpenAI organization or project, whose
// quotas are separate: they address the target.
var Fields = []providers.Field{
	{Name: "llmvendor_organization", Kind: providers.String, Address: true},
	{Name: "llmvendor_project", Kind: providers.String, Address: true},
}

func init() {
	for _, p := range Compatible {
		native := slices.Contains(NativeResponses, p.ID)
		media := providers.NewEndpointSet(p.Media...)
		d := providers.Descriptor{ID: p.ID, BaseURL: p.BaseURL, Fields: Fields, Keyless: p.Keyless,
			New: func() providers.Adapter { return Adapter{responses: native, media: media} }}
		if p.ID == "openai" {
			d.Aliases = []string{"llmvendor"}
		}
		providers.Register(d)
	}
}

// NativeResponses lists the providers of Compatible that serve OpenAI's responses API (/responses) themselves;
// the others speak only chat completions, so the gateway translates a responses request for them.
var NativeResponses = []string{"openai"}

// Adapter calls OpenAI and OpenAI-compatible providers. The caller's body goes upstream as it is: both sides
// speak the same format, so nothing is decoded or re-encoded.
type Adapter struct {
	responses bool                  // the provider serves /responses (NativeResponses)
	media     providers.EndpointSet // the media endpoints it serves (Compatible's Media)
}

var (
	_ providers.Adapter         = Adapter{}
	_ providers.Manager         = Adapter{}
	_ providers.NativeResponses = Adapter{}
)

// NativeResponses reports whether the provider serves the responses API itself (see the list NativeResponses).
func (a Adapter) NativeResponses() bool { return a.responses }

// NewRequest builds POST {base}/chat/completions (or /completions, /embeddings) with Bearer authentication.
func (Adapter) NewRequest(ctx context.Context, t *providers.Target, c *providers.Call) (*http.Request, error) {
	req, err := providers.PostJSON(ctx, t, c, t.BaseURL+c.Endpoint.Path(), c.Body)
	if err != nil {
		return nil, err
	}
	authorize(req.Header, t)
	return req, nil
}

// NewManagementRequest builds {base}{path}?{query} for OpenAI's files, batches and fine-tuning APIs, with the
// authentication of NewRequest.
func (Adapter) NewManagementRequest(ctx context.Context, t *providers.Target, method, path string, query url.Values, body io.Reader, contentType string) (*http.Request, error) {
	u := t.BaseURL + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := providers.NewManagementRequest(ctx, method, u, body, contentType)
	if err != nil {
		return nil, err
	}
	authorize(req.Header, t)
	return req, nil
}

// authorize puts the target's key, organization and project on a request.
func authorize(h http.Header, t *providers.Target) {
	if t.APIKey != "" {
		h.Set("Authorization", "Bearer "+t.APIKey)
	}
	if org := t.StringField("llmvendor_organization"); org != "" {
		h.Set("OpenAI-Organization", org)
	}
	if project := t.StringField("llmvendor_project"); project != "" {
		h.Set("OpenAI-Project", project)
	}
}
