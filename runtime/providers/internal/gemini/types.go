package gemini

import "encoding/json"

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
	CandidateCount   *int64          `json:"candidateCount,omitempty"`
	MaxOutputTokens  *int64          `json:"maxOutputTokens,omitempty"`
	Temperature      *float64        `json:"temperature,omitempty"`
	TopP             *float64        `json:"topP,omitempty"`
	TopK             *int64          `json:"topK,omitempty"`
	PresencePenalty  *float64        `json:"presencePenalty,omitempty"`
	FrequencyPenalty *float64        `json:"frequencyPenalty,omitempty"`
	Seed             *int64          `json:"seed,omitempty"`
	ResponseLogprobs *bool           `json:"responseLogprobs,omitempty"`
	Logprobs         *int64          `json:"logprobs,omitempty"`
	ThinkingConfig   *thinkingConfig `json:"thinkingConfig,omitempty"`
}

type thinkingConfig struct {
	IncludeThoughts *bool  `json:"includeThoughts,omitempty"`
	ThinkingBudget  *int64 `json:"thinkingBudget,omitempty"`
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
	OutputDimensionality *int64  `json:"outputDimensionality,omitempty"`
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
	OutputDimensionality *int64 `json:"outputDimensionality,omitempty"`
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
