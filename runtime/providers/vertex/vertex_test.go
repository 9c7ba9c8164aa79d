package vertex

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
)

func TestRegistered(t *testing.T) {
	a, ok := providers.Lookup("vertex-ai")
	if !ok {
		t.Fatal("vertex-ai is not registered")
	}
	if _, ok := a.(*Adapter); !ok {
		t.Fatalf("vertex-ai is a %T", a)
	}
	if id, _ := providers.Canonical("cloudy"); id != "vertex-ai" {
		t.Fatalf("cloudy = %q", id)
	}
}

func TestChatRoundTrip(t *testing.T) {
	fake := newFakeVertex(t, 200, "application/json", readFile(t, "answer.gemini.json"))
	a := New()
	tg := newTarget(fake.URL, fields(t, "cloudy_project_id", "my-project", "cloudy_region", "europe-west4"),
		map[string]string{"X-cloudy-LLM-Request-Type": "shared"})
	tg.Forward = http.Header{"X-Team": {"ml"}}
	call := &providers.Call{Endpoint: providers.ChatCompletions, Body: readFile(t, "chat.openai.json")}
	req, err := a.NewRequest(context.Background(), tg, call)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := fake.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got := fake.last(t)
	if want := "/v1/projects/my-project/locations/europe-west4/publishers/google/models/gemini-2.5-pro:generateContent"; got.path != want || got.query != "" {
		t.Errorf("path = %s?%s, want %s", got.path, got.query, want)
	}
	for name, want := range map[string]string{"Authorization": "Bearer ya29.caller-token", "Content-Type": "application/json",
		"X-Vertex-Ai-Llm-Request-Type": "shared", "X-Team": "ml", "X-Goog-Api-Key": ""} {
		if v := got.header.Get(name); v != want {
			t.Errorf("header %s = %q, want %q", name, v, want)
		}
	}
	jsonEqual(t, got.body, readFile(t, "chat.gemini.json"))
	completion, err := a.TranslateResponse(tg, call, answer)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, completion, readFile(t, "answer.openai.json"))
}

func TestStreamRoundTrip(t *testing.T) {
	fake := newFakeVertex(t, 200, "text/event-stream", readFile(t, "stream.sse"))
	a := New()
	tg := newTarget(fake.URL+"/v1", nil, map[string]string{"x-gateway-cloudy-project-id": "p-1", "x-gateway-cloudy-region": "us-east5"})
	call := &providers.Call{Endpoint: providers.ChatCompletions, Stream: true,
		Body: []byte(`{"model":"gemini-2.5-flash","stream":true,"messages":[{"role":"user","content":"Hi"}]}`)}
	req, err := a.NewRequest(context.Background(), tg, call)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := fake.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got := fake.last(t)
	if want := "/v1/projects/p-1/locations/us-east5/publishers/google/models/gemini-2.5-flash:streamGenerateContent"; got.path != want || got.query != "alt=sse" {
		t.Errorf("request = %s?%s, want %s?alt=sse", got.path, got.query, want)
	}
	if v := got.header.Get("X-Vertex-AI-LLM-Request-Type"); v != "" {
		t.Errorf("X-Vertex-AI-LLM-Request-Type = %q without the caller's header", v)
	}
	out, err := io.ReadAll(a.TranslateStream(tg, call, resp.Body))
	if err != nil {
		t.Fatal(err)
	}
	sseEqual(t, string(out), string(readFile(t, "stream.openai.sse")))
}

