package anthropic

import (
	"github.com/llmgw/gateway/runtime/internal/anthropicmsg"
	"github.com/llmgw/gateway/runtime/providers"
)

// TranslateResponse turns a Messages answer into a chat.completion; with Call.Strict false it keeps the text and
// thinking blocks in message.content_blocks.
func (Adapter) TranslateResponse(t *providers.Target, c *providers.Call, body []byte) ([]byte, error) {
	return anthropicmsg.Response(body, c.Strict)
}
