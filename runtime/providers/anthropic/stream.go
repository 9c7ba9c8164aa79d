package anthropic

import (
	"io"

	"github.com/llmgw/gateway/runtime/internal/anthropicmsg"
	"github.com/llmgw/gateway/runtime/providers"
)

// TranslateStream turns a Messages event stream into chat.completion.chunk events ending with data: [DONE].
func (Adapter) TranslateStream(t *providers.Target, c *providers.Call, body io.ReadCloser) io.ReadCloser {
	return anthropicmsg.Stream(body, c.Strict)
}