func TestEmbeddingsRoundTrip(t *testing.T) {
	fake := newFakeVertex(t, 200, "application/json", readFile(t, "predict.answer.json"))
	a := New()
	tg := newTarget(fake.URL, fields(t, "cloudy_project_id", "p", "cloudy_region", "us-central1"), nil)
	call := &providers.Call{Endpoint: providers.Embeddings, Body: []byte(`{"model":"text-embedding-005","input":["first text","second"],"dimensions":3}`)}
	req, err := a.NewRequest(context.Background(), tg, call)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := fake.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got := fake.last(t)
	if want := "/v1/projects/p/locations/us-central1/publishers/google/models/text-embedding-005:predict"; got.path != want {
		t.Errorf("path = %s, want %s", got.path, want)
	}
	jsonEqual(t, got.body, []byte(`{"instances":[{"content":"first text"},{"content":"second"}],"parameters":{"outputDimensionality":3}}`))
	list, err := a.TranslateResponse(tg, call, answer)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, list, []byte(`{"object":"list","model":"text-embedding-005","usage":{"prompt_tokens":10,"total_tokens":10},"data":[
		{"object":"embedding","index":0,"embedding":[0.0123,-0.0456,0.0789]},{"object":"embedding","index":1,"embedding":[0.1,0.2,0.3]}]}`))
}

func TestURLs(t *testing.T) {
	chat := `{"model":"%s","messages":[{"role":"user","content":"x"}]}`
	tests := []struct {
		name, base, model, region, want string
	}{
		{"regional host", "", "gemini-2.0-flash-001", "us-central1",
			"https://us-central1-aiplatform.googleapis.com/v1/projects/proj/locations/us-central1/publishers/google/models/gemini-2.0-flash-001:generateContent"},
		{"global host", "", "gemini-2.5-pro", "global",
			"https://aiplatform.googleapis.com/v1/projects/proj/locations/global/publishers/google/models/gemini-2.5-pro:generateContent"},
		{"custom host", "http://10.1.2.3:9000/", "gemini-2.5-pro", "asia-northeast1",
			"http://10.1.2.3:9000/v1/projects/proj/locations/asia-northeast1/publishers/google/models/gemini-2.5-pro:generateContent"},
		{"custom host with /v1", "https://psc.example.internal/v1", "gemini-2.5-pro", "us-central1",
			"https://psc.example.internal/v1/projects/proj/locations/us-central1/publishers/google/models/gemini-2.5-pro:generateContent"},
		{"deployed endpoint", "", "endpoints/1234567890", "us-central1",
			"https://us-central1-aiplatform.googleapis.com/v1/projects/proj/locations/us-central1/endpoints/1234567890:generateContent"},
		{"claude", "", "claude-sonnet-4@20250514", "us-east5",
			"https://us-east5-aiplatform.googleapis.com/v1/projects/proj/locations/us-east5/publishers/anthropic/models/claude-sonnet-4@20250514:rawPredict"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tg := newTarget(tc.base, fields(t, "cloudy_project_id", "proj", "cloudy_region", tc.region), nil)
			req, err := New().NewRequest(context.Background(), tg,
				&providers.Call{Endpoint: providers.ChatCompletions, Body: []byte(strings.Replace(chat, "%s", tc.model, 1))})
			if err != nil {
				t.Fatal(err)
			}
			if got := req.URL.String(); got != tc.want {
				t.Errorf("URL = %s\nwant  %s", got, tc.want)
			}
		})
	}
}

