package openai

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/providers"
)

func TestNewRequest(t *testing.T) {
	body := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}`)
	tests := []struct {
		name   string
		target providers.Target
		call   providers.Call
		url    string
		header map[string]string
	}{
		{"chat", providers.Target{Provider: "openai", BaseURL: "https://api.openai.com/v1", APIKey: "sk-1"},
			providers.Call{Endpoint: providers.ChatCompletions, Body: body},
			"https://api.openai.com/v1/chat/completions",
			map[string]string{"Authorization": "Bearer sk-1", "Content-Type": "application/json", "Accept": "application/json"}},
		{"stream", providers.Target{Provider: "groq", BaseURL: "https://api.groq.com/openai/v1", APIKey: "gsk"},
			providers.Call{Endpoint: providers.ChatCompletions, Body: body, Stream: true},
			"https://api.groq.com/openai/v1/chat/completions",
			map[string]string{"Authorization": "Bearer gsk", "Accept": "text/event-stream"}},
		{"completions", providers.Target{Provider: "openai", BaseURL: "http://127.0.0.1:9/v1", APIKey: "k"},
			providers.Call{Endpoint: providers.Completions, Body: body}, "http://127.0.0.1:9/v1/completions", nil},
		{"embeddings", providers.Target{Provider: "openai", BaseURL: "http://127.0.0.1:9/v1", APIKey: "k"},
			providers.Call{Endpoint: providers.Embeddings, Body: body}, "http://127.0.0.1:9/v1/embeddings", nil},
		{"organization, project and forwarded headers", providers.Target{Provider: "openai", BaseURL: "https://api.openai.com/v1", APIKey: "sk",
			Fields:  map[string]json.RawMessage{"llmvendor_organization": json.RawMessage(`"org-1"`), "llmvendor_project": json.RawMessage(`"proj-1"`)},
			Forward: http.Header{"X-Team": {"search"}, "Authorization": {"Bearer not-this"}}},
			providers.Call{Endpoint: providers.ChatCompletions, Body: body}, "https://api.openai.com/v1/chat/completions",
			map[string]string{"OpenAI-Organization": "org-1", "OpenAI-Project": "proj-1", "X-Team": "search", "Authorization": "Bearer sk"}},
		{"no key: no Authorization", providers.Target{Provider: "ollama", BaseURL: "http://localhost:11434/v1"},
			providers.Call{Endpoint: providers.ChatCompletions, Body: body}, "http://localhost:11434/v1/chat/completions",
			map[string]string{"Authorization": ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := Adapter{}.NewRequest(context.Background(), &tc.target, &tc.call)
			if err != nil {
				t.Fatal(err)
			}
			if req.Method != "POST" || req.URL.String() != tc.url {
				t.Errorf("%s %s, want POST %s", req.Method, req.URL, tc.url)
			}
			for k, v := range tc.header {
				if got := req.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			got, _ := io.ReadAll(req.Body)
			if string(got) != string(body) {
				t.Errorf("body changed: %s", got)
			}
		})
	}
}

func TestEveryCompatibleProviderIsRegistered(t *testing.T) {
	for _, p := range Compatible {
		id := p.ID
		if _, ok := providers.Lookup(id); !ok {
			t.Errorf("%s has no adapter", id)
		}
		if providers.DefaultBaseURL(id) == "" {
			t.Errorf("%s has no default base URL", id)
		}
		if canonical, ok := providers.Canonical(id); !ok || canonical != id {
			t.Errorf("%s is not a canonical identifier", id)
		}
	}
	if a, ok := providers.Lookup("openai"); !ok || a == nil {
		t.Fatal("openai not registered")
	}
}

func TestNewManagementRequest(t *testing.T) {
	target := providers.Target{Provider: "openai", BaseURL: "https://api.openai.com/v1", APIKey: "sk-1",
		Fields: map[string]json.RawMessage{"llmvendor_organization": json.RawMessage(`"org-1"`), "llmvendor_project": json.RawMessage(`"proj-1"`)}}
	req, err := Adapter{}.NewManagementRequest(context.Background(), &target, "POST", "/fine_tuning/jobs/ftjob-1/cancel",
		url.Values{"limit": {"3"}}, strings.NewReader(`{}`), "application/json")
	if err != nil {
		t.Fatal(err)
	}
	if req.Method != "POST" || req.URL.String() != "https://api.openai.com/v1/fine_tuning/jobs/ftjob-1/cancel?limit=3" {
		t.Errorf("%s %s", req.Method, req.URL)
	}
	for k, v := range map[string]string{"Authorization": "Bearer sk-1", "OpenAI-Organization": "org-1", "OpenAI-Project": "proj-1",
		"Content-Type": "application/json", "Accept": "application/json"} {
		if got := req.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	req, err = Adapter{}.NewManagementRequest(context.Background(), &providers.Target{Provider: "vllm", BaseURL: "http://127.0.0.1:8000/v1"},
		"GET", "/files", nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if req.URL.String() != "http://127.0.0.1:8000/v1/files" || req.Header.Get("Authorization") != "" || req.Header.Get("Content-Type") != "" {
		t.Errorf("%s with %v", req.URL, req.Header)
	}
}
