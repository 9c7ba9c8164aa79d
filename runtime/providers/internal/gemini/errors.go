package gemini

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/schema"
)

// streamError is an error event of a stream (or an error where an answer was expected).
type streamError struct {
	e apiError
}

func (e *streamError) Error() string {
	msg := e.e.Message
	if msg == "" {
		msg = "error event"
	}
	if e.e.Status != "" {
		return "gemini: " + e.e.Status + ": " + msg
	}
	return "gemini: " + msg
}

// Error translates a Google error answer into OpenAI's error shape. Google's body is
// {"error": {"code": 400, "message": "...", "status": "INVALID_ARGUMENT", "details": [...]}}, or an array of
// such objects (streamGenerateContent), or, from OAuth endpoints, {"error": "invalid_grant",
// "error_description": "..."}. The message is Google's own; type follows the HTTP status as OpenAI names it;
// code is Google's status in lower case ("invalid_argument"); provider_error holds the raw body (as JSON when it
// is JSON, else as a string).
func Error(status int, body []byte) []byte {
	d := schema.ErrorDetail{Type: (&gwerr.Error{Status: status}).Type()}
	trimmed := bytes.TrimSpace(body)
	if json.Valid(trimmed) && len(trimmed) > 0 {
		d.ProviderError = trimmed
		if e := findError(trimmed); e != nil {
			d.Message = e.Message
			if e.Status != "" {
				code := strings.ToLower(e.Status)
				d.Code = &code
			}
		}
	} else {
		d.ProviderError, _ = json.Marshal(string(body))
		d.Message = strings.TrimSpace(string(body))
		if len(d.Message) > 512 {
			d.Message = d.Message[:512] + "..."
		}
	}
	if d.Message == "" {
		d.Message = http.StatusText(status)
		if d.Message == "" {
			d.Message = "provider error"
		}
	}
	return schema.MarshalError(d)
}

// findError reads Google's error object from an error body.
func findError(body []byte) *apiError {
	type envelope struct {
		Error            json.RawMessage `json:"error"`
		ErrorDescription string          `json:"error_description"`
	}
	var envs []envelope
	if body[0] == '[' {
		if json.Unmarshal(body, &envs) != nil {
			return nil
		}
	} else {
		var env envelope
		if json.Unmarshal(body, &env) != nil {
			return nil
		}
		envs = append(envs, env)
	}
	for _, env := range envs {
		switch contentKind(env.Error) {
		case '{':
			var e apiError
			if json.Unmarshal(env.Error, &e) == nil {
				return &e
			}
		case '"':
			var code string
			_ = json.Unmarshal(env.Error, &code)
			msg := env.ErrorDescription
			if msg == "" {
				msg = code
			}
			return &apiError{Message: msg, Status: code}
		}
	}
	return nil
}
