package gemini

import (
	"errors"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/schema"
)

func TestEmbedRequest(t *testing.T) {
	tests := []struct {
		name, in, want, model string
		batch                 bool
	}{
		{"single", `{"model":"text-embedding-004","input":"hello","dimensions":3,"user":"u"}`,
			`{"model":"models/text-embedding-004","content":{"parts":[{"text":"hello"}]},"outputDimensionality":3}`, "text-embedding-004", false},
		{"batch", `{"model":"models/gemini-embedding-001","input":["a","b"],"task_type":"RETRIEVAL_DOCUMENT"}`,
			`{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"a"}]},"taskType":"RETRIEVAL_DOCUMENT"},
			              {"model":"models/gemini-embedding-001","content":{"parts":[{"text":"b"}]},"taskType":"RETRIEVAL_DOCUMENT"}]}`, "gemini-embedding-001", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body, model, batch, err := EmbedRequest(decodeEmbeddings(t, []byte(tc.in)))
			if err != nil {
				t.Fatal(err)
			}
			if model != tc.model || batch != tc.batch {
				t.Errorf("model, batch = %q, %v; want %q, %v", model, batch, tc.model, tc.batch)
			}
			jsonEqual(t, body, []byte(tc.want))
		})
	}
}

func TestPredictRequest(t *testing.T) {
	body, model, err := PredictRequest(decodeEmbeddings(t, []byte(`{"model":"text-embedding-005","input":["a","b"],"dimensions":2,"task_type":"RETRIEVAL_QUERY"}`)))
	if err != nil {
		t.Fatal(err)
	}
	if model != "text-embedding-005" {
		t.Errorf("model = %q", model)
	}
	jsonEqual(t, body, []byte(`{"instances":[{"content":"a","task_type":"RETRIEVAL_QUERY"},{"content":"b","task_type":"RETRIEVAL_QUERY"}],"parameters":{"outputDimensionality":2}}`))
}

func TestEmbedRequestErrors(t *testing.T) {
	tests := []struct{ name, body, param string }{
		{"no model", `{"input":"a"}`, "model"},
		{"no input", `{"model":"m"}`, "input"},
		{"tokens", `{"model":"m","input":[1,2,3]}`, "input"},
		{"token arrays", `{"model":"m","input":[[1,2]]}`, "input"},
		{"empty array", `{"model":"m","input":[]}`, "input"},
		{"object", `{"model":"m","input":{}}`, "input"},
		{"encoding", `{"model":"m","input":"a","encoding_format":"hex"}`, "encoding_format"},
		{"dimensions a string", `{"model":"m","input":"a","dimensions":"3"}`, "dimensions"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, translate := range []func(*schema.EmbeddingsRequest) error{
				func(in *schema.EmbeddingsRequest) error { _, _, _, err := EmbedRequest(in); return err },
				func(in *schema.EmbeddingsRequest) error { _, _, err := PredictRequest(in); return err },
			} {
				in, err := schema.DecodeEmbeddings([]byte(tc.body))
				if err == nil {
					err = translate(in)
				}
				var ge *gwerr.Error
				if !errors.As(err, &ge) || ge.Status != 400 || ge.Param != tc.param {
					t.Errorf("err = %v, want 400 naming %q", err, tc.param)
				}
			}
		})
	}
}

func TestEmbedResponse(t *testing.T) {
	tests := []struct{ name, body, request, want string }{
		{"single", `{"embedding":{"values":[0.1,-0.2,0.3]}}`, `{"model":"text-embedding-004","input":"hello"}`,
			`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-0.2,0.3]}],"model":"text-embedding-004","usage":{"prompt_tokens":0,"total_tokens":0}}`},
		{"batch", `{"embeddings":[{"values":[1,2]},{"values":[3,4]}]}`, `{"model":"models/gemini-embedding-001","input":["a","b"]}`,
			`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1,2]},{"object":"embedding","index":1,"embedding":[3,4]}],"model":"gemini-embedding-001","usage":{"prompt_tokens":0,"total_tokens":0}}`},
		{"base64", `{"embedding":{"values":[1,-2]}}`, `{"model":"m","input":"a","encoding_format":"base64"}`,
			`{"object":"list","data":[{"object":"embedding","index":0,"embedding":"AACAPwAAAMA="}],"model":"m","usage":{"prompt_tokens":0,"total_tokens":0}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EmbedResponse([]byte(tc.body), decodeEmbeddings(t, []byte(tc.request)))
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, got, []byte(tc.want))
		})
	}
	for _, bad := range []string{`{}`, `[`, `{"embeddings":{}}`} {
		if _, err := EmbedResponse([]byte(bad), nil); err == nil {
			t.Errorf("EmbedResponse(%s) gave no error", bad)
		}
	}
}

func TestPredictResponse(t *testing.T) {
	body := `{"predictions":[{"embeddings":{"statistics":{"truncated":false,"token_count":1},"values":[0.1,0.2]}},
	                      {"embeddings":{"statistics":{"truncated":false,"token_count":2},"values":[0.3,0.4]}}],
	          "metadata":{"billableCharacterCount":2}}`
	got, err := PredictResponse([]byte(body), decodeEmbeddings(t, []byte(`{"model":"text-embedding-005","input":["a","b"]}`)))
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, got, []byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]},{"object":"embedding","index":1,"embedding":[0.3,0.4]}],
		"model":"text-embedding-005","usage":{"prompt_tokens":3,"total_tokens":3}}`))
	for _, bad := range []string{`{}`, `[`, `{"predictions":{}}`} {
		if _, err := PredictResponse([]byte(bad), nil); err == nil {
			t.Errorf("PredictResponse(%s) gave no error", bad)
		}
	}
}
