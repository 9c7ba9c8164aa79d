package gemini

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/schema"
)

// EmbedRequest translates an OpenAI embeddings request for the Gemini API: a single string input gives an
// embedContent body, an array of strings a batchEmbedContents body (batch reports which). dimensions becomes
// outputDimensionality, and task_type (an extension, such as "RETRIEVAL_QUERY") taskType. Token arrays are
// refused: Gemini embeds text. The returned model has no "models/" prefix.
func EmbedRequest(in *schema.EmbeddingsRequest) (body []byte, model string, batch bool, err error) {
	texts, batch, err := embedInput(in)
	if err != nil {
		return nil, "", false, err
	}
	model = embedModel(in)
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

// PredictRequest translates an OpenAI embeddings request into a Vertex AI :predict body for text embedding
// models: {"instances": [{"content": text, "task_type"?}], "parameters": {"outputDimensionality"?}}.
func PredictRequest(in *schema.EmbeddingsRequest) (body []byte, model string, err error) {
	texts, _, err := embedInput(in)
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
	return body, embedModel(in), nil
}

// embedModel is the model an embeddings request asks for, without a "models/" prefix.
func embedModel(in *schema.EmbeddingsRequest) string { return strings.TrimPrefix(in.Model, "models/") }

// embedInput checks an embeddings request and reads its input as texts; batch is true when input is an array.
func embedInput(in *schema.EmbeddingsRequest) ([]string, bool, error) {
	if embedModel(in) == "" {
		return nil, false, gwerr.BadRequest("model", "model is required")
	}
	if in.EncodingFormat != "" && in.EncodingFormat != "float" && in.EncodingFormat != "base64" {
		return nil, false, gwerr.BadRequest("encoding_format", "encoding_format %q is not one of float, base64", in.EncodingFormat)
	}
	switch contentKind(in.Input) {
	case '"':
		s := stringValue(in.Input)
		return []string{s}, false, nil
	case '[':
		var list []string
		if err := json.Unmarshal(in.Input, &list); err != nil {
			return nil, false, gwerr.BadRequest("input",
				"input must be a string or an array of strings: Google's embedding models take text, not token arrays")
		}
		if len(list) == 0 {
			return nil, false, gwerr.BadRequest("input", "input must not be empty")
		}
		return list, true, nil
	case 'n':
		return nil, false, gwerr.BadRequest("input", "input is required")
	}
	return nil, false, gwerr.BadRequest("input", "input must be a string or an array of strings")
}

// EmbedResponse translates an embedContent or batchEmbedContents answer into OpenAI's embeddings list. The
// Gemini API reports no token counts, so usage is zero. in is the request, for model and encoding_format.
func EmbedResponse(body []byte, in *schema.EmbeddingsRequest) ([]byte, error) {
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
	return embeddingsList(in, vectors, 0)
}

// PredictResponse translates a Vertex AI :predict answer of a text embedding model into OpenAI's embeddings list;
// usage counts the tokens Vertex reports per instance (statistics.token_count). in is the request, for model and
// encoding_format.
func PredictResponse(body []byte, in *schema.EmbeddingsRequest) ([]byte, error) {
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
	return embeddingsList(in, vectors, tokens)
}

func embeddingsList(in *schema.EmbeddingsRequest, vectors [][]float64, tokens int64) ([]byte, error) {
	out := schema.EmbeddingList{Object: "list", Data: make([]schema.Embedding, len(vectors)), Model: embedModel(in),
		Usage: schema.EmbeddingUsage{PromptTokens: tokens, TotalTokens: tokens}}
	for i, v := range vectors {
		if v == nil {
			v = []float64{}
		}
		out.Data[i] = schema.Embedding{Object: "embedding", Index: i, Embedding: v}
		if in.EncodingFormat == "base64" {
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
