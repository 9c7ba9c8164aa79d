package anthropic

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
)

const chatBody = `{"model":"claude-haiku-4-5","messages":[{"role":"user","content":"Hi"}]}`

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonEqual compares two JSON texts as values; "created" is checked to be a recent Unix time and then ignored.
func jsonEqual(t *testing.T, got, want []byte) {
	t.Helper()
	var g, w map[string]any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want not JSON: %v\n%s", err, want)
	}
	if created, ok := g["created"]; ok {
		if n, ok := created.(float64); !ok || time.Since(time.Unix(int64(n), 0)).Abs() > time.Hour {
			t.Errorf("created = %v, want the current Unix time", created)
		}
		delete(g, "created")
	}
	if !reflect.DeepEqual(g, w) {
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		t.Errorf("JSON differs\n got: %s\nwant: %s", gb, wb)
	}
}

func headerReader(h map[string]string) func(string) string {
	return func(name string) string { return h[strings.ToLower(name)] }
}

func TestRegistered(t *testing.T) {
	a, ok := providers.Lookup("anthropic")
	if !ok {
		t.Fatal("anthropic is not registered")
	}
	if _, ok := a.(Adapter); !ok {
		t.Errorf("anthropic is served by %T", a)
	}
	if got := providers.DefaultBaseURL(ID); got != "https://api.anthropic.com/v1" {
		t.Errorf("DefaultBaseURL = %q", got)
	}
}

func TestNewRequest(t *testing.T) {
	tests := []struct {
		name   string
		target providers.Target
		stream bool
		url    string
		header map[string]string // "" means absent
	}{
		{"default host and version",
			providers.Target{Provider: ID, BaseURL: "https://api.anthropic.com/v1", APIKey: "sk-ant-1", Header: headerReader(nil)}, false,
			"https://api.anthropic.com/v1/messages",
			map[string]string{"X-Api-Key": "sk-ant-1", "Anthropic-Version": "2023-06-01", "Anthropic-Beta": "", "Content-Type": "application/json",
				"Accept": "application/json", "Authorization": ""}},
		{"custom host with a trailing slash, stream",
			providers.Target{Provider: ID, BaseURL: "http://127.0.0.1:9/proxy/v1/", APIKey: "k", Header: headerReader(nil)}, true,
			"http://127.0.0.1:9/proxy/v1/messages",
			map[string]string{"Accept": "text/event-stream"}},
		{"no base URL: the default",
			providers.Target{Provider: ID, APIKey: "k"}, false, "https://api.anthropic.com/v1/messages", nil},
		{"caller's version and beta headers",
			providers.Target{Provider: ID, BaseURL: "https://api.anthropic.com/v1", APIKey: "k",
				Header: headerReader(map[string]string{"anthropic-version": "2023-01-01", "anthropic-beta": "prompt-caching-2024-07-31,output-128k-2025-02-19"})}, false,
			"https://api.anthropic.com/v1/messages",
			map[string]string{"Anthropic-Version": "2023-01-01", "Anthropic-Beta": "prompt-caching-2024-07-31,output-128k-2025-02-19"}},
		{"target fields win over the caller's headers",
			providers.Target{Provider: ID, BaseURL: "https://api.anthropic.com/v1", APIKey: "k",
				Fields: map[string]json.RawMessage{"anthropic_version": json.RawMessage(`"2024-10-22"`), "anthropic_beta": json.RawMessage(`"files-api-2025-04-14"`)},
				Header: headerReader(map[string]string{"anthropic-version": "2023-01-01", "anthropic-beta": "x"})}, false,
			"https://api.anthropic.com/v1/messages",
			map[string]string{"Anthropic-Version": "2024-10-22", "Anthropic-Beta": "files-api-2025-04-14"}},
		{"forwarded headers, and no key means no x-api-key",
			providers.Target{Provider: ID, BaseURL: "https://api.anthropic.com/v1", Header: headerReader(nil),
				Forward: http.Header{"X-Team": {"search"}, "X-Api-Key": {"forwarded-key"}}}, false,
			"https://api.anthropic.com/v1/messages",
			map[string]string{"X-Team": "search", "X-Api-Key": "forwarded-key"}},
		{"our key wins over a forwarded one",
			providers.Target{Provider: ID, BaseURL: "https://api.anthropic.com/v1", APIKey: "mine", Header: headerReader(nil),
				Forward: http.Header{"X-Api-Key": {"forwarded-key"}}}, false,
			"https://api.anthropic.com/v1/messages",
			map[string]string{"X-Api-Key": "mine"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := chatBody // without "stream": Call.Stream decides
			req, err := Adapter{}.NewRequest(context.Background(), &tc.target, &providers.Call{Endpoint: providers.ChatCompletions, Body: []byte(body), Stream: tc.stream})
			if err != nil {
				t.Fatal(err)
			}
			if req.Method != http.MethodPost || req.URL.String() != tc.url {
				t.Errorf("%s %s, want POST %s", req.Method, req.URL, tc.url)
			}
			for k, v := range tc.header {
				if got := req.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			got, _ := io.ReadAll(req.Body)
			want := `{"model":"claude-haiku-4-5","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`
			if tc.stream {
				want = `{"model":"claude-haiku-4-5","max_tokens":4096,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`
			}
			jsonEqual(t, got, []byte(want))
		})
	}
}

func TestNewRequestRefuses(t *testing.T) {
	target := &providers.Target{Provider: ID, BaseURL: "https://api.anthropic.com/v1", APIKey: "k", Header: headerReader(nil)}
	tests := []struct {
		name     string
		call     providers.Call
		param    string
		contains string
	}{
		{"completions", providers.Call{Endpoint: providers.Completions, Body: []byte(`{"model":"m","prompt":"x"}`)}, "", "no /completions endpoint"},
		{"embeddings", providers.Call{Endpoint: providers.Embeddings, Body: []byte(`{"model":"m","input":"x"}`)}, "", "no /embeddings endpoint"},
		{"untranslatable body", providers.Call{Endpoint: providers.ChatCompletions,
			Body: []byte(`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":[{"type":"file","file":{}}]}]}`)},
			"messages[2].content[0].type", "not supported"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Adapter{}.NewRequest(context.Background(), target, &tc.call)
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Status != http.StatusBadRequest {
				t.Fatalf("err = %v, want a 400 *gwerr.Error", err)
			}
			if ge.Param != tc.param || !strings.Contains(ge.Message, tc.contains) {
				t.Errorf("param %q message %q, want param %q and a message holding %q", ge.Param, ge.Message, tc.param, tc.contains)
			}
		})
	}
}

