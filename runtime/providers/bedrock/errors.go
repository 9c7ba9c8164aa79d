package bedrock

import (
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
)

// maxPlainErrorMessage bounds the message taken from an error body that is not JSON (an HTML page of a proxy).
const maxPlainErrorMessage = 1 << 10

// bedrockError is a Bedrock error body: {"message": "..."}. Some front ends spell it "Message"; AWS JSON
// protocols may add "__type" or "code" naming the exception.
type bedrockError struct {
	Message  string `json:"message"`
	MessageU string `json:"Message"`
	Type     string `json:"__type"`
	Code     string `json:"code"`
}

// openaiError is the error body TranslateError writes.
type openaiError = schema.ErrorBody

// TranslateError turns a Bedrock error answer into OpenAI's error shape. The message is Bedrock's own; the raw
// body is kept in error.provider_error (as JSON when it is JSON, else as a string). The type follows the status
// as OpenAI's does; the code is the exception name when the body carries one, else the gateway's code for the
// status (429 rate_limited, ...). The exception name Bedrock sends in the x-amzn-ErrorType header is not seen
// here: the ErrorTranslator contract passes the status and body only.
func (a *Adapter) TranslateError(t *providers.Target, c *providers.Call, status int, body []byte) []byte {
	var detail schema.ErrorDetail
	var be bedrockError
	if json.Valid(body) {
		detail.ProviderError = json.RawMessage(body)
		_ = json.Unmarshal(body, &be)
	} else {
		detail.ProviderError, _ = json.Marshal(strings.ToValidUTF8(string(body), "\uFFFD"))
	}
	detail.Message = be.Message
	if detail.Message == "" {
		detail.Message = be.MessageU
	}
	if detail.Message == "" && !json.Valid(body) {
		detail.Message = plainMessage(body)
	}
	if detail.Message == "" {
		detail.Message = "bedrock answered " + http.StatusText(status)
	}
	detail.Type = (&gwerr.Error{Status: status}).Type()
	code := exceptionName(be.Type)
	if code == "" {
		code = exceptionName(be.Code)
	}
	if code == "" {
		code = statusCode(status)
	}
	detail.Code = &code
	return schema.MarshalError(detail)
}

// exceptionName trims an AWS error type such as "com.amazon.bedrock#ValidationException:http://..." to
// "ValidationException".
func exceptionName(s string) string {
	if i := strings.IndexByte(s, ':'); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndexByte(s, '#'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(s)
}

// statusCode is the gateway's code for an upstream status without an exception name.
func statusCode(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return gwerr.CodeInvalidAPIKey
	case status == http.StatusForbidden:
		return gwerr.CodeForbidden
	case status == http.StatusNotFound:
		return gwerr.CodeNotFound
	case status == http.StatusRequestTimeout:
		return gwerr.CodeRequestTimeout
	case status == http.StatusTooManyRequests:
		return gwerr.CodeRateLimited
	case status == http.StatusServiceUnavailable:
		return gwerr.CodeUnavailable
	case status >= 500:
		return gwerr.CodeUpstream
	default:
		return gwerr.CodeInvalidRequest
	}
}

func plainMessage(body []byte) string {
	s := strings.TrimSpace(strings.ToValidUTF8(string(body), "\uFFFD"))
	if len(s) > maxPlainErrorMessage {
		cut := maxPlainErrorMessage
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
