package openaiwire

import (
	"encoding/json"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// finish_reason values of a choice.
const (
	FinishStop          = "stop"
	FinishLength        = "length"
	FinishToolCalls     = "tool_calls"
	FinishContentFilter = "content_filter"
)

// ---- chat completion request (what callers send) ----

// ChatMessage is one item of a request's messages.
type ChatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []ToolCall      `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

// Tool is one item of a request's tools.
type Tool struct {
	Type     string       `json:"type"`
	Function *FunctionDef `json:"function"`
}

// FunctionDef declares a function tool.
type FunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ---- tool calls (requests and answers) ----

// ToolCall is a tool call of an assistant message, as callers send it back and as answers carry it.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function a tool call calls; Arguments is a JSON text in a string.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ---- chat completion answer (what callers get) ----

// Completion is a chat.completion answer.
type Completion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []Choice `json:"choices"`
	Usage   *Usage   `json:"usage,omitempty"`
}

// Choice is one choice of a Completion. A nil Logprobs is written as null.
type Choice struct {
	Index        int              `json:"index"`
	Message      AssistantMessage `json:"message"`
	FinishReason string           `json:"finish_reason"`
	Logprobs     json.RawMessage  `json:"logprobs"`
}

// AssistantMessage is the message of a Choice. A nil Content is written as null.
type AssistantMessage struct {
	Role          string         `json:"role"`
	Content       *string        `json:"content"`
	ToolCalls     []ToolCall     `json:"tool_calls,omitempty"`
	ContentBlocks []ContentBlock `json:"content_blocks,omitempty"`
}

// ContentBlock is an item of message.content_blocks, the gateway's extra when answers are not strict: text,
// thinking (with its signature) or redacted_thinking (data).
type ContentBlock struct {
	Type      string `json:"type"`
	Text      string `json:"text,omitempty"`
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

// Usage counts the tokens of a chat completion.
type Usage struct {
	PromptTokens        int64                `json:"prompt_tokens"`
	CompletionTokens    int64                `json:"completion_tokens"`
	TotalTokens         int64                `json:"total_tokens"`
	PromptTokensDetails *PromptTokensDetails `json:"prompt_tokens_details,omitempty"`
}

// PromptTokensDetails is usage.prompt_tokens_details.
type PromptTokensDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
}

// ---- embeddings ----

// EmbeddingList is the answer of /v1/embeddings.
type EmbeddingList struct {
	Object string         `json:"object"`
	Data   []Embedding    `json:"data"`
	Model  string         `json:"model"`
	Usage  EmbeddingUsage `json:"usage"`
}

// Embedding is one item of an EmbeddingList.
type Embedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float64, or a base64 string with encoding_format "base64"
}

// EmbeddingUsage counts the tokens of an embeddings request.
type EmbeddingUsage struct {
	PromptTokens int64 `json:"prompt_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

// ---- errors ----

// ErrorBody is OpenAI's error answer, the one error envelope of the gateway (gwerr.Body).
type ErrorBody = gwerr.Body

// ErrorDetail is the error member of an ErrorBody (gwerr.Detail).
type ErrorDetail = gwerr.Detail

var jsonNull = json.RawMessage("null")

// MarshalError encodes d as an ErrorBody. ProviderError must be nil or valid JSON; if encoding fails all the
// same, provider_error is dropped (written as null) rather than answering no body.
func MarshalError(d ErrorDetail) []byte {
	if d.ProviderError == nil {
		d.ProviderError = jsonNull // a translated error always carries the member
	}
	b, err := json.Marshal(&ErrorBody{Error: d})
	if err != nil {
		d.ProviderError = jsonNull
		b, _ = json.Marshal(&ErrorBody{Error: d})
	}
	return b
}
