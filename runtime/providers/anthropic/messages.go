package anthropic

import (
	"github.com/llmgw/gateway/runtime/providers"
)

// Anthropic serves its own Messages API: a /v1/messages request reaches it as the caller sent it (the engine's
// messages step, runtime/messages_step.go, passes answer, stream and errors back unchanged), and so does a
// token count.

var _ providers.NativeMessages = Adapter{}

// NativeMessages reports true: every model of Anthropic's API speaks its Messages API.
func (Adapter) NativeMessages(*providers.Target, string) bool { return true }

// NativeCountTokens reports true: Anthropic counts a Messages request's tokens itself
// (POST {base}/messages/count_tokens).
func (Adapter) NativeCountTokens() bool { return true }

// messagesPath is the path below the base URL a call of the endpoint goes to: /messages/count_tokens for a
// token count, /messages for everything else (chat completions are sent translated there).
func messagesPath(ep providers.Endpoint) string {
	if ep == providers.MessagesCountTokens {
		return providers.MessagesCountTokens.Path()
	}
	return providers.Messages.Path()
}
