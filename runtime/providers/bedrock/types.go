package bedrock

import "encoding/json"

// Bedrock Converse request (POST /model/{modelId}/converse and /converse-stream).

type converseRequest struct {
	Messages        []brMessage      `json:"messages"`
	System          []brSystemBlock  `json:"system,omitempty"`
	InferenceConfig *inferenceConfig `json:"inferenceConfig,omitempty"`
	ToolConfig      *toolConfig      `json:"toolConfig,omitempty"`
	OutputConfig    *outputConfig    `json:"outputConfig,omitempty"`
}

type brSystemBlock struct {
	Text string `json:"text"`
}

type brMessage struct {
	Role    string    `json:"role"`
	Content []brBlock `json:"content"`
}

// brBlock is a ContentBlock union: exactly one member is set.
type brBlock struct {
	Text       *string       `json:"text,omitempty"`
	Image      *brImage      `json:"image,omitempty"`
	ToolUse    *brToolUse    `json:"toolUse,omitempty"`
	ToolResult *brToolResult `json:"toolResult,omitempty"`
}

type brImage struct {
	Format string `json:"format"`
	Source struct {
		Bytes string `json:"bytes"` // base64, as the JSON protocol carries blobs
	} `json:"source"`
}

type brToolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

type brToolResult struct {
	ToolUseID string              `json:"toolUseId"`
	Content   []brToolResultBlock `json:"content"`
}

type brToolResultBlock struct {
	Text string `json:"text"`
}

type inferenceConfig struct {
	MaxTokens     *int64   `json:"maxTokens,omitempty"`
	Temperature   *float64 `json:"temperature,omitempty"`
	TopP          *float64 `json:"topP,omitempty"`
	StopSequences []string `json:"stopSequences,omitempty"`
}

type toolConfig struct {
	Tools      []brTool        `json:"tools"`
	ToolChoice json.RawMessage `json:"toolChoice,omitempty"`
}

type brTool struct {
	ToolSpec struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		InputSchema struct {
			JSON json.RawMessage `json:"json"`
		} `json:"inputSchema"`
	} `json:"toolSpec"`
}

type outputConfig struct {
	TextFormat struct {
		Type      string `json:"type"`
		Structure struct {
			JSONSchema struct {
				Schema      string `json:"schema"`
				Name        string `json:"name,omitempty"`
				Description string `json:"description,omitempty"`
			} `json:"jsonSchema"`
		} `json:"structure"`
	} `json:"textFormat"`
}

// Bedrock Converse answer.

type converseResponse struct {
	Output struct {
		Message *struct {
			Role    string          `json:"role"`
			Content []brOutputBlock `json:"content"`
		} `json:"message"`
	} `json:"output"`
	StopReason string   `json:"stopReason"`
	Usage      *brUsage `json:"usage"`
}

type brOutputBlock struct {
	Text             *string    `json:"text"`
	ToolUse          *brToolUse `json:"toolUse"`
	ReasoningContent *struct {
		ReasoningText *struct {
			Text      string `json:"text"`
			Signature string `json:"signature"`
		} `json:"reasoningText"`
		RedactedContent string `json:"redactedContent"`
	} `json:"reasoningContent"`
}

type brUsage struct {
	InputTokens           int64 `json:"inputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	TotalTokens           int64 `json:"totalTokens"`
	CacheReadInputTokens  int64 `json:"cacheReadInputTokens"`
	CacheWriteInputTokens int64 `json:"cacheWriteInputTokens"`
}

// ConverseStream event payloads: each eventstream message's payload is the member named by its :event-type
// header, without a wrapping key.

type evContentBlockStart struct {
	ContentBlockIndex int `json:"contentBlockIndex"`
	Start             struct {
		ToolUse *struct {
			ToolUseID string `json:"toolUseId"`
			Name      string `json:"name"`
		} `json:"toolUse"`
	} `json:"start"`
}

type evContentBlockDelta struct {
	ContentBlockIndex int `json:"contentBlockIndex"`
	Delta             struct {
		Text    json.RawMessage `json:"text"` // kept as a JSON string literal, spliced into the chunk as is
		ToolUse *struct {
			Input json.RawMessage `json:"input"`
		} `json:"toolUse"`
		ReasoningContent *struct {
			Text            json.RawMessage `json:"text"`
			Signature       json.RawMessage `json:"signature"`
			RedactedContent json.RawMessage `json:"redactedContent"`
		} `json:"reasoningContent"`
	} `json:"delta"`
}

type evMessageStop struct {
	StopReason string `json:"stopReason"`
}

type evMetadata struct {
	Usage *brUsage `json:"usage"`
}

type evException struct {
	Message  string `json:"message"`
	MessageU string `json:"Message"`
}

// Embeddings: the InvokeModel bodies of the embedding models.

type titanRequest struct {
	InputText  string `json:"inputText"`
	Dimensions *int64 `json:"dimensions,omitempty"`
}

type titanResponse struct {
	Embedding           []float64 `json:"embedding"`
	InputTextTokenCount int64     `json:"inputTextTokenCount"`
}

type cohereRequest struct {
	Texts           []string `json:"texts"`
	InputType       string   `json:"input_type"`
	OutputDimension *int64   `json:"output_dimension,omitempty"`
}

type cohereResponse struct {
	// Embeddings is [][]float (v3, response_type embeddings_floats) or {"float": [][]float} (embeddings_by_type).
	Embeddings json.RawMessage `json:"embeddings"`
	Meta       *struct {
		BilledUnits *struct {
			InputTokens int64 `json:"input_tokens"`
		} `json:"billed_units"`
	} `json:"meta"`
	InputTextTokenCounts []int64 `json:"inputTextTokenCounts"`
}
