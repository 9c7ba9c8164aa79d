package schema

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/jsonfield"
)

// ---- the responses API (POST /v1/responses) ----

// Bounds of a response request (SPEC.md Limits; tools as OpenAI bounds them).
const (
	MaxResponseMetadataPairs = 16
	MaxResponseMetadataKey   = 64
	MaxResponseMetadataValue = 512
	MaxResponseTools         = 128
	MaxResponseInclude       = 16
)

// ResponseIncludes are the values include accepts: SPEC.md's three, and the ones OpenAI documents beside them
// (a native provider gets them as they are; a translated one ignores them).
var ResponseIncludes = map[string]bool{
	"file_search_call.results":              true,
	"message.input_image.image_url":         true,
	"computer_call_output.output.image_url": true,
	"reasoning.encrypted_content":           true,
	"message.output_text.logprobs":          true,
	"web_search_call.action.sources":        true,
	"web_search_call.results":               true,
	"code_interpreter_call.outputs":         true,
}

// ResponseRequest is POST /v1/responses' body as the gateway reads it. Members the gateway does not read are
// not declared: a native provider gets the caller's bytes, not this struct.
type ResponseRequest struct {
	Model              string            `json:"model"`
	Input              json.RawMessage   `json:"input"` // a string or an array of items
	Instructions       *string           `json:"instructions"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Store              *bool             `json:"store"`
	Stream             *bool             `json:"stream"`
	Temperature        *float64          `json:"temperature"`
	TopP               *float64          `json:"top_p"`
	MaxOutputTokens    *int64            `json:"max_output_tokens"`
	Tools              []json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls  *bool             `json:"parallel_tool_calls"`
	Truncation         *string           `json:"truncation"`
	Include            []string          `json:"include"`
	Metadata           map[string]string `json:"metadata"`
	Reasoning          json.RawMessage   `json:"reasoning"`
	Text               json.RawMessage   `json:"text"`
	User               string            `json:"user"`
}

// DecodeResponseRequest decodes and validates a response request body: model and input required; input a
// string or an array of objects; temperature 0 to 2; top_p 0 to 1; max_output_tokens positive; metadata at most
// 16 pairs, keys at most 64 characters, values at most 512; truncation auto or disabled; tool_choice none, auto,
// required or {"type": "function", "name": ...}; tools objects with a type, at most 128; include values of
// ResponseIncludes; reasoning and text objects. Errors are 400s naming the field (input[2], metadata.k).
func DecodeResponseRequest(body []byte) (*ResponseRequest, error) {
	var r ResponseRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, DecodeError(body, "", err)
	}
	if err := r.validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

func (r *ResponseRequest) validate() error {
	if r.Model == "" {
		return gwerr.BadRequest("model", "model is required")
	}
	if err := r.validateInput(); err != nil {
		return err
	}
	if t := r.Temperature; t != nil && (*t < 0 || *t > 2) {
		return gwerr.BadRequest("temperature", "temperature must be between 0 and 2, not %g", *t)
	}
	if p := r.TopP; p != nil && (*p < 0 || *p > 1) {
		return gwerr.BadRequest("top_p", "top_p must be between 0 and 1, not %g", *p)
	}
	if m := r.MaxOutputTokens; m != nil && *m < 1 {
		return gwerr.BadRequest("max_output_tokens", "max_output_tokens must be at least 1, not %d", *m)
	}
	if err := ValidateResponseMetadata(r.Metadata); err != nil {
		return err
	}
	if t := r.Truncation; t != nil && *t != "auto" && *t != "disabled" {
		return gwerr.BadRequest("truncation", "truncation must be auto or disabled, not %q", *t)
	}
	if err := r.validateTools(); err != nil {
		return err
	}
	if len(r.Include) > MaxResponseInclude {
		return gwerr.BadRequest("include", "include holds at most %d values", MaxResponseInclude)
	}
	for i, v := range r.Include {
		if !ResponseIncludes[v] {
			return gwerr.BadRequest(Index("include", i), "%s %q is not a known include value", Index("include", i), v)
		}
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"reasoning", r.Reasoning}, {"text", r.Text}} {
		if k := jsonfield.Kind(f.raw); k != "nothing" && k != "null" && k != "object" {
			return gwerr.BadRequest(f.name, "%s must be an object", f.name)
		}
	}
	return nil
}

// ValidateResponseMetadata checks SPEC.md's metadata limits: at most 16 pairs, keys at most 64 characters,
// values at most 512.
func ValidateResponseMetadata(m map[string]string) error {
	if len(m) > MaxResponseMetadataPairs {
		return gwerr.BadRequest("metadata", "metadata holds at most %d pairs, not %d", MaxResponseMetadataPairs, len(m))
	}
	for k, v := range m {
		if utf8.RuneCountInString(k) > MaxResponseMetadataKey {
			return gwerr.BadRequest("metadata", "metadata key %.20q... is longer than %d characters", k, MaxResponseMetadataKey)
		}
		if utf8.RuneCountInString(v) > MaxResponseMetadataValue {
			return gwerr.BadRequest("metadata."+k, "metadata.%s is longer than %d characters", k, MaxResponseMetadataValue)
		}
	}
	return nil
}

func (r *ResponseRequest) validateInput() error {
	switch jsonfield.Kind(r.Input) {
	case "nothing", "null":
		return gwerr.BadRequest("input", "input is required")
	case "string":
		return nil
	case "array":
		var items []json.RawMessage
		if err := json.Unmarshal(r.Input, &items); err != nil {
			return DecodeError(r.Input, "input", err)
		}
		if len(items) == 0 {
			return gwerr.BadRequest("input", "input must not be an empty array")
		}
		for i, it := range items {
			if jsonfield.Kind(it) != "object" {
				return gwerr.BadRequest(Index("input", i), "%s must be an object", Index("input", i))
			}
		}
		return nil
	}
	return gwerr.BadRequest("input", "input must be a string or an array of items")
}

func (r *ResponseRequest) validateTools() error {
	if len(r.Tools) > MaxResponseTools {
		return gwerr.BadRequest("tools", "tools holds at most %d tools, not %d", MaxResponseTools, len(r.Tools))
	}
	for i, raw := range r.Tools {
		var t struct {
			Type string `json:"type"`
		}
		if jsonfield.Kind(raw) != "object" {
			return gwerr.BadRequest(Index("tools", i), "%s must be an object", Index("tools", i))
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return DecodeError(raw, Index("tools", i), err)
		}
		if t.Type == "" {
			return gwerr.BadRequest(Index("tools", i)+".type", "%s.type is required", Index("tools", i))
		}
	}
	switch jsonfield.Kind(r.ToolChoice) {
	case "nothing", "null":
		return nil
	case "string":
		var s string
		_ = json.Unmarshal(r.ToolChoice, &s)
		if s != "none" && s != "auto" && s != "required" {
			return gwerr.BadRequest("tool_choice", "tool_choice must be none, auto, required or a function object, not %q", s)
		}
		return nil
	case "object":
		var c ResponseToolChoice
		if err := json.Unmarshal(r.ToolChoice, &c); err != nil {
			return DecodeError(r.ToolChoice, "tool_choice", err)
		}
		if c.Type != "function" {
			return gwerr.BadRequest("tool_choice.type", "tool_choice.type must be function, not %q", c.Type)
		}
		if c.Name == "" {
			return gwerr.BadRequest("tool_choice.name", "tool_choice.name is required")
		}
		return nil
	}
	return gwerr.BadRequest("tool_choice", "tool_choice must be none, auto, required or a function object")
}

// ResponseToolChoice is the object form of a response request's tool_choice: {"type": "function", "name": ...}.
type ResponseToolChoice struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// InputItems returns the input as a list of items: a string input becomes one user message item
// {"type":"message","role":"user","content":[{"type":"input_text","text":...}]}; an array is returned item by
// item (views into the request's bytes).
func (r *ResponseRequest) InputItems() ([]json.RawMessage, error) {
	switch jsonfield.Kind(r.Input) {
	case "string":
		var s string
		if err := json.Unmarshal(r.Input, &s); err != nil {
			return nil, DecodeError(r.Input, "input", err)
		}
		item, err := json.Marshal(map[string]any{"type": "message", "role": "user",
			"content": []map[string]string{{"type": "input_text", "text": s}}})
		if err != nil {
			return nil, err
		}
		return []json.RawMessage{item}, nil
	case "array":
		var items []json.RawMessage
		if err := json.Unmarshal(r.Input, &items); err != nil {
			return nil, DecodeError(r.Input, "input", err)
		}
		return items, nil
	}
	return nil, gwerr.BadRequest("input", "input must be a string or an array of items")
}

// Response is the response object (object "response"): SPEC.md's fields, every required one present and null
// where allowed.
type Response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Error              *ResponseError     `json:"error"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int64             `json:"max_output_tokens"`
	Model              string             `json:"model"`
	Output             []json.RawMessage  `json:"output"`
	OutputText         *string            `json:"output_text"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Reasoning          json.RawMessage    `json:"reasoning"`
	Store              bool               `json:"store"`
	Temperature        *float64           `json:"temperature"`
	Text               json.RawMessage    `json:"text"`
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	Tools              []json.RawMessage  `json:"tools"`
	TopP               *float64           `json:"top_p"`
	Truncation         string             `json:"truncation"`
	Usage              *ResponseUsage     `json:"usage"`
	User               *string            `json:"user,omitempty"`
	Metadata           map[string]string  `json:"metadata"`
}

// Response statuses (SPEC.md States).
const (
	ResponseCompleted  = "completed"
	ResponseFailed     = "failed"
	ResponseInProgress = "in_progress"
	ResponseIncomplete = "incomplete"
)

// ResponseError is a response's error: {code, message}, code such as server_error.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetails is a response's incomplete_details: reason max_output_tokens or content_filter.
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// ResponseUsage is a response's usage.
type ResponseUsage struct {
	InputTokens         int64               `json:"input_tokens"`
	InputTokensDetails  InputTokensDetails  `json:"input_tokens_details"`
	OutputTokens        int64               `json:"output_tokens"`
	OutputTokensDetails OutputTokensDetails `json:"output_tokens_details"`
	TotalTokens         int64               `json:"total_tokens"`
}

// InputTokensDetails is usage.input_tokens_details.
type InputTokensDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
}

// OutputTokensDetails is usage.output_tokens_details.
type OutputTokensDetails struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}
