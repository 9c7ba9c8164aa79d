package gwerr

import "encoding/json"

// Body is the JSON shape of every error answer, OpenAI's {"error": {...}}: the gateway's own errors, the
// translated errors of providers that are not OpenAI-shaped, the error event that ends a broken stream, and
// the 446 of a denying guardrail (which adds hook_results beside it).
type Body struct {
	Error Detail `json:"error"`
}

// Detail is the error member of a Body. A nil Code or Param is written as null. ProviderError, a translated
// provider error's raw body, is left out when nil (the gateway's own errors have none).
type Detail struct {
	Message       string          `json:"message"`
	Type          string          `json:"type"`
	Code          *string         `json:"code"`
	Param         *string         `json:"param"`
	ProviderError json.RawMessage `json:"provider_error,omitempty"`
}

// Body is the answer body of e: its message, type, code, and param (null when e names none).
func (e *Error) Body() Body {
	d := Detail{Message: e.Message, Type: e.Type(), Code: &e.Code}
	if e.Param != "" {
		d.Param = &e.Param
	}
	return Body{Error: d}
}
