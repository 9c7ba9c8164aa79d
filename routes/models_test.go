package routes

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/catalog"
	"github.com/llmgw/gateway/storage"
)

type modelList struct {
	Object string `json:"object"`
	Data   []struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	} `json:"data"`
}

func (a answer) models(t *testing.T) modelList {
	t.Helper()
	var l modelList
	if a.status != 200 || json.Unmarshal(a.body, &l) != nil || l.Object != "list" {
		t.Fatalf("not a model list: %d %s", a.status, a.body)
	}
	for _, m := range l.Data {
		if m.Object != "model" {
			t.Fatalf("entry %q has object %q", m.ID, m.Object)
		}
	}
	return l
}

// TestModelsOfTheWorkspace: without provider headers, /v1/models lists the catalogue's models of each stored
// provider of the caller's workspace as @slug/model, owned by the provider, ordered; none of another's.
func TestModelsOfTheWorkspace(t *testing.T) {
	f := newFixture(t, Options{})
	if l := f.do(t, "GET", "/v1/models", "", HeaderAPIKey, f.plain).models(t); len(l.Data) != 0 {
		t.Fatalf("a workspace without providers lists %d models", len(l.Data))
	}
	for _, p := range []*storage.Provider{
		{WorkspaceID: f.ws.ID, Slug: "claude", Provider: "anthropic", Fields: map[string]json.RawMessage{"api_key": json.RawMessage(`"k"`)}},
		{WorkspaceID: f.ws.ID, Slug: "aws", Provider: "bedrock", Fields: map[string]json.RawMessage{
			"models": json.RawMessage(`[{"id":"my-custom-model","context_window":1000}]`)}},
		{WorkspaceID: f.other.ID, Slug: "theirs", Provider: "openai"},
	} {
		if _, err := f.store.Providers.Put(p); err != nil {
			t.Fatal(err)
		}
	}
	l := f.do(t, "GET", "/v1/models", "", HeaderAPIKey, f.plain).models(t)
	want := len(catalog.Default().Models("anthropic")) + len(catalog.Default().Models("bedrock")) + 1
	if len(l.Data) != want {
		t.Fatalf("%d models, want %d", len(l.Data), want)
	}
	var ids []string
	for _, m := range l.Data {
		ids = append(ids, m.ID)
		slug, _, _ := strings.Cut(strings.TrimPrefix(m.ID, "@"), "/")
		if owner := map[string]string{"claude": "anthropic", "aws": "bedrock"}[slug]; owner == "" || m.OwnedBy != owner {
			t.Errorf("model %q owned by %q", m.ID, m.OwnedBy)
		}
	}
	if !slices.IsSorted(ids) || !slices.Contains(ids, "@aws/my-custom-model") {
		t.Errorf("ids unordered, or without the stored provider's own model: %v", ids)
	}
}

