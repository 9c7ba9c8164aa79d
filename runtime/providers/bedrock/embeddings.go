package bedrock

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
)

// embeddingFamily is the request format an embedding model speaks through InvokeModel.
type embeddingFamily uint8

const (
	familyUnknown embeddingFamily = iota
	familyTitan                   // amazon.titan-embed-*: {"inputText"}, one text per call
	familyCohere                  // cohere.embed-*: {"texts": [...], "input_type"}
)

// cohereDefaultInputType is sent when the request has no input_type: OpenAI's API has no such notion, and
// documents are what most embeddings are made of.
const cohereDefaultInputType = "search_document"

// family recognises a model id, including cross-region inference profile ids (us.cohere.embed-v4:0).
// Application inference profile ARNs don't name their model, so they are not recognised.
func family(model string) embeddingFamily {
	m := strings.ToLower(model)
	switch {
	case strings.Contains(m, "amazon.titan-embed"):
		return familyTitan
	case strings.Contains(m, "cohere.embed"):
		return familyCohere
	}
	return familyUnknown
}

// translateEmbeddingsRequest builds the InvokeModel body of an OpenAI embeddings request.
//
// Titan takes one text per call: an input array of more than one item is a 400 (the adapter does not fan one
// request out into several signed calls). Cohere takes up to 96 texts per call; input_type defaults to
// search_document and a caller's "input_type" field overrides it. dimensions goes to Titan v2's "dimensions" and
// Cohere v4's "output_dimension". Token-array inputs are a 400: Bedrock's embedding models take text.
func translateEmbeddingsRequest(body []byte) ([]byte, []byte, error) {
	req, err := schema.DecodeEmbeddings(body)
	if err != nil {
		return nil, nil, err
	}
	if req.Model == "" {
		return nil, nil, gwerr.BadRequest("model", "model is required: a Bedrock embedding model id")
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		return nil, nil, gwerr.BadRequest("encoding_format", "encoding_format must be float or base64")
	}
	inputs, err := embeddingInputs(req.Input)
	if err != nil {
		return nil, nil, err
	}
	var v any
	switch family(req.Model) {
	case familyTitan:
		if len(inputs) > 1 {
			return nil, nil, gwerr.BadRequest("input", "Titan embedding models take one text per request; send the %d texts one at a time", len(inputs))
		}
		v = titanRequest{InputText: inputs[0], Dimensions: req.Dimensions}
	case familyCohere:
		inputType := req.InputType
		if inputType == "" {
			inputType = cohereDefaultInputType
		}
		v = cohereRequest{Texts: inputs, InputType: inputType, OutputDimension: req.Dimensions}
	default:
		return nil, nil, gwerr.BadRequest("model", "model %q is not an embedding model bedrock can call: use amazon.titan-embed-* or cohere.embed-*", req.Model)
	}
	buf, err := marshal(v)
	if err != nil {
		return nil, nil, err
	}
	return buf, []byte(req.Model), nil
}

// embeddingInputs reads "input": a string or an array of strings.
func embeddingInputs(raw json.RawMessage) ([]string, error) {
	switch contentKind(raw) {
	case 0:
		return nil, gwerr.BadRequest("input", "input is required")
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return []string{s}, nil
		}
	case '[':
		var list []string
		if json.Unmarshal(raw, &list) == nil {
			if len(list) == 0 {
				return nil, gwerr.BadRequest("input", "input must not be empty")
			}
			return list, nil
		}
		return nil, gwerr.BadRequest("input", "input must be a string or an array of strings: bedrock's embedding models take text, not token arrays")
	}
	return nil, gwerr.BadRequest("input", "input must be a string or an array of strings")
}

// translateEmbeddingsResponse turns a Titan or Cohere InvokeModel answer into OpenAI's embeddings list.
// Cohere's answer on Bedrock carries no token count unless it has meta.billed_units or inputTextTokenCounts;
// usage is then 0.
func translateEmbeddingsResponse(c *providers.Call, body []byte) ([]byte, error) {
	var req schema.EmbeddingsRequest
	_ = json.Unmarshal(c.Body, &req)
	out := schema.EmbeddingList{Object: "list", Model: req.Model}
	var vectors [][]float64
	switch family(req.Model) {
	case familyTitan:
		var r titanResponse
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, fmt.Errorf("bedrock: decode titan embedding: %w", err)
		}
		if r.Embedding == nil {
			return nil, fmt.Errorf("bedrock: titan answer has no embedding")
		}
		vectors = [][]float64{r.Embedding}
		out.Usage.PromptTokens = r.InputTextTokenCount
	case familyCohere:
		var r cohereResponse
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, fmt.Errorf("bedrock: decode cohere embeddings: %w", err)
		}
		switch contentKind(r.Embeddings) {
		case '[':
			if err := json.Unmarshal(r.Embeddings, &vectors); err != nil {
				return nil, fmt.Errorf("bedrock: decode cohere embeddings: %w", err)
			}
		case '{':
			var byType struct {
				Float [][]float64 `json:"float"`
			}
			if err := json.Unmarshal(r.Embeddings, &byType); err != nil || byType.Float == nil {
				return nil, fmt.Errorf("bedrock: cohere answer has no float embeddings")
			}
			vectors = byType.Float
		default:
			return nil, fmt.Errorf("bedrock: cohere answer has no embeddings")
		}
		switch {
		case r.Meta != nil && r.Meta.BilledUnits != nil:
			out.Usage.PromptTokens = r.Meta.BilledUnits.InputTokens
		default:
			for _, n := range r.InputTextTokenCounts {
				out.Usage.PromptTokens += n
			}
		}
	default:
		return nil, fmt.Errorf("bedrock: embeddings answer for unknown model family %q", req.Model)
	}
	out.Usage.TotalTokens = out.Usage.PromptTokens
	out.Data = make([]schema.Embedding, len(vectors))
	for i, v := range vectors {
		out.Data[i] = schema.Embedding{Object: "embedding", Index: i, Embedding: v}
		if req.EncodingFormat == "base64" {
			out.Data[i].Embedding = float32Base64(v)
		}
	}
	return marshal(out)
}

// float32Base64 encodes a vector as OpenAI's base64 encoding_format does: little-endian float32s, base64.
func float32Base64(v []float64) string {
	raw := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(f)))
	}
	return base64.StdEncoding.EncodeToString(raw)
}