// TestRoundTrip sends translated requests to a local Anthropic stand-in and translates what it answers, as the
// engine does: NewRequest, then TranslateResponse on a 2xx, TranslateStream on a 2xx stream, TranslateError
// otherwise.
func TestRoundTrip(t *testing.T) {
	type seen struct {
		method, path, query string
		header              http.Header
		body                []byte
	}
	got := make(chan seen, 1)
	var answer func(w http.ResponseWriter)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), body}
		answer(w)
	}))
	defer srv.Close()
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("test server at %s, want 127.0.0.1", srv.URL)
	}

	tests := []struct {
		name   string
		strict bool
		stream bool
		status int
		answer []byte
		ctype  string
		want   string // testdata file of the expected OpenAI answer
	}{
		{"chat", false, false, 200, readFile(t, "response.anthropic.json"), "application/json", "response.openai.json"},
		{"chat strict", true, false, 200, readFile(t, "response.anthropic.json"), "application/json", "response.strict.json"},
		{"stream", false, true, 200, readFile(t, "stream.sse"), "text/event-stream", "stream.openai.jsonl"},
		{"error", false, false, 429, readFile(t, "error.anthropic.json"), "application/json", "error.openai.json"},
	}
	adapter := Adapter{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			answer = func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", tc.ctype)
				w.WriteHeader(tc.status)
				w.Write(tc.answer)
			}
			reqBody := readFile(t, "request.openai.json")
			wantUpstream := readFile(t, "request.anthropic.json")
			if tc.stream {
				reqBody = []byte(strings.Replace(string(reqBody), `"model"`, `"stream": true, "model"`, 1))
				wantUpstream = []byte(strings.Replace(string(wantUpstream), `"model"`, `"stream": true, "model"`, 1))
			}
			target := &providers.Target{Provider: ID, BaseURL: srv.URL + "/v1", APIKey: "sk-ant-test",
				Header: headerReader(map[string]string{"anthropic-beta": "prompt-caching-2024-07-31", "authorization": "Bearer sk-ant-test"}),
				Client: srv.Client()}
			call := &providers.Call{Endpoint: providers.ChatCompletions, Body: reqBody, Stream: tc.stream, Strict: tc.strict}
			req, err := adapter.NewRequest(context.Background(), target, call)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()

			up := <-got
			if up.method != http.MethodPost || up.path != "/v1/messages" || up.query != "" {
				t.Errorf("upstream got %s %s?%s, want POST /v1/messages", up.method, up.path, up.query)
			}
			wantHeaders := map[string]string{"X-Api-Key": "sk-ant-test", "Anthropic-Version": "2023-06-01",
				"Anthropic-Beta": "prompt-caching-2024-07-31", "Content-Type": "application/json", "Authorization": ""}
			for k, v := range wantHeaders {
				if g := up.header.Get(k); g != v {
					t.Errorf("upstream header %s = %q, want %q", k, g, v)
				}
			}
			jsonEqual(t, up.body, wantUpstream)

			switch {
			case resp.StatusCode != http.StatusOK:
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != tc.status {
					t.Errorf("status %d", resp.StatusCode)
				}
				jsonEqual(t, adapter.TranslateError(target, call, resp.StatusCode, body), readFile(t, tc.want))
			case tc.stream:
				s := adapter.TranslateStream(target, call, resp.Body)
				defer s.Close()
				br := bufio.NewReader(s)
				for i, want := range strings.Split(strings.TrimSpace(string(readFile(t, tc.want))), "\n") {
					line, err := br.ReadString('\n')
					if err != nil {
						t.Fatalf("chunk %d: %v", i, err)
					}
					if blank, _ := br.ReadString('\n'); blank != "\n" {
						t.Fatalf("chunk %d not followed by a blank line: %q", i, blank)
					}
					data, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "data: ")
					if !ok {
						t.Fatalf("chunk %d = %q", i, line)
					}
					if want == "[DONE]" {
						if data != want {
							t.Errorf("chunk %d = %s, want [DONE]", i, data)
						}
						continue
					}
					jsonEqual(t, []byte(data), []byte(want))
				}
				if _, err := br.ReadByte(); err != io.EOF {
					t.Errorf("after [DONE]: %v, want io.EOF", err)
				}
			default:
				body, _ := io.ReadAll(resp.Body)
				out, err := adapter.TranslateResponse(target, call, body)
				if err != nil {
					t.Fatal(err)
				}
				jsonEqual(t, out, readFile(t, tc.want))
			}
		})
	}
}

func TestTranslateResponseRefusesOtherShapes(t *testing.T) {
	_, err := Adapter{}.TranslateResponse(&providers.Target{}, &providers.Call{}, []byte(`{"type":"completion"}`))
	if err == nil {
		t.Error("a body that is not a message translated without error")
	}
}
