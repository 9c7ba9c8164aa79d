package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/internal/anthropicmsg"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
)

// The messages step: one attempt of an Anthropic Messages request (providers.Messages, POST /v1/messages) or
// of its token count (providers.MessagesCountTokens). A target whose adapter implements
// providers.NativeMessages for the request's model gets the caller's body as it is (the adapter fits it to the
// provider's addressing: Vertex AI and Bedrock take the model in the URL), and its answer, stream and errors
// pass through (an error that is not Anthropic's shape, such as Google's or AWS's, is put in it). Any other
// target gets the request translated (anthropicmsg.ToChat) and sent as a chat completion through the same
// adapter, so the adapter's own translation (Bedrock's Converse, Gemini) applies; its answer, stream and errors
// come back in Anthropic's shapes (FromChat, StreamFromChat, ErrorFromChat). A token count is forwarded only to
// adapters that also implement nativeCountTokens (Anthropic); for every other target the gateway estimates it
// without calling the provider. Everything around the attempt (retries, fallbacks, breakers, hooks, rate
// limits, the cache) sees the Messages shapes.

// nativeCountTokens is implemented by adapters whose provider counts a Messages request's tokens itself
// (POST {base}/messages/count_tokens): a MessagesCountTokens call goes to them as it is.
type nativeCountTokens interface {
	NativeCountTokens() bool
}

// nativeMessagesStream is implemented by native adapters whose provider frames a streamed Messages answer its
// own way (Bedrock's event stream): MessagesStream turns it into Anthropic's server-sent events, each event as
// soon as the provider's frame that holds it has been read, and closes body when closed.
type nativeMessagesStream interface {
	MessagesStream(t *providers.Target, c *providers.Call, body io.ReadCloser) io.ReadCloser
}

// messagesStep returns the adapter one attempt of call goes through: adapter itself for every endpoint but
// the two of Anthropic's Messages API, the native or translating decorator for those. local, when not nil, is
// the attempt's answer made without calling the provider (an estimated token count).
func (e *Engine) messagesStep(adapter providers.Adapter, t *providers.Target, call *providers.Call) (_ providers.Adapter, local *outcome) {
	if call.Endpoint != providers.Messages && call.Endpoint != providers.MessagesCountTokens {
		return adapter, nil
	}
	body := schema.NewBody(call.Body)
	model := body.Model()
	n, ok := adapter.(providers.NativeMessages)
	native := ok && n.NativeMessages(t, model)
	if call.Endpoint == providers.MessagesCountTokens {
		if c, ok := adapter.(nativeCountTokens); native && ok && c.NativeCountTokens() {
			return &messagesNative{inner: adapter}, nil
		}
		count, err := anthropicmsg.CountTokens(call.Body)
		if err != nil {
			return adapter, &outcome{err: asGatewayError(err)}
		}
		return adapter, &outcome{status: http.StatusOK, header: jsonContentType, body: count}
	}
	if native {
		return &messagesNative{inner: adapter}, nil
	}
	return &messagesAdapter{inner: adapter, model: model}, nil
}

// messagesNative passes a Messages call, its answer and its stream through the inner adapter unchanged (but
// for a provider's own stream framing), and puts error answers in Anthropic's shape when they are not. It holds
// no state of the call.
type messagesNative struct {
	inner providers.Adapter
}

var (
	_ providers.ResponseTranslator = (*messagesNative)(nil)
	_ providers.StreamTranslator   = (*messagesNative)(nil)
	_ providers.ErrorTranslator    = (*messagesNative)(nil)
)

func (a *messagesNative) NewRequest(ctx context.Context, t *providers.Target, c *providers.Call) (*http.Request, error) {
	if b := schema.NewBody(c.Body); c.Endpoint == providers.Messages && b.Stream() != c.Stream {
		body, err := withStream(c.Body, c.Stream)
		if err != nil {
			return nil, err
		}
		call := *c
		call.Body, call.Request = body, nil
		c = &call
	}
	return a.inner.NewRequest(ctx, t, c)
}

// withStream returns body with its "stream" member saying stream: the call's Stream is what the engine reads,
// whatever override_params put in the body (providers.Call). body itself when it says so already.
func withStream(body []byte, stream bool) ([]byte, error) {
	if b := schema.NewBody(body); b.Stream() == stream {
		return body, nil
	}
	return withMember(body, "stream", json.RawMessage(boolJSON(stream)))
}

// TranslateResponse passes the provider's Anthropic message on as it is.
func (a *messagesNative) TranslateResponse(_ *providers.Target, _ *providers.Call, body []byte) ([]byte, error) {
	return body, nil
}

// TranslateStream passes Anthropic's event stream on, reframed by the adapter when its provider frames it.
func (a *messagesNative) TranslateStream(t *providers.Target, c *providers.Call, body io.ReadCloser) io.ReadCloser {
	if s, ok := a.inner.(nativeMessagesStream); ok {
		return s.MessagesStream(t, c, body)
	}
	return body
}

