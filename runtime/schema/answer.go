package schema

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
	Logprobs     *Logprobs        `json:"logprobs"`
}

// Logprobs is a choice's logprobs: one item per token of its content.
type Logprobs struct {
	Content []TokenLogprob `json:"content"`
}

// TokenLogprob is the log probability of one token, with the most likely alternatives when asked for.
type TokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float64      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []TopLogprob `json:"top_logprobs"`
}

// TopLogprob is one alternative of a TokenLogprob.
type TopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// AssistantMessage is the message of a Choice. A nil Content is written as null.
type AssistantMessage struct {
	Role          string         `json:"role"`
	Content       *string        `json:"content"`
	ToolCalls     []ToolCall     `json:"tool_calls,omitempty"`
	ContentBlocks []ContentBlock `json:"content_blocks,omitempty"`
}

// ContentBlock is an item of message.content_blocks, the gateway's extra when answers are not strict: text,
// thinking (with its signature) or redacted_thinking (data). Thinking is a pointer because a thinking block
// must carry it even empty (Anthropic refuses a thinking block sent back without it); the other fields are
// never empty where they are required.
type ContentBlock struct {
	Type      string  `json:"type"`
	Text      string  `json:"text,omitempty"`
	Thinking  *string `json:"thinking,omitempty"`
	Signature string  `json:"signature,omitempty"`
	Data      string  `json:"data,omitempty"`
}

// Usage counts the tokens of a chat completion.
type Usage struct {
	PromptTokens        int64                `json:"prompt_tokens"`
	CompletionTokens    int64                `json:"completion_tokens"`
	TotalTokens         int64                `json:"total_tokens"`
	PromptTokensDetails *PromptTokensDetails `json:"prompt_tokens_details,omitempty"`
	// CompletionTokensDetails is given when the provider reports reasoning tokens.
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
}

// CompletionTokensDetails is usage.completion_tokens_details.
type CompletionTokensDetails struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// Total is total_tokens, or prompt plus completion tokens when a provider left it out (zero).
func (u *Usage) Total() int64 {
	if u.TotalTokens != 0 {
		return u.TotalTokens
	}
	return u.PromptTokens + u.CompletionTokens
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