// TestLocation pins where project and region come from: config fields win over the caller's headers.
func TestLocation(t *testing.T) {
	tests := []struct {
		name          string
		fields        map[string]any
		hdr           map[string]string
		wantPath      string
		wantErrParam  string
		wantErrStatus int
	}{
		{"config wins", map[string]any{"cloudy_project_id": "cfg-proj", "cloudy_region": "europe-west4"},
			map[string]string{"x-gateway-cloudy-project-id": "hdr-proj", "x-gateway-cloudy-region": "us-east1"},
			"/v1/projects/cfg-proj/locations/europe-west4/", "", 0},
		{"headers", nil, map[string]string{"X-Gateway-Cloudy-Project-Id": "hdr-proj", "X-Gateway-Cloudy-Region": "us-east1"},
			"/v1/projects/hdr-proj/locations/us-east1/", "", 0},
		{"mixed", map[string]any{"cloudy_region": "europe-west1"}, map[string]string{"x-gateway-cloudy-project-id": "hdr-proj"},
			"/v1/projects/hdr-proj/locations/europe-west1/", "", 0},
		{"no region", map[string]any{"cloudy_project_id": "p"}, nil, "", "cloudy_region", 400},
		{"no project", map[string]any{"cloudy_region": "us-central1"}, nil, "", "cloudy_project_id", 400},
		{"region that changes the host", map[string]any{"cloudy_project_id": "p", "cloudy_region": "evil.com/x"}, nil, "", "cloudy_region", 400},
		{"project with a slash", map[string]any{"cloudy_project_id": "p/../q", "cloudy_region": "us-central1"}, nil, "", "cloudy_project_id", 400},
		{"domain-scoped project", map[string]any{"cloudy_project_id": "example.com:my-project", "cloudy_region": "us-central1"}, nil,
			"/v1/projects/example.com:my-project/locations/us-central1/", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := map[string]json.RawMessage{}
			for k, v := range tc.fields {
				f[k], _ = json.Marshal(v)
			}
			req, err := New().NewRequest(context.Background(), newTarget("http://127.0.0.1:1", f, tc.hdr),
				&providers.Call{Endpoint: providers.ChatCompletions, Body: []byte(`{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"x"}]}`)})
			if tc.wantErrParam != "" {
				var ge *gwerr.Error
				if !errors.As(err, &ge) || ge.Status != tc.wantErrStatus || ge.Param != tc.wantErrParam {
					t.Fatalf("err = %v, want %d naming %q", err, tc.wantErrStatus, tc.wantErrParam)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(req.URL.Path, tc.wantPath) {
				t.Errorf("path = %s, want it to start with %s", req.URL.Path, tc.wantPath)
			}
		})
	}
}

func TestNewRequestErrors(t *testing.T) {
	loc := func(t *testing.T) map[string]json.RawMessage {
		return fields(t, "cloudy_project_id", "p", "cloudy_region", "us-central1")
	}
	tests := []struct {
		name     string
		endpoint providers.Endpoint
		body     string
		noKey    bool
		status   int
		param    string
	}{
		{"bad model", providers.ChatCompletions, `{"model":"gemini/../x","messages":[{"role":"user","content":"x"}]}`, false, 400, "model"},
		{"bad content", providers.ChatCompletions, `{"model":"gemini-2.5-pro","messages":[{"role":"user","content":[{"type":"x"}]}]}`, false, 400, "messages[0].content[0].type"},
		{"claude embeddings", providers.Embeddings, `{"model":"claude-3-haiku","input":"x"}`, false, 400, "model"},
		{"completions", providers.Completions, `{"model":"gemini-2.5-pro","prompt":"x"}`, false, 400, ""},
		{"no credentials", providers.ChatCompletions, `{"model":"gemini-2.5-pro","messages":[{"role":"user","content":"x"}]}`, true, 401, "cloudy_service_account_json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tg := newTarget("", loc(t), nil)
			if tc.noKey {
				tg.APIKey = ""
			}
			_, err := New().NewRequest(context.Background(), tg, &providers.Call{Endpoint: tc.endpoint, Body: []byte(tc.body)})
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Status != tc.status || ge.Param != tc.param {
				t.Fatalf("err = %v, want %d naming %q", err, tc.status, tc.param)
			}
		})
	}
}

func TestTranslateError(t *testing.T) {
	a := New()
	call := &providers.Call{Endpoint: providers.ChatCompletions, Body: []byte(`{"model":"gemini-2.5-pro"}`)}
	got := a.TranslateError(nil, call, 429, readFile(t, "error.vertex.json"))
	var e struct {
		Error struct {
			Message       string          `json:"message"`
			Type          string          `json:"type"`
			Code          string          `json:"code"`
			Param         *string         `json:"param"`
			ProviderError json.RawMessage `json:"provider_error"`
		} `json:"error"`
	}
	if err := json.Unmarshal(got, &e); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(e.Error.Message, "Resource exhausted.") || e.Error.Type != "rate_limit_error" || e.Error.Code != "resource_exhausted" ||
		e.Error.Param != nil {
		t.Errorf("error = %s", got)
	}
	jsonEqual(t, e.Error.ProviderError, readFile(t, "error.vertex.json"))
}
