package gemini

import (
	"encoding/json"

	"github.com/llmgw/gateway/runtime/providers/internal/openaiwire"
)

// Gemini's wire types (generativelanguage v1beta and aiplatform v1 share them). Only the fields the gateway
// reads or writes are declared; unknown fields of answers are ignored.

// generateContentRequest is the body of models/{model}:generateContent and :streamGenerateContent.
type generateContentRequest struct {
	Contents          []content         `json:"contents"`
	SystemInstruction *content          `json:"systemInstruction,omitempty"`
	Tools             []tool            `json:"tools,omitempty"`
	ToolConfig        *toolConfig       `json:"toolConfig,omitempty"`
	GenerationConfig  *generationConfig `json:"generationConfig,omitempty"`
}

type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

// part is one of text, inlineData, fileData, functionCall or functionResponse. Thought and ThoughtSignature
// come with answers of thinking models (and go back upstream with function calls).
type part struct {
	Text             string            `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	ThoughtSignature string            `json:"thoughtSignature,omitempty"`
	InlineData       *blob             `json:"inlineData,omitempty"`
	FileData         *fileData         `json:"fileData,omitempty"`
	FunctionCall     *functionCall     `json:"functionCall,omitempty"`
	FunctionResponse *functionResponse `json:"functionResponse,omitempty"`
}

type blob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type fileData struct {
	MimeType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

type functionCall struct {
	ID   string          `json:"id,omitempty"` // set by the Gemini API on answers; never sent
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type functionResponse struct {
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type tool struct {
	FunctionDeclarations []functionDeclaration `json:"functionDeclarations,omitempty"`
}

type functionDeclaration struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type toolConfig struct {
	FunctionCallingConfig functionCallingConfig `json:"functionCallingConfig"`
}

type functionCallingConfig struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

type generationConfig struct {
	StopSequences    []string        `json:"stopSequences,omitempty"`
	ResponseMimeType string          `json:"responseMimeType,omitempty"`
	ResponseSchema   json.RawMessage `json:"responseSchema,omitempty"`
	CandidateCount   *int            `json:"candidateCount,omitempty"`
	MaxOutputTokens  *int            `json:"maxOutputTokens,omitempty"`
	Temperature      *float64        `json:"temperature,omitempty"`
	TopP             *float64        `json:"topP,omitempty"`
	TopK             *int            `json:"topK,omitempty"`
	PresencePenalty  *float64        `json:"presencePenalty,omitempty"`
	FrequencyPenalty *float64        `json:"frequencyPenalty,omitempty"`
	Seed             *int64          `json:"seed,omitempty"`
	ResponseLogprobs *bool           `json:"responseLogprobs,omitempty"`
	Logprobs         *int            `json:"logprobs,omitempty"`
	ThinkingConfig   *thinkingConfig `json:"thinkingConfig,omitempty"`
}

type thinkingConfig struct {
	IncludeThoughts *bool  `json:"includeThoughts,omitempty"`
	ThinkingBudget  *int   `json:"thinkingBudget,omitempty"`
	ThinkingLevel   string `json:"thinkingLevel,omitempty"`
}

// generateContentResponse is an answer of :generateContent and each event of :streamGenerateContent. Error is
// set on the error events a stream may carry instead of an answer.
type generateContentResponse struct {
	Candidates     []candidate     `json:"candidates"`
	PromptFeedback *promptFeedback `json:"promptFeedback"`
	UsageMetadata  *usageMetadata  `json:"usageMetadata"`
	ModelVersion   string          `json:"modelVersion"`
	ResponseID     string          `json:"responseId"`
	Error          *apiError       `json:"error"`
}

type candidate struct {
	Content        *content        `json:"content"`
	FinishReason   string          `json:"finishReason"`
	Index          int             `json:"index"`
	LogprobsResult *logprobsResult `json:"logprobsResult"`
}

type promptFeedback struct {
	BlockReason string `json:"blockReason"`
}

type usageMetadata struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	TotalTokenCount         int64 `json:"totalTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
}

type logprobsResult struct {
	TopCandidates    []topCandidates    `json:"topCandidates"`
	ChosenCandidates []logprobCandidate `json:"chosenCandidates"`
}

type topCandidates struct {
	Candidates []logprobCandidate `json:"candidates"`
}

type logprobCandidate struct {
	Token          string  `json:"token"`
	LogProbability float64 `json:"logProbability"`
}

// apiError is Google's error object: {"error": {"code": 400, "message": "...", "status": "INVALID_ARGUMENT"}}.
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
}

// Embeddings, Gemini API: models/{model}:embedContent and :batchEmbedContents.

type embedContentRequest struct {
	Model                string  `json:"model"`
	Content              content `json:"content"`
	TaskType             string  `json:"taskType,omitempty"`
	OutputDimensionality *int    `json:"outputDimensionality,omitempty"`
}

type batchEmbedContentsRequest struct {
	Requests []embedContentRequest `json:"requests"`
}

type embedContentResponse struct {
	Embedding *contentEmbedding `json:"embedding"`
}

type batchEmbedContentsResponse struct {
	Embeddings []contentEmbedding `json:"embeddings"`
}

type contentEmbedding struct {
	Values []float64 `json:"values"`
}

// Embeddings, Vertex AI: publishers/google/models/{model}:predict.

type predictRequest struct {
	Instances  []predictInstance  `json:"instances"`
	Parameters *predictParameters `json:"parameters,omitempty"`
}

type predictInstance struct {
	Content  string `json:"content"`
	TaskType string `json:"task_type,omitempty"`
}

type predictParameters struct {
	OutputDimensionality *int `json:"outputDimensionality,omitempty"`
}

