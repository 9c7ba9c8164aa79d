package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
	"github.com/llmgw/gateway/storage"
)

// defaultThreshold is the least cosine similarity of a semantic cache hit when the workspace sets none.
const defaultThreshold = 0.95

// embedTimeout bounds the embeddings call of a semantic lookup: the cache must not make a request much slower
// than a miss would be.
const embedTimeout = 10 * time.Second

// defaultEmbeddingModel names the usual embeddings model of a provider for the semantic cache; "" when the
// provider has no embeddings API (Anthropic), which turns semantic lookups into exact ones.
func defaultEmbeddingModel(provider string) string {
	switch provider {
	case "anthropic":
		return ""
	case "google", "vertex-ai":
		return "text-embedding-004"
	case "bedrock":
		return "amazon.titan-embed-text-v2:0"
	case "mistral-ai":
		return "mistral-embed"
	case "ollama":
		return "nomic-embed-text"
	default:
		return "text-embedding-3-small"
	}
}

// semanticSettings returns the workspace's semantic cache settings, defaults filled in.
func (e *Engine) semanticSettings(workspaceID string) storage.SemanticCacheSettings {
	var s storage.SemanticCacheSettings
	if ws, err := e.store.Workspaces.Get(workspaceID); err == nil && ws.SemanticCache != nil {
		s = *ws.SemanticCache
	}
	if s.Threshold <= 0 || s.Threshold > 1 {
		s.Threshold = defaultThreshold
	}
	return s
}

// embed computes the embedding of text for the semantic cache: with the workspace's embeddings provider, or
// else the request's own target with its provider's usual embeddings model.
func (e *Engine) embed(ctx context.Context, st *state, t *providers.Target, adapter providers.Adapter, s storage.SemanticCacheSettings, text string) ([]float32, error) {
	if s.EmbeddingProvider != "" {
		ref := s.EmbeddingProvider
		if !strings.HasPrefix(ref, "@") {
			ref = "@" + ref
		}
		et, ea, _, gerr := e.resolveTarget(ctx, st.req, &config.Node{Path: "semantic_cache", Provider: ref})
		if gerr != nil {
			return nil, gerr
		}
		t, adapter = et, ea
	}
	model := s.EmbeddingModel
	if model == "" {
		model = defaultEmbeddingModel(t.Provider)
	}
	if model == "" {
		return nil, fmt.Errorf("%s has no embeddings API: set the workspace's semantic_cache.embedding_provider", t.Provider)
	}
	input, _ := json.Marshal(text)
	body, _ := json.Marshal(&schema.EmbeddingsRequest{Model: model, Input: input})
	out := e.attempt(ctx, adapter, t, &providers.Call{Endpoint: providers.Embeddings, Body: body}, embedTimeout)
	if out.err != nil {
		return nil, out.err
	}
	if !out.ok() {
		return nil, fmt.Errorf("embeddings call to %s answered %d: %s", t.Provider, out.status, truncate(out.body, 200))
	}
	var list struct {
		Data []struct {
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(out.body, &list); err != nil {
		return nil, fmt.Errorf("embeddings answer of %s: %w", t.Provider, err)
	}
	if len(list.Data) == 0 || len(list.Data[0].Embedding) == 0 {
		return nil, fmt.Errorf("embeddings answer of %s holds no vector", t.Provider)
	}
	return list.Data[0].Embedding, nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
