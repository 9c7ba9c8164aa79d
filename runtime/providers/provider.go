package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"

	"github.com/llmgw/gateway/runtime/schema"
)

// Endpoint is an OpenAI-shaped operation the gateway routes.
type Endpoint uint8

// The routed endpoints.
const (
	ChatCompletions Endpoint = iota + 1
	Completions
	Embeddings
	// Responses is OpenAI's responses API (POST /v1/responses): sent as is to an adapter that implements
	// NativeResponses, translated to and from ChatCompletions for every other one (runtime/responses_step.go).
	Responses
	// Messages is Anthropic's Messages API (POST /v1/messages): sent as is to an adapter that implements
	// NativeMessages for the target's model, translated to and from ChatCompletions for every other one
	// (runtime/messages_step.go).
	Messages
	// MessagesCountTokens is Anthropic's POST /v1/messages/count_tokens: forwarded to adapters with
	// NativeMessages, estimated by the gateway for the rest.
	MessagesCountTokens
	// The rest of OpenAI's inference endpoints, routed like chat completions to the providers that serve them.
	ImagesGenerations
	ImagesEdits // multipart
	AudioSpeech // a binary answer, streamed through
	AudioTranscriptions
	AudioTranslations
	Moderations
	Rerank
)

// Path is the endpoint's path below the provider's base URL, as OpenAI names it.
func (e Endpoint) Path() string {
	switch e {
	case ChatCompletions:
		return "/chat/completions"
	case Completions:
		return "/completions"
	case Embeddings:
		return "/embeddings"
	case Responses:
		return "/responses"
	case Messages:
		return "/messages"
	case MessagesCountTokens:
		return "/messages/count_tokens"
	case ImagesGenerations:
		return "/images/generations"
	case ImagesEdits:
		return "/images/edits"
	case AudioSpeech:
		return "/audio/speech"
	case AudioTranscriptions:
		return "/audio/transcriptions"
	case AudioTranslations:
		return "/audio/translations"
	case Moderations:
		return "/moderations"
	case Rerank:
		return "/rerank"
	}
	return ""
}

// Target is a resolved provider target: everything an adapter needs to call it. The runtime builds it per
// attempt from the config, the stored provider and the request's headers.
type Target struct {
	Provider string // canonical identifier
	BaseURL  string // custom_host or the provider's default; no trailing slash
	APIKey   string // api_key, the stored provider's, or the caller's Bearer token
	// Fields are provider-specific settings: resource_name, deployments, cloudz_*, llmvendor_organization, ...
	Fields map[string]json.RawMessage
	// Forward holds the caller's headers that the config or x-gateway-forward-headers names, to send unchanged.
	Forward http.Header
	// Header reads one of the caller's request headers (the cloud headers x-gateway-cloudx-* and the like).
	// It is valid only while the call is being built; it is never nil.
	Header func(name string) string
	// Client is the gateway's pooled, host-guarded HTTP client, for adapters that call a side service while
	// building a request (Vertex AI's token exchange).
	Client *http.Client
}

// Call is one call of an endpoint: the OpenAI-shaped request body (overrides applied) and what the runtime
// already knows of it. Stream is what the runtime will read: an adapter must make the body it sends ask for a
// stream exactly when Stream is set, whatever override_params put in the body.
type Call struct {
	Endpoint Endpoint
	Body     []byte
	// Request is the caller's body as routes read it, set when Body is those bytes unchanged (no override
	// applied): Chat then decodes it once for all the request's attempts. Nil otherwise.
	Request *schema.Body
	Stream  bool
	// Strict is the target's strict_llmvendor_compliance: answers carry only OpenAI's fields. When false,
	// translators keep provider extras (content_blocks, thinking text) as SPEC.md's completion response shows.
	Strict bool
	// ContentType is Body's content type when it is not JSON: a multipart upload's (Endpoint.Multipart), with
	// its boundary, sent upstream as it is. Empty means JSON.
	ContentType string
}

// Adapter turns a call into the provider's HTTP request. Adapters whose wire format differs from OpenAI's also
// implement the optional interfaces below; an adapter that speaks OpenAI's format needs only NewRequest.
// NewRequest may do I/O (a signed request, a token exchange through Target.Client) and must honour ctx.
type Adapter interface {
	NewRequest(ctx context.Context, t *Target, c *Call) (*http.Request, error)
}

// Manager is implemented by the adapters of providers that serve OpenAI's management APIs (files, batches,
// fine-tuning): it owns their URLs and authentication as NewRequest owns the inference ones. path is the API's
// path as OpenAI names it below its base URL ("/files", "/fine_tuning/jobs/ftjob-1/cancel"); query holds the
// caller's query parameters (the adapter may add its own, such as an api-version); body, when not nil, has the
// given content type (JSON, or a multipart upload). An adapter that cannot address the target's management API
// answers a 400 *gwerr.Error that says so. Providers whose adapter does not implement it have no such APIs.
type Manager interface {
	NewManagementRequest(ctx context.Context, t *Target, method, path string, query url.Values, body io.Reader, contentType string) (*http.Request, error)
}

// NewManagementRequest builds the request of a management call that every Manager sends: method on url with
// body of contentType (no content type when ""), accepting JSON. Adapters add their authentication to it.
func NewManagementRequest(ctx context.Context, method, url string, body io.Reader, contentType string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	return req, nil
}

