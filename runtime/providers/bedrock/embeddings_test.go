package bedrock

import (
	"errors"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
)

func TestEmbeddingsGolden(t *testing.T) {
	tests := []struct{ name, model string }{
		{"titan", "amazon.titan-embed-text-v2:0"},
		{"cohere", "cohere.embed-english-v3"},
		{"cohere_v4", "us.cohere.embed-v4:0"},
	}
	a := testAdapter()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := readTestdata(t, "embeddings", tc.name+".openai.json")
			body, model, err := translateEmbeddingsRequest(req)
			if err != nil {
				t.Fatal(err)
			}
			if string(model) != tc.model {
				t.Errorf("model %q", model)
			}
			jsonEqual(t, body, readTestdata(t, "embeddings", tc.name+".invoke.json"))
			out, err := a.TranslateResponse(&providers.Target{}, &providers.Call{Endpoint: providers.Embeddings, Body: req},
				readTestdata(t, "embeddings", tc.name+".response.json"))
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, out, readTestdata(t, "embeddings", tc.name+".want.json"))
		})
	}
}

func TestEmbeddingsRequestErrors(t *testing.T) {
	tests := []struct{ name, body, param string }{
		{"no model", `{"input":"x"}`, "model"},
		{"unknown model", `{"model":"anthropic.claude-v2","input":"x"}`, "model"},
		{"titan with two inputs", `{"model":"amazon.titan-embed-text-v1","input":["a","b"]}`, "input"},
		{"no input", `{"model":"cohere.embed-english-v3"}`, "input"},
		{"empty input", `{"model":"cohere.embed-english-v3","input":[]}`, "input"},
		{"token input", `{"model":"cohere.embed-english-v3","input":[1,2,3]}`, "input"},
		{"token arrays", `{"model":"cohere.embed-english-v3","input":[[1,2]]}`, "input"},
		{"input object", `{"model":"cohere.embed-english-v3","input":{"a":1}}`, "input"},
		{"encoding format", `{"model":"cohere.embed-english-v3","input":"x","encoding_format":"int8"}`, "encoding_format"},
		{"dimensions type", `{"model":"amazon.titan-embed-text-v2:0","input":"x","dimensions":"big"}`, "dimensions"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := translateEmbeddingsRequest([]byte(tc.body))
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Status != 400 || ge.Param != tc.param {
				t.Fatalf("err = %v, want 400 naming %q", err, tc.param)
			}
		})
	}
}

func TestEmbeddingsResponseErrors(t *testing.T) {
	tests := []struct{ name, model, body string }{
		{"titan without embedding", "amazon.titan-embed-text-v1", `{"inputTextTokenCount":3}`},
		{"titan not an object", "amazon.titan-embed-text-v1", `[1]`},
		{"cohere without embeddings", "cohere.embed-english-v3", `{"id":"x"}`},
		{"cohere by type without float", "cohere.embed-v4:0", `{"embeddings":{"int8":[[1]]}}`},
		{"cohere bad vectors", "cohere.embed-english-v3", `{"embeddings":[["a"]]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &providers.Call{Endpoint: providers.Embeddings, Body: []byte(`{"model":"` + tc.model + `","input":"x"}`)}
			if _, err := testAdapter().TranslateResponse(&providers.Target{}, c, []byte(tc.body)); err == nil {
				t.Error("no error")
			}
		})
	}
}
