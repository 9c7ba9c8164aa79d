package anthropicmsg

import (
	"bytes"
	"encoding/json"
	"net/http"
	"unicode/utf8"

	"github.com/llmgw/gateway/internal/jsonstr"
	"github.com/llmgw/gateway/runtime/gwerr"
)

// maxErrorText bounds the text of an error body that is not OpenAI's shape when it becomes a message.
const maxErrorText = 4 << 10

// ErrorBody is Anthropic's error envelope {"type":"error","error":{"type":ErrorType(status),"message":msg}}.
func ErrorBody(status int, message string) []byte {
	return appendErrorBody(nil, ErrorType(status), message)
}

// appendErrorBody appends {"type":"error","error":{"type":typ,"message":message}}: the answer of a failed
// request and the data of a stream's error event.
func appendErrorBody(dst []byte, typ, message string) []byte {
	dst = jsonstr.AppendString(append(dst, `{"type":"error","error":{"type":`...), typ)
	dst = jsonstr.AppendString(append(dst, `,"message":`...), message)
	return append(dst, "}}"...)
}

// ErrorFromChat turns an OpenAI-shaped error body ({"error":{"message",...}}) into ErrorBody(status, message);
// a body that is not that shape keeps its text as the message (its first 4 KiB), and an empty one the
// status's text.
func ErrorFromChat(status int, body []byte) []byte {
	return ErrorBody(status, chatErrorMessage(status, body))
}

func chatErrorMessage(status int, body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	trimmed := bytes.TrimSpace(body)
	if json.Unmarshal(trimmed, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	if len(trimmed) > maxErrorText {
		trimmed = trimmed[:maxErrorText]
		for range utf8.UTFMax { // drop the bytes of a character cut in two
			if r, size := utf8.DecodeLastRune(trimmed); r != utf8.RuneError || size != 1 {
				break
			}
			trimmed = trimmed[:len(trimmed)-1]
		}
	}
	if len(trimmed) > 0 {
		return string(trimmed)
	}
	if text := http.StatusText(status); text != "" {
		return text
	}
	return "the request failed"
}

// ErrorType maps a status to Anthropic's error type: 400 invalid_request_error, 401 authentication_error,
// 402 billing_error, 403 permission_error, 404 not_found_error, 413 request_too_large, 429 rate_limit_error,
// 504 timeout_error, 529 overloaded_error, other 5xx api_error, and every other status (the gateway's 446 of
// a denying guardrail among them) invalid_request_error.
func ErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	case gwerr.StatusHooksFailed:
		return "invalid_request_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// errorTypeOfChat names an OpenAI error type (an error chunk's) the way Anthropic does.
func errorTypeOfChat(openAIType string) string {
	switch openAIType {
	case "invalid_request_error", "authentication_error", "permission_error", "not_found_error",
		"rate_limit_error", "overloaded_error", "timeout_error", "billing_error", "request_too_large":
		return openAIType
	case "rate_limit_exceeded", "tokens", "requests":
		return "rate_limit_error"
	case "insufficient_quota":
		return "billing_error"
	}
	return "api_error"
}
