package vertex

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/providers/internal/gemini"
	"github.com/llmgw/gateway/runtime/schema"
)

func init() {
	providers.Register(providers.Descriptor{
		ID:      "vertex-ai",
		Aliases: []string{"cloudy"},
		Fields: []providers.Field{
			{Name: "cloudy_project_id", Kind: providers.String, Address: true},
			{Name: "cloudy_region", Kind: providers.String, Address: true},
			{Name: "cloudy_service_account_json", Kind: providers.Object, Address: true},
		},
		Headers: []providers.Header{
			{Name: "x-gateway-cloudy-project-id", Address: true},
			{Name: "x-gateway-cloudy-region", Address: true},
			{Name: "x-cloudy-llm-request-type"},
		},
		Credentials: []string{"cloudy_service_account_json", "cloudy_project_id"},
		KeySets:     [][]string{{"cloudy_region", "cloudy_service_account_json"}, {"cloudy_region", "cloudy_project_id"}},
		New:         func() providers.Adapter { return New() },
	})
}

// Adapter calls Vertex AI. It keeps the access tokens of service accounts; it is safe for concurrent use.
type Adapter struct {
	now    func() time.Time // the clock of token expiry; time.Now but in tests
	tokens tokenCache
}

// New returns an Adapter with an empty token cache.
func New() *Adapter {
	return &Adapter{now: time.Now}
}

var (
	_ providers.Adapter            = (*Adapter)(nil)
	_ providers.ResponseTranslator = (*Adapter)(nil)
	_ providers.StreamTranslator   = (*Adapter)(nil)
	_ providers.ErrorTranslator    = (*Adapter)(nil)
)

// isAnthropic tells Claude models, which Anthropic publishes on Vertex AI, from Google's own.
func isAnthropic(model string) bool { return strings.HasPrefix(model, "claude") }

// NewRequest translates the call, resolves project, region and credentials (exchanging a service account's JWT
// for an access token when no cached one is fresh) and builds the Vertex AI request.
func (a *Adapter) NewRequest(ctx context.Context, t *providers.Target, c *providers.Call) (*http.Request, error) {
	var body []byte
	var model, resource, method string
	var err error
	switch c.Endpoint {
	case providers.ChatCompletions:
		var in *schema.ChatRequest
		if in, err = c.Chat(); err != nil {
			return nil, err
		}
		if isAnthropic(gemini.ModelOf(in)) {
			body, model, err = anthropicRequest(in)
			resource, method = "publishers/anthropic/models/", ":rawPredict"
			if c.Stream {
				method = ":streamRawPredict"
			}
			break
		}
		body, model, err = gemini.ChatRequest(in)
		resource, method = "publishers/google/models/", ":generateContent"
		if c.Stream {
			method = ":streamGenerateContent?alt=sse"
		}
	case providers.Messages: // a Claude model's, as the caller sent it (messages.go)
		body, model, err = messagesRequest(c)
		resource, method = "publishers/anthropic/models/", ":rawPredict"
		if c.Stream {
			method = ":streamRawPredict"
		}
	case providers.Embeddings:
		var in *schema.EmbeddingsRequest
		if in, err = schema.DecodeEmbeddings(c.Body); err != nil {
			return nil, err
		}
		body, model, err = gemini.PredictRequest(in)
		resource, method = "publishers/google/models/", ":predict"
		if err == nil && isAnthropic(model) {
			return nil, gwerr.BadRequest("model", "%s is a chat model; Vertex AI embeds text with its text embedding models", model)
		}
	default:
		return nil, gwerr.BadRequest("", "vertex-ai does not serve %s; use /chat/completions, /embeddings or (Claude models) /messages", c.Endpoint.Path())
	}
	if err != nil {
		return nil, err
	}
	if id, ok := strings.CutPrefix(model, "endpoints/"); ok && c.Endpoint == providers.ChatCompletions {
		resource, model = "endpoints/", id
	}
	if err := gemini.CheckModel(model); err != nil {
		return nil, err
	}

	var account *tokenEntry
	if raw, ok := t.Fields["cloudy_service_account_json"]; ok && !isNull(raw) {
		if account, err = a.tokens.entry(raw, a.now()); err != nil {
			return nil, err
		}
	}
	project, region, err := location(t, account)
	if err != nil {
		return nil, err
	}
	var token string
	switch {
	case account != nil:
		if token, err = a.token(ctx, t.Client, account); err != nil {
			return nil, err
		}
	case t.APIKey != "":
		token = t.APIKey
	default:
		return nil, &gwerr.Error{Status: http.StatusUnauthorized, Code: gwerr.CodeMissingAPIKey, Param: "cloudy_service_account_json",
			Message: "vertex-ai needs credentials: cloudy_service_account_json in the config, or an access token as Authorization: Bearer"}
	}

	url := baseURL(t, region) + "/v1/projects/" + project + "/locations/" + region + "/" + resource + model + method
	req, err := providers.PostJSON(ctx, t, c, url, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if kind := t.Header("X-cloudy-LLM-Request-Type"); kind != "" {
		req.Header.Set("X-Vertex-AI-LLM-Request-Type", strings.Clone(kind)) // the caller's header lives only while building
	}
	return req, nil
}

// location resolves the project and region: config fields first, then the caller's headers, then (for the
// project) the service account's own.
func location(t *providers.Target, account *tokenEntry) (project, region string, err error) {
	project = t.StringField("cloudy_project_id")
	if project == "" {
		project = t.Header("x-gateway-cloudy-project-id")
	}
	if project == "" && account != nil {
		project = account.account.ProjectID
	}
	region = t.StringField("cloudy_region")
	if region == "" {
		region = t.Header("x-gateway-cloudy-region")
	}
	switch {
	case project == "":
		return "", "", gwerr.BadRequest("cloudy_project_id",
			"vertex-ai needs a project: set cloudy_project_id in the config or send x-gateway-cloudy-project-id")
	case region == "":
		return "", "", gwerr.BadRequest("cloudy_region",
			"vertex-ai needs a region: set cloudy_region in the config or send x-gateway-cloudy-region")
	case !validName(project, true):
		return "", "", gwerr.BadRequest("cloudy_project_id", "project %q is not a Google Cloud project ID", project)
	case !validName(region, false):
		return "", "", gwerr.BadRequest("cloudy_region", "region %q is not a Google Cloud region (such as us-central1 or global)", region)
	}
	return project, region, nil
}

// validName accepts the characters of project IDs (letters, digits, '-', and for domain-scoped projects '.' and
// ':') or of regions (lower-case letters, digits and '-'), so that neither can change the URL's shape.
func validName(s string, project bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-':
		case project && ('A' <= c && c <= 'Z' || c == '.' || c == ':' || c == '_'):
		default:
			return false
		}
	}
	return s != "" && s[0] != '.'
}

