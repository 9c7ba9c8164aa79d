package vertex

import (
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/providers/internal/claude"
)

// Claude models on Vertex AI speak Anthropic's Messages API through rawPredict and streamRawPredict: a
// /v1/messages request for one is sent as the caller wrote it, but for the model, which moves to the URL, and
// anthropic_version, which Vertex AI wants in the body. Its answer and event stream are Anthropic's own and pass
// through (runtime/messages_step.go). Gemini models get the request translated by the engine instead.

var _ providers.NativeMessages = (*Adapter)(nil)

// NativeMessages reports whether model is one of the Claude models Anthropic publishes on Vertex AI.
func (a *Adapter) NativeMessages(_ *providers.Target, model string) bool { return isAnthropic(model) }

// messagesRequest is the rawPredict body of a native Messages call, and its model.
func messagesRequest(c *providers.Call) ([]byte, string, error) {
	body, model, err := claude.CloudBody(c.Body, anthropicVersion, true)
	if err == nil && !isAnthropic(model) {
		return nil, "", gwerr.BadRequest("model", "vertex-ai serves /v1/messages natively for Claude models only, not %q", model)
	}
	return body, model, err
}
