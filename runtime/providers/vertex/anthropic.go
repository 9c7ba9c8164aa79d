package vertex

import (
	"encoding/json"
	"io"

	"github.com/llmgw/gateway/runtime/internal/anthropicmsg"
	"github.com/llmgw/gateway/runtime/schema"
)

// anthropicVersion is the anthropic_version Vertex AI wants in the body of Claude requests.
const anthropicVersion = "vertex-2023-10-16"

// anthropicRequest translates a chat request (the call's, decoded by providers.Call.Chat) for a Claude model
// published on Vertex AI: Anthropic's Messages body, with anthropic_version in the body and the model only in
// the URL.
func anthropicRequest(in *schema.ChatRequest) ([]byte, string, error) {
	return anthropicmsg.Request(in, anthropicmsg.RequestOptions{AnthropicVersion: anthropicVersion, OmitModel: true})
}

func anthropicResponse(body []byte, strict bool) ([]byte, error) {
	return anthropicmsg.Response(body, strict)
}

func anthropicStream(body io.ReadCloser, strict bool) io.ReadCloser {
	return anthropicmsg.Stream(body, strict)
}

func anthropicError(status int, body []byte) []byte {
	return anthropicmsg.Error(status, body)
}

// anthropicShaped tells Anthropic's error body ({"type": "error", "error": {...}}) from Google's.
func anthropicShaped(body []byte) bool {
	var probe struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(body, &probe) == nil && probe.Type == "error"
}
