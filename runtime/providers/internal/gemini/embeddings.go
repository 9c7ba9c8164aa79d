package gemini

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers/internal/openaiwire"
)

// EmbedRequest translates an OpenAI embeddings request body for the Gemini API: a single string input gives an
// embedContent body, an array of strings a batchEmbedContents body (batch reports which). dimensions becomes
// outputDimensionality, and task_type (an extension, such as "RETRIEVAL_QUERY") taskType. Token arrays are
// refused: Gemini embeds text. The returned model has no "models/" prefix.
func EmbedRequest(openAIBody []byte) (body []byte, model string, batch bool, err error) {
	in, texts, batch, err := embedInput(openAIBody)
	if err != nil {
		return nil, "", false, err
	}
	model = strings.TrimPrefix(in.Model, "models/")
	one := func(text string) embedContentRequest {
		return embedContentRequest{Model: "models/" + model, Content: content{Parts: []part{{Text: text}}},
			TaskType: in.TaskType, OutputDimensionality: in.Dimensions}
	}
	if batch {
		req := batchEmbedContentsRequest{Requests: make([]embedContentRequest, len(texts))}
		for i, t := range texts {
			req.Requests[i] = one(t)
		}
		body, err = json.Marshal(&req)
	} else {
		req := one(texts[0])
		body, err = json.Marshal(&req)
	}
	if err != nil {
		return nil, "", false, fmt.Errorf("gemini: encode embeddings request: %w", err)
	}
	return body, model, batch, nil
}

// PredictRequest translates an OpenAI embeddings request body into a Vertex AI :predict body for text embedding
// models: {"instances": [{"content": text, "task_type"?}], "parameters": {"outputDimensionality"?}}.
func PredictRequest(openAIBody []byte) (body []byte, model string, err error) {
	in, texts, _, err := embedInput(openAIBody)
	if err != nil {
		return nil, "", err
	}
	req := predictRequest{Instances: make([]predictInstance, len(texts))}
	for i, t := range texts {
		req.Instances[i] = predictInstance{Content: t, TaskType: in.TaskType}
	}
	if in.Dimensions != nil {
		req.Parameters = &predictParameters{OutputDimensionality: in.Dimensions}
	}
	body, err = json.Marshal(&req)
	if err != nil {
		return nil, "", fmt.Errorf("gemini: encode predict request: %w", err)
	}
	return body, strings.TrimPrefix(in.Model, "models/"), nil
}

// embedInput reads an embeddings request and its input as texts; batch is true when input is an array.
func embedInput(openAIBody []byte) (*openAIEmbeddingsRequest, []string, bool, error) {
	var in openAIEmbeddingsRequest
	if err := json.Unmarshal(openAIBody, &in); err != nil {
		return nil, nil, false, decodeError("", err)
	}
	if strings.TrimPrefix(in.Model, "models/") == "" {
		return nil, nil, false, gwerr.BadRequest("model", "model is required")
	}
	if in.EncodingFormat != "" && in.EncodingFormat != "float" && in.EncodingFormat != "base64" {
		return nil, nil, false, gwerr.BadRequest("encoding_format", "encoding_format %q is not one of float, base64", in.EncodingFormat)
	}
	switch contentKind(in.Input) {
	case '"':
		var s string
		if err := json.Unmarshal(in.Input, &s); err != nil {
			return nil, nil, false, decodeError("input", err)
		}
		return &in, []string{s}, false, nil
	case '[':
		var list []string
		if err := json.Unmarshal(in.Input, &list); err != nil {
			return nil, nil, false, gwerr.BadRequest("input",
				"input must be a string or an array of strings: Google's embedding models take text, not token arrays")
		}
		if len(list) == 0 {
			return nil, nil, false, gwerr.BadRequest("input", "input must not be empty")
		}
		return &in, list, true, nil
	case 'n':
		return nil, nil, false, gwerr.BadRequest("input", "input is required")
	}
	return nil, nil, false, gwerr.BadRequest("input", "input must be a string or an array of strings")
}

// embedOptions are what the answer's translation needs of the request.
type embedOptions struct {
	Model          string `json:"model"`
	EncodingFormat string `json:"encoding_format"`
}

func readEmbedOptions(openAIBody []byte) embedOptions {
	var o embedOptions
	_ = json.Unmarshal(openAIBody, &o) // the request was read once already; a bad one never went upstream
	o.Model = strings.TrimPrefix(o.Model, "models/")
	return o
}

// EmbedResponse translates an embedContent or batchEmbedContents answer into OpenAI's embeddings list. The
// Gemini API reports no token counts, so usage is zero. openAIBody is the request, for model and encoding_format.
func EmbedResponse(body, openAIBody []byte) ([]byte, error) {
	var r struct {
		embedContentResponse
		batchEmbedContentsResponse
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("gemini: decode embeddings answer: %w", err)
	}
	vectors := make([][]float64, 0, max(len(r.Embeddings), 1))
	switch {
	case r.Embedding != nil:
		vectors = append(vectors, r.Embedding.Values)
	case r.Embeddings != nil:
		for _, e := range r.Embeddings {
			vectors = append(vectors, e.Values)
		}
	default:
		return nil, fmt.Errorf("gemini: embeddings answer has neither embedding nor embeddings")
	}
	return embeddingsList(readEmbedOptions(openAIBody), vectors, 0)
}

// PredictResponse translates a Vertex AI :predict answer of a text embedding model into OpenAI's embeddings list;
// usage counts the tokens Vertex reports per instance (statistics.token_count).
func PredictResponse(body, openAIBody []byte) ([]byte, error) {
	var r predictResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("gemini: decode predict answer: %w", err)
	}
	if r.Predictions == nil {
		return nil, fmt.Errorf("gemini: predict answer has no predictions")
	}
	vectors := make([][]float64, len(r.Predictions))
	var tokens int64
	for i, p := range r.Predictions {
		vectors[i] = p.Embeddings.Values
		tokens += int64(p.Embeddings.Statistics.TokenCount)
	}
	return embeddingsList(readEmbedOptions(openAIBody), vectors, tokens)
}

func embeddingsList(o embedOptions, vectors [][]float64, tokens int64) ([]byte, error) {
	out := openaiwire.EmbeddingList{Object: "list", Data: make([]openaiwire.Embedding, len(vectors)), Model: o.Model,
		Usage: openaiwire.EmbeddingUsage{PromptTokens: tokens, TotalTokens: tokens}}
	for i, v := range vectors {
		if v == nil {
			v = []float64{}
		}
		out.Data[i] = openaiwire.Embedding{Object: "embedding", Index: i, Embedding: v}
		if o.EncodingFormat == "base64" {
			out.Data[i].Embedding = base64Floats(v)
		}
	}
	b, err := json.Marshal(&out)
	if err != nil {
		return nil, fmt.Errorf("gemini: encode embeddings: %w", err)
	}
	return b, nil
}

// base64Floats encodes a vector as OpenAI does for encoding_format "base64": little-endian float32s.
func base64Floats(v []float64) string {
	buf := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(float32(f)))
	}
	return base64.StdEncoding.EncodeToString(buf)
}