// TestModelsOfAProvider: with provider headers, /v1/models asks the provider and translates its list; providers
// without a list API answer from the catalogue; the provider's errors pass through; the answer is bounded.
func TestModelsOfAProvider(t *testing.T) {
	f := newFixture(t, Options{})
	lists := map[string]string{
		"/v1/models":                        `{"object":"list","data":[{"id":"gpt-4o","object":"model","created":1715367049,"owned_by":"system"}]}`,
		"/anthropic/v1/models":              `{"data":[{"type":"model","id":"claude-sonnet-4-5","display_name":"Claude Sonnet 4.5","created_at":"2025-09-29T00:00:00Z"}],"has_more":false}`,
		"/google/v1beta/models":             `{"models":[{"name":"models/gemini-2.5-pro","displayName":"Gemini 2.5 Pro"},{"name":"models/gemini-2.5-flash"}]}`,
		"/broken/v1/models":                 `{"error":{"message":"bad key","type":"invalid_request_error"}}`,
		"/huge/v1/models":                   "",
		"/anthropic-unauthorised/v1/models": `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`,
	}
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/huge/v1/models":
			io.WriteString(w, `{"object":"list","data":[`+strings.Repeat(" ", 9<<20)+`]}`)
			return
		case strings.HasPrefix(r.URL.Path, "/broken"), strings.HasSuffix(r.URL.Path, "unauthorised/v1/models"):
			w.WriteHeader(401)
		}
		io.WriteString(w, lists[r.URL.Path])
	})
	host, _ := json.Marshal(up.URL + "/anthropic/v1")
	if _, err := f.store.Providers.Put(&storage.Provider{WorkspaceID: f.ws.ID, Slug: "claude", Provider: "anthropic",
		Fields: map[string]json.RawMessage{"api_key": json.RawMessage(`"sk-ant"`), "custom_host": host}}); err != nil {
		t.Fatal(err)
	}
	get := func(headers ...string) answer {
		return f.do(t, "GET", "/v1/models", "", append([]string{HeaderAPIKey, f.plain}, headers...)...)
	}

	l := get(HeaderProvider, "openai", "Authorization", "Bearer sk-oa", HeaderCustomHost, up.URL+"/v1").models(t)
	if len(l.Data) != 1 || l.Data[0].ID != "gpt-4o" || l.Data[0].OwnedBy != "system" {
		t.Errorf("openai list not passed through: %+v", l)
	}
	if r, _ := up.lastRequest(); r.Method != "GET" || r.Header.Get("Authorization") != "Bearer sk-oa" {
		t.Errorf("openai list asked with %s, Authorization %q", r.Method, r.Header.Get("Authorization"))
	}

	for _, h := range [][]string{{HeaderVirtualKey, "claude"}, {HeaderConfig, `{"strategy":{"mode":"fallback"},"targets":[{"provider":"@claude"},{"provider":"openai","api_key":"x"}]}`}} {
		l = get(h...).models(t)
		if len(l.Data) != 1 || l.Data[0].ID != "claude-sonnet-4-5" || l.Data[0].OwnedBy != "anthropic" || l.Data[0].Created != 1759104000 {
			t.Errorf("%v: anthropic list not translated: %+v", h, l)
		}
		if r, _ := up.lastRequest(); r.URL.RawQuery != "limit=1000" || r.Header.Get("X-Api-Key") != "sk-ant" || r.Header.Get("Anthropic-Version") == "" {
			t.Errorf("anthropic list asked with query %q, headers %v", r.URL.RawQuery, r.Header)
		}
	}

	l = get(HeaderProvider, "google", "Authorization", "Bearer g-key", HeaderCustomHost, up.URL+"/google").models(t)
	if len(l.Data) != 2 || l.Data[0].ID != "gemini-2.5-pro" || l.Data[1].OwnedBy != "google" {
		t.Errorf("gemini list not translated: %+v", l)
	}
	if r, _ := up.lastRequest(); r.Header.Get("X-Goog-Api-Key") != "g-key" {
		t.Errorf("gemini list asked without the key: %v", r.Header)
	}

	calls := up.calls.Load()
	l = get(HeaderProvider, "bedrock").models(t)
	if len(l.Data) != len(catalog.Default().Models("bedrock")) || l.Data[0].OwnedBy != "bedrock" || up.calls.Load() != calls {
		t.Errorf("bedrock not listed from the catalogue: %d models", len(l.Data))
	}

	if a := get(HeaderProvider, "openai", "Authorization", "Bearer x", HeaderCustomHost, up.URL+"/broken/v1"); a.status != 401 || string(a.body) != lists["/broken/v1/models"] {
		t.Errorf("openai error not passed through: %d %s", a.status, a.body)
	}
	a := get(HeaderProvider, "anthropic", "Authorization", "Bearer x", HeaderCustomHost, up.URL+"/anthropic-unauthorised/v1")
	if a.status != 401 || !strings.Contains(string(a.body), `"message":"invalid x-api-key"`) || !strings.Contains(string(a.body), `"provider_error"`) {
		t.Errorf("anthropic error not translated: %d %s", a.status, a.body)
	}
	checkError(t, get(HeaderProvider, "openai", "Authorization", "Bearer x", HeaderCustomHost, up.URL+"/huge/v1"), 502, "upstream_error", nil)
	checkError(t, get(HeaderProvider, "no-such"), 400, "invalid_request", HeaderProvider)
	checkError(t, get(HeaderVirtualKey, "nope"), 404, "not_found", HeaderVirtualKey)
}
