package runtime

import (
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/llmgw/gateway/runtime/catalog"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/responses"
	"github.com/llmgw/gateway/runtime/schema"
)

// The responses step: one attempt of a /v1/responses request (providers.Responses). A target whose adapter
// implements providers.NativeResponses (true) gets the caller's body as it is, at {base}/responses; any other
// target gets it translated (runtime/responses): the attempt sends responses.ToChat of the request as a chat
// completion through the same adapter, so the adapter's own translation (Anthropic, Bedrock, Gemini) applies,
// and turns its 2xx answer back with responses.FromChat, or its stream with responses.Stream. Error answers
// pass through as the adapter makes them. Everything around the attempt (retries, fallbacks, breakers, hooks,
// rate limits) sees the responses shapes.

// responsesTapKey is the context key of WithResponsesTap.
type responsesTapKey struct{}

// WithResponsesTap returns ctx carrying tap: the responses step passes each 2xx stream of a /v1/responses
// attempt, as the caller will read it (the responses event stream), through tap. Routes stores a streamed
// response's final object with it. tap must return a reader that yields what it reads unchanged, and closes
// its source when closed.
func WithResponsesTap(ctx context.Context, tap func(io.ReadCloser) io.ReadCloser) context.Context {
	return context.WithValue(ctx, responsesTapKey{}, tap)
}

// responsesStep returns the adapter one attempt of call goes through: adapter itself for every endpoint but
// providers.Responses, the responses decorator for that one.
func (e *Engine) responsesStep(ctx context.Context, adapter providers.Adapter, call *providers.Call) providers.Adapter {
	if call.Endpoint != providers.Responses {
		return adapter
	}
	tap, _ := ctx.Value(responsesTapKey{}).(func(io.ReadCloser) io.ReadCloser)
	if n, ok := adapter.(providers.NativeResponses); ok && n.NativeResponses() {
		// Native targets go through the decorator too: it fits their input to the model's window.
		return &responsesAdapter{inner: adapter, tap: tap, native: true}
	}
	return &responsesAdapter{inner: adapter, tap: tap, created: e.now().Unix()}
}

// responsesAdapter is an adapter for one attempt of a responses call. Native, it passes everything through
// the inner adapter and taps the stream. Translated, NewRequest decodes the call's body, keeps it with the
// chat completion call it makes of it, and the translators turn the inner adapter's chat answers back. It is
// made per attempt and is not safe for concurrent use.
type responsesAdapter struct {
	inner  providers.Adapter
	tap    func(io.ReadCloser) io.ReadCloser // nil: none
	native bool

	// Translated only, set by NewRequest.
	req     *schema.ResponseRequest
	chat    *providers.Call
	id      string
	created int64
}

var (
	_ providers.Adapter            = (*responsesAdapter)(nil)
	_ providers.ResponseTranslator = (*responsesAdapter)(nil)
	_ providers.StreamTranslator   = (*responsesAdapter)(nil)
	_ providers.ErrorTranslator    = (*responsesAdapter)(nil)
)

func (a *responsesAdapter) NewRequest(ctx context.Context, t *providers.Target, c *providers.Call) (*http.Request, error) {
	shared, err := c.Responses()
	if err != nil {
		return nil, err
	}
	input, fitted, err := fitToWindow(t, shared)
	if err != nil {
		return nil, err
	}
	if a.native {
		if fitted {
			call := *c
			if call.Body, err = withMember(c.Body, "input", input); err != nil {
				return nil, err
			}
			c = &call
		}
		return a.inner.NewRequest(ctx, t, c)
	}
	// The decoded request is shared by the request's attempts: this attempt translates its own copy.
	r := *shared
	req := &r
	if fitted {
		req.Input = input
	}
	stream := c.Stream // the call's, whatever override_params put in the body (providers.Call)
	req.Stream = &stream
	body, err := responses.ToChat(req)
	if err != nil {
		return nil, err
	}
	a.req, a.id = req, responses.NewID()
	a.chat = &providers.Call{Endpoint: providers.ChatCompletions, Body: body, Stream: c.Stream, Strict: c.Strict}
	return a.inner.NewRequest(ctx, t, a.chat)
}

// TranslateResponse turns the inner adapter's answer (a chat.completion, translated) into the response object.
func (a *responsesAdapter) TranslateResponse(t *providers.Target, c *providers.Call, body []byte) ([]byte, error) {
	inner := c
	if !a.native {
		inner = a.chat
	}
	if tr, ok := a.inner.(providers.ResponseTranslator); ok {
		var err error
		if body, err = tr.TranslateResponse(t, inner, body); err != nil {
			return nil, err
		}
	}
	if a.native {
		return body, nil
	}
	return responses.FromChat(body, a.req, a.id, a.created)
}

// TranslateStream turns the inner adapter's stream (chat completion chunks, translated) into the responses
// event stream, and taps it.
func (a *responsesAdapter) TranslateStream(t *providers.Target, c *providers.Call, body io.ReadCloser) io.ReadCloser {
	inner := c
	if !a.native {
		inner = a.chat
	}
	if tr, ok := a.inner.(providers.StreamTranslator); ok {
		body = tr.TranslateStream(t, inner, body)
	}
	if !a.native {
		body = responses.Stream(body, a.req, a.id, a.created)
	}
	if a.tap != nil {
		body = a.tap(body)
	}
	return body
}

// TranslateError passes the provider's error answer on as the inner adapter makes it.
func (a *responsesAdapter) TranslateError(t *providers.Target, c *providers.Call, status int, body []byte) []byte {
	inner := c
	if !a.native {
		inner = a.chat
	}
	if tr, ok := a.inner.(providers.ErrorTranslator); ok {
		return tr.TranslateError(t, inner, status, body)
	}
	return body
}

// fitToWindow applies the request's truncation (SPEC.md: disabled by default) to the target's model, as the
// catalogue knows it (runtime/catalog, with the stored provider's own "models" facts first): "disabled" with
// an input past the context window is a 400 naming input; "auto" drops the oldest items until it fits and
// returns what is kept as the new input (fitted true). req is not modified. A model the catalogue does not know
// is sent as it is: the provider judges its length.
func fitToWindow(t *providers.Target, req *schema.ResponseRequest) (input json.RawMessage, fitted bool, err error) {
	m, ok := catalog.LookupWith(t.Provider, req.Model, t.Fields[catalog.OverridesField])
	if !ok || m.ContextWindow <= 0 {
		return nil, false, nil
	}
	items, err := req.InputItems()
	if err != nil {
		return nil, false, err
	}
	mode := catalog.TruncationDisabled
	if req.Truncation != nil {
		mode = *req.Truncation
	}
	instructions, reserve := "", m.MaxOutputTokens
	if req.Instructions != nil {
		instructions = *req.Instructions
	}
	if req.MaxOutputTokens != nil {
		reserve = int(*req.MaxOutputTokens)
	}
	kept, err := catalog.Truncate(items, instructions, m.ContextWindow, reserve, mode)
	if err != nil || len(kept) == len(items) {
		return nil, false, err
	}
	if input, err = json.Marshal(kept); err != nil {
		return nil, false, err
	}
	return input, true, nil
}

// withMember returns the JSON object raw with its member name set to value, the rest as it was.
func withMember(raw []byte, name string, value json.RawMessage) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	m[name] = value
	return json.Marshal(m)
}
