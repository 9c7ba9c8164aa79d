package google

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
)

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// normalize decodes JSON and blanks what the translation generates: created, and tool call ids that want marks
// with "*".
func normalize(t testing.TB, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if _, ok := x["created"]; ok {
				x["created"] = 0.0
			}
			if _, ok := x["function"]; ok && x["id"] != nil {
				x["id"] = "*"
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return v
}

func jsonEqual(t testing.TB, got, want []byte) {
	t.Helper()
	if g, w := normalize(t, got), normalize(t, want); !reflect.DeepEqual(g, w) {
		t.Errorf("JSON differs\n got: %s\nwant: %s", got, want)
	}
}

// recorded is what the fake upstream saw of one request.
type recorded struct {
	method, path, query string
	header              http.Header
	body                []byte
}

// upstream starts a local server that records each request and answers with status, contentType and answer.
func upstream(t *testing.T, status int, contentType string, answer []byte) (*httptest.Server, *[]recorded) {
	t.Helper()
	var mu sync.Mutex
	var seen []recorded
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), body})
		mu.Unlock()
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = w.Write(answer)
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func target(baseURL string) *providers.Target {
	return &providers.Target{Provider: "google", BaseURL: baseURL, APIKey: "g-key",
		Forward: http.Header{"X-Trace": {"t-1"}}, Header: func(string) string { return "" }}
}

func TestRegistered(t *testing.T) {
	a, ok := providers.Lookup("google")
	if !ok {
		t.Fatal("google is not registered")
	}
	if _, ok := a.(Adapter); !ok {
		t.Fatalf("google is a %T", a)
	}
}

func TestChatRoundTrip(t *testing.T) {
	for _, strict := range []bool{false, true} {
		want := "answer.openai.json"
		if strict {
			want = "answer.openai.strict.json"
		}
		t.Run(want, func(t *testing.T) {
			srv, seen := upstream(t, 200, "application/json", readFile(t, "answer.gemini.json"))
			a := Adapter{}
			tg := target(srv.URL)
			call := &providers.Call{Endpoint: providers.ChatCompletions, Body: readFile(t, "chat.openai.json"), Strict: strict}
			req, err := a.NewRequest(context.Background(), tg, call)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			answer, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got := (*seen)[0]
			if got.method != http.MethodPost || got.path != "/v1beta/models/gemini-2.5-flash:generateContent" || got.query != "" {
				t.Errorf("request = %s %s?%s", got.method, got.path, got.query)
			}
			for name, want := range map[string]string{"X-Goog-Api-Key": "g-key", "Content-Type": "application/json",
				"Accept": "application/json", "X-Trace": "t-1", "Authorization": ""} {
				if v := got.header.Get(name); v != want {
					t.Errorf("header %s = %q, want %q", name, v, want)
				}
			}
			jsonEqual(t, got.body, readFile(t, "chat.gemini.json"))
			completion, err := a.TranslateResponse(tg, call, answer)
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, completion, readFile(t, want))
		})
	}
}

func TestStreamRoundTrip(t *testing.T) {
	srv, seen := upstream(t, 200, "text/event-stream", readFile(t, "stream.sse"))
	a := Adapter{}
	tg := target(srv.URL + "/v1beta/") // a custom host given with the version segment
	call := &providers.Call{Endpoint: providers.ChatCompletions, Body: readFile(t, "chat.openai.json"), Stream: true, Strict: true}
	req, err := a.NewRequest(context.Background(), tg, call)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got := (*seen)[0]
	if got.path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || got.query != "alt=sse" {
		t.Errorf("request = %s?%s", got.path, got.query)
	}
	if a := got.header.Get("Accept"); a != "text/event-stream" {
		t.Errorf("Accept = %q", a)
	}
	out, err := io.ReadAll(a.TranslateStream(tg, call, resp.Body))
	if err != nil {
		t.Fatal(err)
	}
	gotEvents := strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n")
	wantEvents := strings.Split(strings.TrimSuffix(string(readFile(t, "stream.openai.sse")), "\n\n"), "\n\n")
	if len(gotEvents) != len(wantEvents) {
		t.Fatalf("%d events, want %d:\n%s", len(gotEvents), len(wantEvents), out)
	}
	for i := range wantEvents {
		g, w := strings.TrimPrefix(gotEvents[i], "data: "), strings.TrimPrefix(wantEvents[i], "data: ")
		if w == "[DONE]" {
			if g != w {
				t.Errorf("event %d = %q, want [DONE]", i, g)
			}
			continue
		}
		jsonEqual(t, []byte(g), []byte(w))
	}
}