type predictResponse struct {
	Predictions []struct {
		Embeddings struct {
			Values     []float64 `json:"values"`
			Statistics struct {
				TokenCount float64 `json:"token_count"`
			} `json:"statistics"`
		} `json:"embeddings"`
	} `json:"predictions"`
}

// OpenAI's side.

type openAIChatRequest struct {
	Model               string            `json:"model"`
	Messages            []json.RawMessage `json:"messages"`
	MaxTokens           *int              `json:"max_tokens"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
	Temperature         *float64          `json:"temperature"`
	TopP                *float64          `json:"top_p"`
	TopK                *int              `json:"top_k"` // not OpenAI's, but commonly sent to gateways
	N                   *int              `json:"n"`
	Stop                json.RawMessage   `json:"stop"`
	Tools               []json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage   `json:"tool_choice"`
	ResponseFormat      json.RawMessage   `json:"response_format"`
	PresencePenalty     *float64          `json:"presence_penalty"`
	FrequencyPenalty    *float64          `json:"frequency_penalty"`
	Seed                *int64            `json:"seed"`
	Logprobs            *bool             `json:"logprobs"`
	TopLogprobs         *int              `json:"top_logprobs"`
	ReasoningEffort     string            `json:"reasoning_effort"`
	Thinking            json.RawMessage   `json:"thinking"` // {"type": "enabled", "budget_tokens": n}, as for Claude
}

type openAIMessage struct {
	Role       string           `json:"role"`
	Content    json.RawMessage  `json:"content"`
	Name       string           `json:"name"`
	ToolCalls  []openAIToolCall `json:"tool_calls"`
	ToolCallID string           `json:"tool_call_id"`
}

type openAIToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name             string `json:"name"`
		Arguments        string `json:"arguments"`
		ThoughtSignature string `json:"thought_signature"`
	} `json:"function"`
}

type openAIPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Refusal  string `json:"refusal"`
	ImageURL *struct {
		URL      string `json:"url"`
		MimeType string `json:"mime_type"`
	} `json:"image_url"`
	InputAudio *struct {
		Data   string `json:"data"`
		Format string `json:"format"`
	} `json:"input_audio"`
	File *struct {
		FileData string `json:"file_data"`
		FileID   string `json:"file_id"`
		Filename string `json:"filename"`
	} `json:"file"`
}

type openAICompletion struct {
	ID                string         `json:"id"`
	Object            string         `json:"object"`
	Created           int64          `json:"created"`
	Model             string         `json:"model"`
	Choices           []openAIChoice `json:"choices"`
	Usage             *openAIUsage   `json:"usage,omitempty"`
	SystemFingerprint *string        `json:"system_fingerprint,omitempty"`
}

type openAIChoice struct {
	Index        int              `json:"index"`
	Message      openAIOutMessage `json:"message"`
	FinishReason string           `json:"finish_reason"`
	Logprobs     *openAILogprobs  `json:"logprobs"`
}

type openAIOutMessage struct {
	Role          string                    `json:"role"`
	Content       *string                   `json:"content"`
	ToolCalls     []openAIOutCall           `json:"tool_calls,omitempty"`
	ContentBlocks []openaiwire.ContentBlock `json:"content_blocks,omitempty"`
}

type openAIOutCall struct {
	Index    *int           `json:"index,omitempty"` // stream deltas only
	ID       string         `json:"id,omitempty"`
	Type     string         `json:"type,omitempty"`
	Function openAIFunction `json:"function"`
}

type openAIFunction struct {
	Name             string `json:"name,omitempty"`
	Arguments        string `json:"arguments"`
	ThoughtSignature string `json:"thought_signature,omitempty"` // not strict only
}

type openAILogprobs struct {
	Content []openAITokenLogprob `json:"content"`
}

type openAITokenLogprob struct {
	Token       string          `json:"token"`
	Logprob     float64         `json:"logprob"`
	Bytes       []int           `json:"bytes"`
	TopLogprobs []openAITopProb `json:"top_logprobs"`
}

type openAITopProb struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

type openAIUsage struct {
	PromptTokens            int64                           `json:"prompt_tokens"`
	CompletionTokens        int64                           `json:"completion_tokens"`
	TotalTokens             int64                           `json:"total_tokens"`
	PromptTokensDetails     *openaiwire.PromptTokensDetails `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *openAIOutputDetails            `json:"completion_tokens_details,omitempty"`
}

type openAIOutputDetails struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

type openAIChunk struct {
	ID      string              `json:"id"`
	Object  string              `json:"object"`
	Created int64               `json:"created"`
	Model   string              `json:"model"`
	Choices []openAIChunkChoice `json:"choices"`
	Usage   *openAIUsage        `json:"usage,omitempty"`
}

type openAIChunkChoice struct {
	Index        int             `json:"index"`
	Delta        openAIDelta     `json:"delta"`
	Logprobs     *openAILogprobs `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

type openAIDelta struct {
	Role          string             `json:"role,omitempty"`
	Content       *string            `json:"content,omitempty"`
	ToolCalls     []openAIOutCall    `json:"tool_calls,omitempty"`
	ContentBlocks []openAIBlockDelta `json:"content_blocks,omitempty"`
}

// openAIBlockDelta is a streamed piece of a content block (not strict only):
// {"index": 0, "delta": {"thinking": "..."}} or {"index": 1, "delta": {"text": "..."}}.
type openAIBlockDelta struct {
	Index int `json:"index"`
	Delta struct {
		Text      string `json:"text,omitempty"`
		Thinking  string `json:"thinking,omitempty"`
		Signature string `json:"signature,omitempty"`
	} `json:"delta"`
}

type openAIEmbeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	Dimensions     *int            `json:"dimensions"`
	EncodingFormat string          `json:"encoding_format"`
	TaskType       string          `json:"task_type"` // Google's task type, an extension
}
