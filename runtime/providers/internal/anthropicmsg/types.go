package anthropicmsg

import (
	"encoding/json"

	"github.com/llmgw/gateway/runtime/providers/internal/openaiwire"
)

// ---- OpenAI chat completion request (what callers send) ----

// openAIRequest is the part of an OpenAI chat completion request that Anthropic has an equivalent for. Messages
// are decoded one by one so that an error names its index.
type openAIRequest struct {
	Model               string            `json:"model"`
	Messages            []json.RawMessage `json:"messages"`
	MaxTokens           *int64            `json:"max_tokens"`
	MaxCompletionTokens *int64            `json:"max_completion_tokens"`
	Temperature         *float64          `json:"temperature"`
	TopP                *float64          `json:"top_p"`
	TopK                *int64            `json:"top_k"` // not OpenAI's, but Anthropic's; passed through
	N                   *int64            `json:"n"`
	Stop                json.RawMessage   `json:"stop"`
	Stream              bool              `json:"stream"`
	Tools               []json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls   *bool             `json:"parallel_tool_calls"`
	User                string            `json:"user"`
	Thinking            json.RawMessage   `json:"thinking"` // Anthropic's extended thinking, passed through
}

// openAIPart is one item of an array content. Anthropic-only keys (cache_control) are passed through; thinking
// blocks an assistant message carries back (thinking, signature, data) are kept whole.
type openAIPart struct {
	Type         string          `json:"type"`
	Text         *string         `json:"text"`
	ImageURL     json.RawMessage `json:"image_url"`
	CacheControl json.RawMessage `json:"cache_control"`
}

type openAITool struct {
	Type         string                  `json:"type"`
	Function     *openaiwire.FunctionDef `json:"function"`
	CacheControl json.RawMessage         `json:"cache_control"`
}

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

// ---- OpenAI chat completion answer (what callers get) ----

type completion struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []choice          `json:"choices"`
	Usage   *openaiwire.Usage `json:"usage,omitempty"`
}

type choice struct {
	Index        int             `json:"index"`
	Message      assistantOutput `json:"message"`
	FinishReason string          `json:"finish_reason"`
	Logprobs     *struct{}       `json:"logprobs"`
}

type assistantOutput struct {
	Role          string                `json:"role"`
	Content       *string               `json:"content"`
	ToolCalls     []openaiwire.ToolCall `json:"tool_calls,omitempty"`
	ContentBlocks []blockOut            `json:"content_blocks,omitempty"`
}

// blockOut is a content_blocks item: text, thinking (with its signature) or redacted_thinking.
type blockOut struct {
	Type      string  `json:"type"`
	Text      *string `json:"text,omitempty"`
	Thinking  *string `json:"thinking,omitempty"`
	Signature *string `json:"signature,omitempty"`
	Data      *string `json:"data,omitempty"`
}
