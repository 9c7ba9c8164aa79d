package bootstrap

import (
	"reflect"
	"testing"

	"github.com/llmgw/gateway/storage"
)

func TestWorkspaceSemanticCacheSettings(t *testing.T) {
	st := newStore(t)
	doc := `{"workspaces": [{"slug": "default", "semantic_cache": {"embedding_provider": "@emb", "embedding_model": "e-1", "threshold": 0.9}}]}`
	mustApply(t, st, mustParse(t, doc, t.TempDir()))
	ws, err := st.Workspaces.Resolve("default")
	if err != nil {
		t.Fatal(err)
	}
	want := &storage.SemanticCacheSettings{EmbeddingProvider: "@emb", EmbeddingModel: "e-1", Threshold: 0.9}
	if !reflect.DeepEqual(ws.SemanticCache, want) {
		t.Fatalf("semantic_cache = %+v, want %+v", ws.SemanticCache, want)
	}

	for _, tc := range []struct{ doc, path string }{
		{`{"workspaces": [{"slug": "a", "semantic_cache": {"threshold": 1.5}}]}`, "workspaces[0].semantic_cache.threshold"},
		{`{"workspaces": [{"slug": "a", "semantic_cache": {"threshold": 0}}]}`, "workspaces[0].semantic_cache.threshold"},
		{`{"workspaces": [{"slug": "a", "semantic_cache": {"embedding_provider": "@a/b"}}]}`, "workspaces[0].semantic_cache.embedding_provider"},
		{`{"workspaces": [{"slug": "a", "semantic_cache": {"colour": 1}}]}`, "workspaces[0].semantic_cache.colour"},
		{`{"workspaces": [{"slug": "a", "semantic_cache": 3}]}`, "workspaces[0].semantic_cache"},
	} {
		_, err := Parse([]byte(tc.doc), t.TempDir())
		if _, ok := findProblem(validationError(t, err).Problems, tc.path); !ok {
			t.Errorf("%s: no problem at %s: %v", tc.doc, tc.path, err)
		}
	}
}
