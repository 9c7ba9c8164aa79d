package anthropic

import (
	"context"
	"net/http"
	"strings"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/internal/anthropicmsg"
	"github.com/llmgw/gateway/runtime/providers"
)

// ID is the provider identifier this adapter serves.
const ID = "anthropic"

// DefaultVersion is the anthropic-version header sent when neither the target's anthropic_version field nor the
// caller's anthropic-version header names one.
const DefaultVersion = "2023-06-01"

func init() {
	providers.Register(providers.Descriptor{
		ID:      ID,
		BaseURL: "https://api.anthropic.com/v1",
		// The API version and beta features change the wire format, not the target.
		Fields:  []providers.Field{{Name: "anthropic_version", Kind: providers.String}, {Name: "anthropic_beta", Kind: providers.String}},
		Headers: []providers.Header{{Name: "anthropic-version"}, {Name: "anthropic-beta"}},
		New:     func() providers.Adapter { return Adapter{} },
	})
}

// Adapter calls Anthropic's Messages API. It holds no state and is safe for concurrent use.
type Adapter struct{}

var (
	_ providers.Adapter            = Adapter{}
	_ providers.ResponseTranslator = Adapter{}
	_ providers.StreamTranslator   = Adapter{}
	_ providers.ErrorTranslator    = Adapter{}
)

// NewRequest builds POST {base}/messages from an OpenAI chat completion request, or from Anthropic's own
// Messages request (sent as it is, to /messages or /messages/count_tokens, messages.go). base is Target.BaseURL (the
// custom_host, which ends with /v1, or https://api.anthropic.com/v1). Headers: the forwarded ones, then
// x-api-key (Target.APIKey, omitted when empty), anthropic-version (the target's anthropic_version field, else
// the caller's anthropic-version header, else 2023-06-01), anthropic-beta (the target's anthropic_beta field,
// else the caller's header, when either is set) and content-type application/json. A body that cannot be
// translated is a 400 *gwerr.Error naming the field; completions and embeddings are a 400 too. The body's
// "stream" follows Call.Stream, which is what the engine will read.
func (Adapter) NewRequest(ctx context.Context, t *providers.Target, c *providers.Call) (*http.Request, error) {
	var body []byte
	switch c.Endpoint {
	case providers.ChatCompletions:
		in, err := c.Chat()
		if err != nil {
			return nil, err
		}
		if body, _, err = anthropicmsg.Request(in, anthropicmsg.RequestOptions{Stream: &c.Stream}); err != nil {
			return nil, err
		}
	case providers.Messages, providers.MessagesCountTokens:
		body = c.Body // the caller's own Messages body (messages.go)
	default:
		return nil, gwerr.BadRequest("", "Anthropic has no %s endpoint: send the request to /v1/chat/completions or /v1/messages", c.Endpoint.Path())
	}
	req, err := providers.PostJSON(ctx, t, c, baseURL(t)+messagesPath(c.Endpoint), body)
	if err != nil {
		return nil, err
	}
	if t.APIKey != "" {
		req.Header.Set("X-Api-Key", t.APIKey)
	}
	req.Header.Set("Anthropic-Version", firstOf(t.StringField("anthropic_version"), header(t, "anthropic-version"), DefaultVersion))
	if beta := firstOf(t.StringField("anthropic_beta"), header(t, "anthropic-beta")); beta != "" {
		req.Header.Set("Anthropic-Beta", beta)
	}
	return req, nil
}

// baseURL is the target's base URL without a trailing slash, or Anthropic's default.
func baseURL(t *providers.Target) string {
	if base := strings.TrimRight(t.BaseURL, "/"); base != "" {
		return base
	}
	return providers.DefaultBaseURL(ID)
}

func header(t *providers.Target, name string) string {
	if t.Header == nil {
		return ""
	}
	return t.Header(name)
}

func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
