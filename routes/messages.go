package routes

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/jsonfield"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
)

// Anthropic's Messages API (DESIGN.md "Compatibility ingress (contract)"): POST /v1/messages and
// /v1/messages/count_tokens in Anthropic's wire format, so that Anthropic's SDKs and coding agents work with
// ANTHROPIC_BASE_URL pointing at the gateway and a gateway key as their API key. A request is an inference
// request like a chat completion (every routing header, config, retry, guardrail, cache and rate-limit policy
// applies); the engine sends it natively or translated (runtime/messages_step.go). What is Anthropic's here:
// the authentication (messagesAuth), the checks of the body that any provider needs (checkMessages), and the
// error envelope of every answer on these paths (writeMessagesError, through writeError).

// messagesPath is the path of POST /v1/messages; its token count is below it.
const messagesPath = "/v1/messages"

// HeaderAnthropicAPIKey is the header Anthropic's SDKs send their API key in (when not as a Bearer token).
const HeaderAnthropicAPIKey = "x-api-key"

// messagesRoutes registers the two endpoints on the app itself, ahead of the /v1 group: their callers
// authenticate as Anthropic's SDKs do, which messagesAuth turns into the gateway's own check.
func (s *Server) messagesRoutes() {
	s.app.Post(messagesPath, s.messagesAuth, s.createMessage)
	s.app.Post(messagesPath+"/count_tokens", s.messagesAuth, s.countMessageTokens)
}

// isMessagesPath tells the paths whose answers, errors included, are in Anthropic's shape: /v1/messages and
// anything below it, as the router matches them (case-insensitive, a trailing slash allowed).
func isMessagesPath(path string) bool {
	if len(path) < len(messagesPath) || !strings.EqualFold(path[:len(messagesPath)], messagesPath) {
		return false
	}
	rest := path[len(messagesPath):]
	return rest == "" || rest[0] == '/'
}

// messagesAuth finds the caller's gateway key as DESIGN.md's contract has it: x-gateway-api-key, or, when that
// is absent, x-api-key, or else an Authorization Bearer token (Anthropic's SDKs send their key one way or the
// other). The key found moves to x-gateway-api-key, and its header is dropped, so that the gateway's own check
// (authenticate) judges it and it never reaches a provider: a Bearer token is otherwise the provider's key. With
// x-gateway-api-key present, an x-api-key without an Authorization header is the caller's provider key, as a
// Bearer token is on the other endpoints. An x-api-key or Bearer token that repeats the gateway key (an SDK given
// it as both API key and auth token) is dropped as well: it is no provider's key, and would go upstream as one.
func (s *Server) messagesAuth(c *fiber.Ctx) error {
	h := &c.Request().Header
	apiKey := strings.Clone(c.Get(HeaderAnthropicAPIKey))
	token, bearer := bearerToken(c.Get(fiber.HeaderAuthorization))
	token = strings.Clone(token)
	key := strings.Clone(c.Get(HeaderAPIKey))
	switch {
	case key != "":
	case apiKey != "":
		key = apiKey
	case bearer && token != "":
		key = token
	default:
		return &gwerr.Error{Status: fiber.StatusUnauthorized, Code: gwerr.CodeMissingAPIKey, Param: HeaderAnthropicAPIKey,
			Message: "missing gateway API key: send it in x-api-key, as Authorization: Bearer, or in x-gateway-api-key"}
	}
	h.Set(HeaderAPIKey, key)
	if bearer && token == key {
		h.Del(fiber.HeaderAuthorization)
	}
	switch {
	case apiKey == "":
	case apiKey == key:
		h.Del(HeaderAnthropicAPIKey)
	case len(h.Peek(fiber.HeaderAuthorization)) == 0: // the provider's key, where the adapters read it
		h.Set(fiber.HeaderAuthorization, "Bearer "+apiKey)
		h.Del(HeaderAnthropicAPIKey)
	}
	return s.authenticate(c)
}

// bearerToken is the token of an Authorization: Bearer header.
func bearerToken(auth string) (string, bool) {
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok {
		token, ok = strings.CutPrefix(auth, "bearer ")
	}
	return strings.TrimSpace(token), ok
}

// createMessage answers POST /v1/messages.
func (s *Server) createMessage(c *fiber.Ctx) error {
	return s.messagesCall(c, providers.Messages)
}

// countMessageTokens answers POST /v1/messages/count_tokens: the provider's count where it counts (Anthropic),
// the gateway's estimate elsewhere ({"input_tokens": N}).
func (s *Server) countMessageTokens(c *fiber.Ctx) error {
	return s.messagesCall(c, providers.MessagesCountTokens)
}

func (s *Server) messagesCall(c *fiber.Ctx, ep providers.Endpoint) error {
	if err := requireJSON(c); err != nil {
		return err
	}
	// The body is read once, by limitBody, into a buffer the engine can keep past the handler (ownedBody).
	body, err := schema.ReadBody(ownedBody(c))
	if err != nil {
		return err
	}
	if err := checkMessages(body.Raw(), ep); err != nil {
		return err
	}
	if ep == providers.MessagesCountTokens && body.Stream() {
		return gwerr.BadRequest("stream", "a token count cannot be streamed")
	}
	req, err := newEngineRequest(c, ep, body)
	if err != nil {
		return err
	}
	return s.run(c, req, nil)
}

// maxMessagesTokens bounds max_tokens: no model answers more, and a bound keeps estimates and budgets sane.
const maxMessagesTokens = 1 << 24

// checkMessages checks what every provider needs of a Messages request before it is routed: a model, a
// messages array and (to create a message) max_tokens, which Anthropic's API requires. The rest is judged by
// the translation (a 400 naming the field) or, for a native target, by the provider.
func checkMessages(raw []byte, ep providers.Endpoint) error {
	o, err := jsonfield.NewObject(raw, "")
	if err != nil {
		return err
	}
	if _, _, err := o.Str("model", true, true); err != nil {
		return err
	}
	if _, err := o.Array("messages", true); err != nil {
		return err
	}
	if ep == providers.Messages {
		if _, err := o.Integer("max_tokens", true, 1, maxMessagesTokens); err != nil {
			return err
		}
	}
	return nil
}

// writeMessagesError answers an error in Anthropic's envelope ({"type": "error", "error": {"type", "message"}})
// with the error's status and headers (a 429's retry-after).
func writeMessagesError(c *fiber.Ctx, ge *gwerr.Error) error {
	for name, values := range ge.Header {
		for _, v := range values {
			c.Response().Header.Add(name, v)
		}
	}
	message := ge.Message
	if ge.Param != "" && !strings.Contains(message, ge.Param) {
		message = ge.Param + ": " + message
	}
	c.Status(ge.Status)
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(runtime.MessagesErrorBody(ge.Status, message))
}