// NativeResponses is implemented by adapters whose provider serves OpenAI's responses API itself (OpenAI, Azure
// OpenAI): NativeResponses reports true, and a Responses call goes to them as it is. Every other adapter gets
// the call translated to a chat completion (runtime/responses_step.go).
type NativeResponses interface {
	NativeResponses() bool
}

// NativeMessages is implemented by adapters whose provider serves Anthropic's Messages API itself for some
// models (Anthropic for all, Claude on Vertex AI and Bedrock): NativeMessages reports whether model is one, and
// a Messages call for it goes to the adapter as it is (the adapter only fits it to the provider's own
// addressing). Every other target gets the call translated to a chat completion (runtime/messages_step.go).
type NativeMessages interface {
	NativeMessages(t *Target, model string) bool
}

// StreamUsageAsker is implemented by adapters that send a chat completion's body upstream as it is to providers
// that report a stream's usage only when stream_options.include_usage asks for it (OpenAI's format):
// AsksStreamUsage reports whether the target's provider takes that option. When it does, the engine asks for
// usage on every streamed chat completion, so that its accounting has the provider's own figures, and hides the
// usage chunk from a caller that did not ask for it (runtime/streamusage.go).
type StreamUsageAsker interface {
	AsksStreamUsage(t *Target) bool
}

// ModelLister is implemented by adapters whose provider lists its models over HTTP (GET /v1/models through a
// target): NewModelsRequest builds the list call with the target's authentication, TranslateModels turns its
// 2xx answer into OpenAI's model list ({"object":"list","data":[{"id","object":"model","created","owned_by"}]}).
// The models of providers whose adapter lacks it (no list API, or one the gateway cannot address) come from
// the model catalogue (runtime/catalog).
type ModelLister interface {
	NewModelsRequest(ctx context.Context, t *Target) (*http.Request, error)
	TranslateModels(t *Target, body []byte) ([]byte, error)
}

// ResponseTranslator turns a provider's 2xx, non-streamed answer into OpenAI's shape (a chat.completion,
// text_completion or embeddings list). An error means the answer could not be understood: the runtime treats
// it as a failed call (502 upstream_error).
type ResponseTranslator interface {
	TranslateResponse(t *Target, c *Call, body []byte) ([]byte, error)
}

// StreamTranslator turns a provider's 2xx streamed body into OpenAI server-sent events: "data: {chunk}\n\n"
// per chat.completion.chunk, ending with "data: [DONE]\n\n". The returned reader must yield each event as soon
// as the provider's event that makes it has been read (never buffer the whole answer), return an error (not
// io.EOF) when the provider's stream breaks or holds an error event, and close body when closed.
type StreamTranslator interface {
	TranslateStream(t *Target, c *Call, body io.ReadCloser) io.ReadCloser
}

// ErrorTranslator turns a provider's error answer (status outside 2xx) into OpenAI's error shape:
// {"error": {"message": <the provider's own message>, "type": ..., "code": ..., "param": null,
// "provider_error": <the provider's raw body, as JSON when it is JSON, else as a string>}}. The status stays
// the provider's. OpenAI-compatible providers don't implement it: their error bodies pass through unchanged.
type ErrorTranslator interface {
	TranslateError(t *Target, c *Call, status int, body []byte) []byte
}

// Chat is the call's body decoded as a chat completion request, the one decoding translating adapters use.
// When the body is the caller's own it is decoded once per request, whatever the number of attempts. Callers
// must not modify the result. Errors are 400s naming the field.
func (c *Call) Chat() (*schema.ChatRequest, error) {
	if c.Request != nil && sameBytes(c.Request.Raw(), c.Body) {
		return c.Request.Chat()
	}
	return schema.DecodeChat(c.Body)
}

// PostJSON builds the POST of body to url that every adapter sends: the caller's forwarded headers first, then
// content-type application/json and an accept that asks for a server-sent event stream exactly when the call
// will be read as one. Adapters add their authentication to it.
func PostJSON(ctx context.Context, t *Target, c *Call, url string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for name, values := range t.Forward {
		req.Header[name] = values
	}
	req.Header["Content-Type"] = jsonValue
	if c.ContentType != "" {
		req.Header["Content-Type"] = []string{c.ContentType}
	}
	switch {
	case c.Stream:
		req.Header["Accept"] = eventStreamValue
	case c.Endpoint.AnyAnswer(): // audio, or a transcript as text
		req.Header["Accept"] = anyValue
	default:
		req.Header["Accept"] = jsonValue
	}
	return req, nil
}

// The values of the headers PostJSON sets, shared by every call rather than made for each (Header.Set makes
// a slice a call). A request's header values are only ever replaced or appended to, never written in place,
// and their capacity is their length, so that an append copies them.
var (
	jsonValue        = []string{"application/json"}
	eventStreamValue = []string{"text/event-stream"}
	anyValue         = []string{"*/*"}
)

// Responses is the call's body decoded as a responses API request, once per request when the body is the
// caller's own (as Chat). Callers must not modify the result.
func (c *Call) Responses() (*schema.ResponseRequest, error) {
	if c.Request != nil && sameBytes(c.Request.Raw(), c.Body) {
		return c.Request.Responses()
	}
	return schema.DecodeResponseRequest(c.Body)
}

func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
