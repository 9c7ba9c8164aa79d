package schema

import "encoding/json"

// ---- chat completion request (what callers send) ----

// ChatRequest is an OpenAI chat completion request as translating adapters read it, decoded in one pass
// (DecodeChat); members an adapter may pass through as they are (stop, tool_choice, response_format, thinking)
// stay raw. Fields
// that are not OpenAI's but that callers commonly send to gateways (top_k, thinking) are declared here as well,
// so that every adapter reads them the same way.
type ChatRequest struct {
	Model               string          `json:"model"`
	Messages            []Message       `json:"messages"`
	MaxTokens           *int64          `json:"max_tokens"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	TopK                *int64          `json:"top_k"`
	N                   *int64          `json:"n"`
	Stop                json.RawMessage `json:"stop"`
	Stream              bool            `json:"stream"`
	Tools               []Tool          `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls"`
	ResponseFormat      json.RawMessage `json:"response_format"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	Seed                *int64          `json:"seed"`
	Logprobs            *bool           `json:"logprobs"`
	TopLogprobs         *int64          `json:"top_logprobs"`
	ReasoningEffort     string          `json:"reasoning_effort"`
	User                string          `json:"user"`
	Thinking            json.RawMessage `json:"thinking"` // Anthropic's extended thinking: {"type": "enabled", "budget_tokens": n}
}

// Message is one item of a request's messages. Content is a string, an array of ContentPart, or null.
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  []ToolCall      `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

// ContentPart is one item of an array content: text, refusal, image_url, input_audio or file. Keys some
// providers add (cache_control) and the thinking blocks an assistant message carries back are kept raw or
// named here so that adapters need no shape of their own.
type ContentPart struct {
	Type         string          `json:"type"`
	Text         *string         `json:"text"`
	Refusal      string          `json:"refusal"`
	ImageURL     json.RawMessage `json:"image_url"` // {"url", "detail", "mime_type"}, or a bare URL string some clients send
	InputAudio   *InputAudio     `json:"input_audio"`
	File         *FilePart       `json:"file"`
	CacheControl json.RawMessage `json:"cache_control"`
}

// ImageURL is the object form of a content part's image_url.
type ImageURL struct {
	URL      string `json:"url"`
	Detail   string `json:"detail"`
	MimeType string `json:"mime_type"`
}

// InputAudio is a content part's input_audio.
type InputAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

// FilePart is a content part's file.
type FilePart struct {
	FileData string `json:"file_data"`
	FileID   string `json:"file_id"`
	Filename string `json:"filename"`
}

// Tool is one item of a request's tools.
type Tool struct {
	Type         string          `json:"type"`
	Function     *FunctionDef    `json:"function"`
	CacheControl json.RawMessage `json:"cache_control"`
}

// FunctionDef declares a function tool.
type FunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict,omitempty"`
}

// NamedToolChoice is the object form of tool_choice: {"type": "function", "function": {"name": ...}}.
type NamedToolChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// ResponseFormat is a request's response_format: text, json_object, or json_schema with its schema.
type ResponseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict"`
	} `json:"json_schema"`
}

// ---- tool calls (requests and answers) ----

// ToolCall is a tool call of an assistant message, as callers send it back and as answers carry it.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function a tool call calls; Arguments is a JSON text in a string. ThoughtSignature
// is Gemini's signature of the call, given when answers are not strict and sent back by callers that keep it.
type FunctionCall struct {
	Name             string `json:"name"`
	Arguments        string `json:"arguments"`
	ThoughtSignature string `json:"thought_signature,omitempty"`
}

// ---- embeddings request ----

// EmbeddingsRequest is an OpenAI embeddings request. Input is a string, an array of strings, or token arrays.
type EmbeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	Dimensions     *int64          `json:"dimensions,omitempty"`
	EncodingFormat string          `json:"encoding_format,omitempty"`
	User           string          `json:"user,omitempty"`
	TaskType       string          `json:"task_type,omitempty"`  // Google's task type, an extension
	InputType      string          `json:"input_type,omitempty"` // Cohere's input type, an extension
}

// ---- decoding with errors that name the field ----

// DecodeChat decodes a chat completion request body in one pass. Errors are 400s naming the field, with the
// index of a message or tool (messages[2].content): only on that error path are the items decoded again one
// by one, to find which.
func DecodeChat(body []byte) (*ChatRequest, error) {
	var r ChatRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, chatError(body, err)
	}
	return &r, nil
}

// DecodeEmbeddings decodes an embeddings request body. Errors are 400s naming the field.
func DecodeEmbeddings(body []byte) (*EmbeddingsRequest, error) {
	var r EmbeddingsRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, DecodeError(body, "", err)
	}
	return &r, nil
}

// chatError names the item of messages or tools that made err, when one did.
func chatError(body []byte, err error) error {
	var items struct {
		Messages []json.RawMessage `json:"messages"`
		Tools    []json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(body, &items) == nil {
		for i, raw := range items.Messages {
			var m Message
			if err := json.Unmarshal(raw, &m); err != nil {
				return DecodeError(raw, Index("messages", i), err)
			}
		}
		for i, raw := range items.Tools {
			var t Tool
			if err := json.Unmarshal(raw, &t); err != nil {
				return DecodeError(raw, Index("tools", i), err)
			}
		}
	}
	return DecodeError(body, "", err)
}

// DecodeParts decodes an array content, the content of messages[i] when param names it. Errors name
// param[k] and the field below it.
func DecodeParts(raw json.RawMessage, param string) ([]ContentPart, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil {
		return nil, DecodeError(raw, param, err)
	}
	parts := make([]ContentPart, len(raws))
	for k, rp := range raws {
		if err := json.Unmarshal(rp, &parts[k]); err != nil {
			return nil, DecodeError(rp, Index(param, k), err)
		}
	}
	return parts, nil
}

// DecodeImageURL reads a content part's image_url: the object form, or the bare URL string some clients send.
func DecodeImageURL(raw json.RawMessage, param string) (ImageURL, error) {
	var u ImageURL
	if err := json.Unmarshal(raw, &u); err != nil {
		if json.Unmarshal(raw, &u.URL) == nil {
			return u, nil
		}
		return u, DecodeError(raw, param, err)
	}
	return u, nil
}