// TranslateError passes an Anthropic error body on; any other (a cloud's own, a proxy's page) is read by the
// adapter's error translator for its message and answered in Anthropic's shape.
func (a *messagesNative) TranslateError(t *providers.Target, c *providers.Call, status int, body []byte) []byte {
	if anthropicError(body) {
		return body
	}
	if tr, ok := a.inner.(providers.ErrorTranslator); ok {
		body = tr.TranslateError(t, c, status, body)
	}
	return anthropicmsg.ErrorFromChat(status, body)
}

// messagesAdapter is an adapter for one translated attempt of a Messages call: NewRequest makes a chat
// completion call of it and sends that through the inner adapter, and the translators turn the inner adapter's
// chat answers back into Anthropic's. It is made per attempt and is not safe for concurrent use.
type messagesAdapter struct {
	inner providers.Adapter
	model string          // the model the answer reports: the one the request named
	chat  *providers.Call // set by NewRequest
}

var (
	_ providers.ResponseTranslator = (*messagesAdapter)(nil)
	_ providers.StreamTranslator   = (*messagesAdapter)(nil)
	_ providers.ErrorTranslator    = (*messagesAdapter)(nil)
)

func (a *messagesAdapter) NewRequest(ctx context.Context, t *providers.Target, c *providers.Call) (*http.Request, error) {
	body, err := anthropicmsg.ToChat(c.Body)
	if err != nil {
		return nil, err
	}
	if body, err = withStream(body, c.Stream); err != nil {
		return nil, err
	}
	a.chat = &providers.Call{Endpoint: providers.ChatCompletions, Body: body, Stream: c.Stream, Strict: c.Strict}
	return a.inner.NewRequest(ctx, t, a.chat)
}

func boolJSON(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// TranslateResponse turns the inner adapter's answer (a chat.completion, translated) into an Anthropic message.
func (a *messagesAdapter) TranslateResponse(t *providers.Target, _ *providers.Call, body []byte) ([]byte, error) {
	if tr, ok := a.inner.(providers.ResponseTranslator); ok {
		var err error
		if body, err = tr.TranslateResponse(t, a.chat, body); err != nil {
			return nil, err
		}
	}
	return anthropicmsg.FromChat(body, a.model)
}

// TranslateStream turns the inner adapter's stream (chat completion chunks, translated) into Anthropic's
// event stream.
func (a *messagesAdapter) TranslateStream(t *providers.Target, _ *providers.Call, body io.ReadCloser) io.ReadCloser {
	if tr, ok := a.inner.(providers.StreamTranslator); ok {
		body = tr.TranslateStream(t, a.chat, body)
	}
	return anthropicmsg.StreamFromChat(body, a.model)
}

// TranslateError turns the inner adapter's error answer (OpenAI's shape, translated) into Anthropic's.
func (a *messagesAdapter) TranslateError(t *providers.Target, _ *providers.Call, status int, body []byte) []byte {
	if tr, ok := a.inner.(providers.ErrorTranslator); ok {
		body = tr.TranslateError(t, a.chat, status, body)
	}
	return anthropicmsg.ErrorFromChat(status, body)
}

// anthropicError tells Anthropic's error body ({"type": "error", "error": {...}}) from any other.
func anthropicError(body []byte) bool {
	var probe struct {
		Type  string          `json:"type"`
		Error json.RawMessage `json:"error"`
	}
	return json.Unmarshal(body, &probe) == nil && probe.Type == "error" && len(probe.Error) > 0
}

// messagesErrorAnswer puts a Messages request's error answer in Anthropic's shape when the engine made it (a
// guardrail's 446) or a provider's error came through in another: Anthropic's SDKs read only their own.
func messagesErrorAnswer(req *Request, resp *Response) {
	if req.Endpoint != providers.Messages && req.Endpoint != providers.MessagesCountTokens {
		return
	}
	if resp.Stream != nil || (resp.Status >= 200 && resp.Status < 300) || anthropicError(resp.Body) {
		return
	}
	body := anthropicmsg.ErrorFromChat(resp.Status, resp.Body)
	// A guardrail's 446 keeps its verdicts: Anthropic's envelope has no place for them, so they go beside it, where
	// Anthropic's SDKs ignore them and a caller who looks finds them.
	var denied struct {
		HookResults json.RawMessage `json:"hook_results"`
	}
	if resp.Status == gwerr.StatusHooksFailed && json.Unmarshal(resp.Body, &denied) == nil && len(denied.HookResults) > 0 &&
		len(body) > 0 && body[len(body)-1] == '}' {
		body = append(append(append(body[:len(body)-1], `,"hook_results":`...), denied.HookResults...), '}')
	}
	resp.Body = body
	h := resp.Header.Clone() // the header may be shared (jsonContentType)
	if h == nil {
		h = make(http.Header, 1)
	}
	h.Set("Content-Type", "application/json")
	resp.Header = h
}

// MessagesErrorBody is Anthropic's error envelope of status and message, for routes to answer errors of the
// Messages endpoints in the shape Anthropic's SDKs read.
func MessagesErrorBody(status int, message string) []byte {
	return anthropicmsg.ErrorBody(status, message)
}

// MessagesErrorEventSent reports a broken Messages stream that has already given the caller its "error"
// event (a translated stream does), so that the relay adds none of its own.
func MessagesErrorEventSent(err error) bool {
	return errors.Is(err, anthropicmsg.ErrErrorEventSent)
}
