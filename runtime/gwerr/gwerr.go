package gwerr

import (
	"fmt"
	"net/http"
)

// Codes used across the gateway. A code is stable and machine-readable; the message is for people.
const (
	CodeInvalidRequest       = "invalid_request"
	CodeInvalidJSON          = "invalid_json"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeMissingAPIKey        = "missing_api_key"
	CodeInvalidAPIKey        = "invalid_api_key"
	CodeForbidden            = "forbidden"
	CodeNotFound             = "not_found"
	CodeConflict             = "conflict"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeRequestTimeout       = "request_timeout"
	CodeRequestTooLarge      = "request_too_large"
	CodeRateLimited          = "rate_limited"
	CodeBudgetExceeded       = "budget_exceeded"
	CodeHooksFailed          = "hooks_failed"
	CodeInternal             = "internal"
	CodeUpstream             = "upstream_error"
	CodeUnavailable          = "unavailable"
)

// StatusHooksFailed is the status of a request stopped by a guardrail or hook that denies.
const StatusHooksFailed = 446

// Error is the gateway's one error type. It is created where the fact is known (an adapter that reads an
// upstream 429, a validator that finds a bad field) and turned into an HTTP answer in exactly one place,
// the routes package. Never wrap an *Error in another *Error; wrap with fmt.Errorf("...: %w", err) instead.
type Error struct {
	// Status is the HTTP status the caller gets.
	Status int
	// Code is a stable, machine-readable identifier such as "invalid_api_key".
	Code string
	// Message says what went wrong in words a caller can act on.
	Message string
	// Param names the offending input (a body field's JSON path, a header or a query parameter), or is empty.
	Param string
	// Err is the underlying cause, kept for logs; it is never shown to callers.
	Err error
	// Header holds response headers the answer must carry, such as retry-after and x-ratelimit-* on a 429.
	Header http.Header
}

// Error implements error.
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%d %s: %s: %v", e.Status, e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Type is the OpenAI-style error type derived from the status, as clients switch on it.
func (e *Error) Type() string {
	switch {
	case e.Status == http.StatusUnauthorized:
		return "authentication_error"
	case e.Status == http.StatusForbidden:
		return "permission_error"
	case e.Status == http.StatusNotFound:
		return "not_found_error"
	case e.Status == http.StatusRequestTimeout:
		return "timeout_error"
	case e.Status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case e.Status == StatusHooksFailed:
		return "hooks_failed"
	case e.Status >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}

// New returns an error with the given status, code and message.
func New(status int, code, message string) *Error {
	return &Error{Status: status, Code: code, Message: message}
}

// Newf is New with a formatted message.
func Newf(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// BadRequest is a 400 about the input named by param.
func BadRequest(param, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Param: param, Message: fmt.Sprintf(format, args...)}
}

// NotFound is a 404 for an unknown ID; what names the kind of thing ("prompt", "api key").
func NotFound(what, id string) *Error {
	return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: fmt.Sprintf("%s %q not found", what, id)}
}

// Forbidden is a 403 with the reason.
func Forbidden(format string, args ...any) *Error {
	return &Error{Status: http.StatusForbidden, Code: CodeForbidden, Message: fmt.Sprintf(format, args...)}
}

// Internal is a 500 that hides its cause from the caller and keeps it for the log.
func Internal(err error) *Error {
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error", Err: err}
}