func TestEmbeddingsRoundTrip(t *testing.T) {
	tests := []struct {
		name, body, path, wantBody, answer, want string
	}{
		{"single", `{"model":"text-embedding-004","input":"hi"}`, "/v1beta/models/text-embedding-004:embedContent",
			`{"model":"models/text-embedding-004","content":{"parts":[{"text":"hi"}]}}`,
			`{"embedding":{"values":[0.5,0.25]}}`,
			`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,0.25]}],"model":"text-embedding-004","usage":{"prompt_tokens":0,"total_tokens":0}}`},
		{"batch", `{"model":"gemini-embedding-001","input":["a","b"],"dimensions":2}`, "/v1beta/models/gemini-embedding-001:batchEmbedContents",
			`{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"a"}]},"outputDimensionality":2},{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"b"}]},"outputDimensionality":2}]}`,
			`{"embeddings":[{"values":[1,0]},{"values":[0,1]}]}`,
			`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1,0]},{"object":"embedding","index":1,"embedding":[0,1]}],"model":"gemini-embedding-001","usage":{"prompt_tokens":0,"total_tokens":0}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, seen := upstream(t, 200, "application/json", []byte(tc.answer))
			a := Adapter{}
			tg := target(srv.URL)
			call := &providers.Call{Endpoint: providers.Embeddings, Body: []byte(tc.body)}
			req, err := a.NewRequest(context.Background(), tg, call)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			answer, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if got := (*seen)[0]; got.path != tc.path || got.header.Get("X-Goog-Api-Key") != "g-key" {
				t.Errorf("request = %s, key %q", got.path, got.header.Get("X-Goog-Api-Key"))
			}
			jsonEqual(t, (*seen)[0].body, []byte(tc.wantBody))
			list, err := a.TranslateResponse(tg, call, answer)
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, list, []byte(tc.want))
		})
	}
}

func TestURLs(t *testing.T) {
	tests := []struct {
		name, base, body, want string
	}{
		{"default host", "", `{"model":"gemini-2.0-flash","messages":[{"role":"user","content":"x"}]}`,
			"https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent"},
		{"models/ prefix", "https://generativelanguage.googleapis.com", `{"model":"models/gemini-2.0-flash","messages":[{"role":"user","content":"x"}]}`,
			"https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent"},
		{"custom host with a path", "http://10.0.0.5:8080/proxy/google/", `{"model":"gemini-2.0-flash","messages":[{"role":"user","content":"x"}]}`,
			"http://10.0.0.5:8080/proxy/google/v1beta/models/gemini-2.0-flash:generateContent"},
		{"tuned model", "https://generativelanguage.googleapis.com", `{"model":"tunedModels/my-model-123","messages":[{"role":"user","content":"x"}]}`,
			"https://generativelanguage.googleapis.com/v1beta/tunedModels/my-model-123:generateContent"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := Adapter{}.NewRequest(context.Background(), target(tc.base),
				&providers.Call{Endpoint: providers.ChatCompletions, Body: []byte(tc.body)})
			if err != nil {
				t.Fatal(err)
			}
			if got := req.URL.String(); got != tc.want {
				t.Errorf("URL = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestNewRequestErrors(t *testing.T) {
	tests := []struct {
		name     string
		endpoint providers.Endpoint
		body     string
		param    string
	}{
		{"model with a slash", providers.ChatCompletions, `{"model":"../../v1/files","messages":[{"role":"user","content":"x"}]}`, "model"},
		{"model with a colon", providers.ChatCompletions, `{"model":"gemini:countTokens","messages":[{"role":"user","content":"x"}]}`, "model"},
		{"bad tuned model", providers.ChatCompletions, `{"model":"tunedModels/a/b","messages":[{"role":"user","content":"x"}]}`, "model"},
		{"bad message", providers.ChatCompletions, `{"model":"m","messages":[{"role":"user","content":[{"type":"audio"}]}]}`, "messages[0].content[0].type"},
		{"token input", providers.Embeddings, `{"model":"m","input":[1,2]}`, "input"},
		{"completions", providers.Completions, `{"model":"m","prompt":"x"}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Adapter{}.NewRequest(context.Background(), target("http://127.0.0.1:1"),
				&providers.Call{Endpoint: tc.endpoint, Body: []byte(tc.body)})
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Status != 400 || ge.Param != tc.param {
				t.Fatalf("err = %v, want 400 naming %q", err, tc.param)
			}
		})
	}
}

func TestErrorRoundTrip(t *testing.T) {
	srv, _ := upstream(t, 400, "application/json", readFile(t, "error.gemini.json"))
	a := Adapter{}
	tg := target(srv.URL)
	call := &providers.Call{Endpoint: providers.ChatCompletions, Body: []byte(`{"model":"m","messages":[]}`)}
	req, err := http.NewRequest(http.MethodPost, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got := a.TranslateError(tg, call, resp.StatusCode, body)
	if !bytes.Contains(got, []byte(`"provider_error"`)) {
		t.Fatalf("no provider_error: %s", got)
	}
	jsonEqual(t, got, readFile(t, "error.openai.json"))
}

// TestSharedRequestUnchanged: with the caller's body, every attempt translates the one decoded request, which
// translation must leave as it found it.
func TestSharedRequestUnchanged(t *testing.T) {
	raw := readFile(t, "chat.openai.json")
	body, err := schema.ReadBody(raw)
	if err != nil {
		t.Fatal(err)
	}
	call := &providers.Call{Endpoint: providers.ChatCompletions, Body: raw, Request: &body}
	shared, err := call.Chat()
	if err != nil {
		t.Fatal(err)
	}
	want, err := schema.DecodeChat(raw)
	if err != nil {
		t.Fatal(err)
	}
	var first []byte
	for attempt := 0; attempt < 2; attempt++ {
		req, err := Adapter{}.NewRequest(context.Background(), target("http://127.0.0.1:1"), call)
		if err != nil {
			t.Fatal(err)
		}
		sent, _ := io.ReadAll(req.Body)
		if attempt == 0 {
			first = sent
		} else if !bytes.Equal(sent, first) {
			t.Errorf("attempt %d sent %s, the first %s", attempt, sent, first)
		}
	}
	if again, _ := call.Chat(); again != shared {
		t.Error("the request was decoded again")
	}
	if !reflect.DeepEqual(shared, want) {
		t.Errorf("translation changed the shared request:\n got %+v\nwant %+v", shared, want)
	}
}
