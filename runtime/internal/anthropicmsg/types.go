package anthropicmsg

import "encoding/json"

// ---- Anthropic Messages request (what the provider receives) ----

type messagesRequest struct {
	AnthropicVersion string           `json:"anthropic_version,omitempty"`
	Model            string           `json:"model,omitempty"`
	System           []textBlock      `json:"system,omitempty"`
	Messages         []messageParam   `json:"messages"`
	MaxTokens        int64            `json:"max_tokens"`
	Temperature      *float64         `json:"temperature,omitempty"`
	TopP             *float64         `json:"top_p,omitempty"`
	TopK             *int64           `json:"top_k,omitempty"`
	StopSequences    []string         `json:"stop_sequences,omitempty"`
	Stream           bool             `json:"stream,omitempty"`
	Tools            []toolParam      `json:"tools,omitempty"`
	ToolChoice       *toolChoiceParam `json:"tool_choice,omitempty"`
	Metadata         *metadataParam   `json:"metadata,omitempty"`
	Thinking         json.RawMessage  `json:"thinking,omitempty"`
}

type messageParam struct {
	Role    string `json:"role"`
	Content []any  `json:"content"` // textBlock, imageBlock, toolUseBlock, toolResultBlock or json.RawMessage
}

type textBlock struct {
	Type         string          `json:"type"` // "text"
	Text         string          `json:"text"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

type imageBlock struct {
	Type         string          `json:"type"` // "image"
	Source       imageSource     `json:"source"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

type imageSource struct {
	Type      string `json:"type"` // "base64" or "url"
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type toolUseBlock struct {
	Type  string          `json:"type"` // "tool_use"
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type toolResultBlock struct {
	Type      string `json:"type"` // "tool_result"
	ToolUseID string `json:"tool_use_id"`
	Content   any    `json:"content,omitempty"` // string or []any of text and image blocks
}

type toolParam struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

type toolChoiceParam struct {
	Type                   string `json:"type"` // auto, any, tool, none
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

type metadataParam struct {
	UserID string `json:"user_id"`
}

// ---- Anthropic Messages answer (what the provider returns) ----

type message struct {
	ID         string         `json:"id"`
	Type       string         `json:"type"`
	Role       string         `json:"role"`
	Model      string         `json:"model"`
	Content    []contentBlock `json:"content"`
	StopReason string         `json:"stop_reason"`
	Usage      *usage         `json:"usage"`
	Error      *apiError      `json:"error"` // set when type is "error"
}

type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"` // redacted_thinking
}

// usage counts tokens. Cache counts are pointers: absent and 0 differ (only a reported count is passed on).
type usage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

type apiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}
