package anthropic

import (
	"github.com/llmgw/gateway/runtime/internal/anthropicmsg"
	"github.com/llmgw/gateway/runtime/providers"
)

// TranslateError turns an Anthropic error body into OpenAI's error shape, keeping the raw body in
// error.provider_error; the status stays Anthropic's.
func (Adapter) TranslateError(t *providers.Target, c *providers.Call, status int, body []byte) []byte {
	return anthropicmsg.Error(status, body)
}
