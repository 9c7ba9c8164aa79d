package bedrock

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/netguard"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
)

// ID is the canonical identifier this adapter serves (SPEC.md's alias cloudz maps to it).
const ID = "bedrock"

func init() {
	providers.Register(providers.Descriptor{
		ID:      ID,
		Aliases: []string{"cloudz"},
		// The access key ID names the AWS account and the region the endpoint: both address the target.
		Fields: []providers.Field{
			{Name: fieldAccessKeyID, Kind: providers.String, Address: true},
			{Name: fieldSecretAccessKey, Kind: providers.String},
			{Name: fieldRegion, Kind: providers.String, Address: true},
			{Name: fieldSessionToken, Kind: providers.String},
		},
		Headers: []providers.Header{
			{Name: headerAccessKeyID, Address: true},
			{Name: headerSecretAccessKey},
			{Name: headerSessionToken},
			{Name: headerRegion, Address: true},
		},
		Credentials: []string{fieldAccessKeyID},
		KeySets:     [][]string{{fieldAccessKeyID, fieldSecretAccessKey}},
		New:         func() providers.Adapter { return New() },
	})
}

// Adapter calls Amazon Bedrock's runtime API: Converse / ConverseStream for chat completions and InvokeModel for
// embeddings, signed with AWS Signature Version 4. It is safe for concurrent use; every request is built and
// translated independently.
type Adapter struct {
	signer *v4.Signer
	now    func() time.Time // signing time and "created"; time.Now unless a test pins it
	newID  func() string    // chat.completion ids; random unless a test pins it
}

// New returns an adapter that signs with the current time.
func New() *Adapter {
	return &Adapter{signer: v4.NewSigner(), now: time.Now, newID: randomID}
}

var (
	_ providers.Adapter            = (*Adapter)(nil)
	_ providers.ResponseTranslator = (*Adapter)(nil)
	_ providers.StreamTranslator   = (*Adapter)(nil)
	_ providers.ErrorTranslator    = (*Adapter)(nil)
)

// Content types Bedrock speaks.
const (
	mimeJSON        = "application/json"
	mimeEventStream = "application/vnd.amazon.eventstream"
)

// NewRequest translates the OpenAI-shaped call and builds the signed Bedrock request:
//
//	chat completions          POST {base}/model/{modelId}/converse
//	chat completions, stream  POST {base}/model/{modelId}/converse-stream
//	embeddings                POST {base}/model/{modelId}/invoke
//	messages (Claude)         POST {base}/model/{modelId}/invoke
//	messages (Claude), stream POST {base}/model/{modelId}/invoke-with-response-stream
//
// where base is https://bedrock-runtime.{region}.amazonaws.com or the custom_host, and modelId is the request's
// model, every byte but the unreserved ones percent-encoded (model ids hold ':' and inference-profile ARNs '/').
// /v1/completions is not served: Bedrock has no text-completion API common to its models.
func (a *Adapter) NewRequest(ctx context.Context, t *providers.Target, c *providers.Call) (*http.Request, error) {
	var (
		body, model []byte
		op          string
		err         error
	)
	accept := mimeJSON
	switch c.Endpoint {
	case providers.ChatCompletions:
		var in *schema.ChatRequest
		if in, err = c.Chat(); err == nil {
			body, model, err = translateChatRequest(in)
		}
		op = "converse"
		if c.Stream {
			op, accept = "converse-stream", mimeEventStream
		}
	case providers.Embeddings:
		body, model, err = translateEmbeddingsRequest(c.Body)
		op = "invoke"
	case providers.Messages: // a Claude model's, as the caller sent it (messages.go)
		body, model, err = messagesRequest(c)
		op = "invoke"
		if c.Stream {
			op, accept = "invoke-with-response-stream", mimeEventStream
		}
	default:
		return nil, gwerr.BadRequest("", "bedrock serves /v1/chat/completions, /v1/embeddings and (Claude models) /v1/messages, not %s", c.Endpoint.Path())
	}
	if err != nil {
		return nil, err
	}
	auth, err := resolveAuth(t)
	if err != nil {
		return nil, err
	}
	base := t.BaseURL
	if base == "" {
		base = "https://bedrock-runtime." + auth.region + ".amazonaws.com"
	}
	rawURL := strings.TrimRight(base, "/") + "/model/" + escapeModelID(model) + "/" + op
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, gwerr.BadRequest("custom_host", "custom_host %q is not an http(s) URL", netguard.RedactURL(t.BaseURL))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for name, values := range t.Forward {
		if !reservedHeader(name) {
			req.Header[name] = values
		}
	}
	req.Header.Set("Content-Type", mimeJSON)
	req.Header.Set("Accept", accept)
	if err := a.authorize(ctx, req, body, auth); err != nil {
		return nil, err
	}
	return req, nil
}

// reservedHeader reports the headers a forwarded caller header must not replace: they carry the signature or
// are part of what is signed.
func reservedHeader(name string) bool {
	name = http.CanonicalHeaderKey(name)
	switch name {
	case "Authorization", "Host", "Content-Type", "Content-Length", "Accept":
		return true
	}
	return strings.HasPrefix(name, "X-Amz-")
}

// escapeModelID percent-encodes every byte of a model id except RFC 3986's unreserved characters, as AWS SDKs
// encode a path label: "anthropic.claude-3-5-sonnet-20240620-v1:0" becomes "...-v1%3A0".
func escapeModelID(id []byte) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(id) + 8)
	for _, c := range id {
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

// requestModel is the model the caller asked for, which answers repeat. A body the gateway has not read
// (c.Request nil) is scanned for it rather than decoded: an answer needs nothing else from the request, and
// decoding it all again would cost every answer a decoder's allocations.
func requestModel(c *providers.Call) string {
	if c.Request != nil {
		return c.Request.Model()
	}
	b := schema.NewBody(c.Body)
	return b.Model()
}

func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "chatcmpl-" + hex.EncodeToString(b[:])
}