// baseURL is the scheme and host (and any path prefix) before /v1.
func baseURL(t *providers.Target, region string) string {
	if t.BaseURL != "" {
		return strings.TrimSuffix(strings.TrimRight(t.BaseURL, "/"), "/v1")
	}
	if region == "global" {
		return "https://aiplatform.googleapis.com"
	}
	return "https://" + region + "-aiplatform.googleapis.com"
}

func isNull(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// TranslateResponse turns a generateContent answer into a chat.completion (an Anthropic message for Claude
// models), or a :predict answer into an embeddings list.
func (a *Adapter) TranslateResponse(_ *providers.Target, c *providers.Call, body []byte) ([]byte, error) {
	if c.Endpoint == providers.Embeddings {
		in, err := schema.DecodeEmbeddings(c.Body)
		if err != nil {
			return nil, err
		}
		return gemini.PredictResponse(body, in)
	}
	in, _ := c.Chat() // NewRequest refused a body that does not decode
	model := gemini.ModelOf(in)
	if isAnthropic(model) {
		return anthropicResponse(body, c.Strict)
	}
	return gemini.ChatResponse(body, model, c.Strict)
}

// TranslateStream turns streamGenerateContent's (or streamRawPredict's) server-sent events into
// chat.completion.chunk events.
func (a *Adapter) TranslateStream(_ *providers.Target, c *providers.Call, body io.ReadCloser) io.ReadCloser {
	in, _ := c.Chat() // NewRequest refused a body that does not decode
	model := gemini.ModelOf(in)
	if isAnthropic(model) {
		return anthropicStream(body, c.Strict)
	}
	return gemini.Stream(body, model, c.Strict)
}

// TranslateError turns an error body into OpenAI's error shape with provider_error. Vertex AI's own errors are
// Google's shape; errors that Anthropic models return through rawPredict are Anthropic's.
func (a *Adapter) TranslateError(_ *providers.Target, _ *providers.Call, status int, body []byte) []byte {
	if anthropicShaped(body) {
		return anthropicError(status, body)
	}
	return gemini.Error(status, body)
}
