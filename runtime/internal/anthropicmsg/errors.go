package anthropicmsg

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/schema"
)

// maxPlainError bounds the part of a non-JSON error body used as the message.
const maxPlainError = 512

// Error translates an Anthropic error answer ({"type":"error","error":{"type","message"}}) into OpenAI's error
// shape with provider_error.
//
// message is Anthropic's own; code is Anthropic's error type (invalid_request_error, overloaded_error, ...);
// type is the OpenAI type of that error (api_error and overloaded_error are server_error; the other Anthropic
// types are OpenAI's names already), or the type of the status when Anthropic gave none. provider_error is the
// raw body, as JSON when it is JSON, else as a string. Google-shaped errors ({"error": {"code", "message",
// "status"}}), which Vertex AI answers for Anthropic models too, are read the same way, their status as code.
func Error(status int, body []byte) []byte {
	var parsed struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	var e schema.ErrorDetail
	trimmed := bytes.TrimSpace(body)
	if json.Valid(trimmed) && len(trimmed) > 0 {
		e.ProviderError = json.RawMessage(trimmed)
		target := trimmed
		if trimmed[0] == '[' { // Google APIs sometimes answer a one-item array
			var list []json.RawMessage
			if json.Unmarshal(trimmed, &list) == nil && len(list) > 0 {
				target = list[0]
			}
		}
		_ = json.Unmarshal(target, &parsed)
	} else {
		if len(trimmed) > 0 {
			e.ProviderError, _ = json.Marshal(string(trimmed))
		}
	}
	e.Message = parsed.Error.Message
	code := parsed.Error.Type
	if code == "" {
		code = parsed.Error.Status
	}
	if e.Message == "" {
		e.Message = plainMessage(status, trimmed)
	}
	e.Type = openAIErrorType(parsed.Error.Type, status)
	if code == "" {
		code = e.Type
	}
	e.Code = &code
	return schema.MarshalError(e)
}

// openAIErrorType names an Anthropic error type the way OpenAI does.
func openAIErrorType(anthropicType string, status int) string {
	switch anthropicType {
	case "invalid_request_error", "authentication_error", "permission_error", "not_found_error", "rate_limit_error":
		return anthropicType
	case "request_too_large":
		return "invalid_request_error"
	case "api_error", "overloaded_error":
		return "server_error"
	case "timeout_error":
		return "timeout_error"
	}
	return (&gwerr.Error{Status: status}).Type()
}

// plainMessage is the message of an error body that carries none: its text when short and readable, else the
// status.
func plainMessage(status int, body []byte) string {
	if len(body) > 0 && len(body) <= maxPlainError && utf8.Valid(body) && body[0] != '{' && body[0] != '[' {
		return "the provider answered " + strconv.Itoa(status) + ": " + string(body)
	}
	text := http.StatusText(status)
	if status == 529 {
		text = "Overloaded"
	}
	if text == "" {
		return "the provider answered " + strconv.Itoa(status)
	}
	return "the provider answered " + strconv.Itoa(status) + " " + text
}
