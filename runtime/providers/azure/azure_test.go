package azure

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
)

// golden is one case of testdata/requests.json: a target and an OpenAI request, and the Azure request they make.
type golden struct {
	Name        string                     `json:"name"`
	Endpoint    string                     `json:"endpoint"`
	Stream      bool                       `json:"stream"`
	BaseURL     string                     `json:"base_url"`
	APIKey      string                     `json:"api_key"`
	Fields      map[string]json.RawMessage `json:"fields"`
	Headers     map[string]string          `json:"headers"`
	Forward     map[string]string          `json:"forward"`
	Body        json.RawMessage            `json:"body"`
	RawBody     string                     `json:"raw_body"`
	WantURL     string                     `json:"want_url"`
	WantHeaders map[string]string          `json:"want_headers"`
	WantBody    json.RawMessage            `json:"want_body"`
	WantError   *struct {
		Status int    `json:"status"`
		Param  string `json:"param"`
	} `json:"want_error"`
}

func (g *golden) target() *providers.Target {
	t := &providers.Target{Provider: ID, BaseURL: g.BaseURL, APIKey: g.APIKey, Fields: g.Fields, Header: headerFunc(g.Headers)}
	if len(g.Forward) > 0 {
		t.Forward = http.Header{}
		for k, v := range g.Forward {
			t.Forward.Set(k, v)
		}
	}
	return t
}

func (g *golden) call() *providers.Call {
	c := &providers.Call{Endpoint: providers.ChatCompletions, Body: g.Body, Stream: g.Stream}
	if g.RawBody != "" {
		c.Body = []byte(g.RawBody)
	}
	switch g.Endpoint {
	case "completions":
		c.Endpoint = providers.Completions
	case "embeddings":
		c.Endpoint = providers.Embeddings
	}
	return c
}

// headerFunc reads case-insensitively from m, as the runtime's header reader does.
func headerFunc(m map[string]string) func(string) string {
	return func(name string) string {
		for k, v := range m {
			if strings.EqualFold(k, name) {
				return v
			}
		}
		return ""
	}
}

func loadGolden(t testing.TB) []golden {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []golden
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

func jsonEqual(t *testing.T, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got is not JSON: %v: %s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want is not JSON: %v: %s", err, want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("body\n got %s\nwant %s", got, want)
	}
}

func TestGoldenRequests(t *testing.T) {
	for _, g := range loadGolden(t) {
		t.Run(g.Name, func(t *testing.T) {
			req, err := Adapter{}.NewRequest(context.Background(), g.target(), g.call())
			if g.WantError != nil {
				var ge *gwerr.Error
				if !errors.As(err, &ge) {
					t.Fatalf("err = %v, want a *gwerr.Error", err)
				}
				if ge.Status != g.WantError.Status || ge.Param != g.WantError.Param || ge.Code != gwerr.CodeInvalidRequest {
					t.Errorf("err = %d %s param %q, want %d param %q", ge.Status, ge.Code, ge.Param, g.WantError.Status, g.WantError.Param)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.Method != http.MethodPost || req.URL.String() != g.WantURL {
				t.Errorf("%s %s\nwant POST %s", req.Method, req.URL, g.WantURL)
			}
			for k, v := range g.WantHeaders {
				if got := req.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			got, _ := io.ReadAll(req.Body)
			want := g.WantBody
			if want == nil {
				if !bytes.Equal(got, g.Body) {
					t.Errorf("body changed:\n got %s\nwant %s", got, g.Body)
				}
				return
			}
			jsonEqual(t, got, want)
		})
	}
}

// seen is what the fake Azure server received.
type seen struct {
	method, host, path, rawPath, query string
	header                             http.Header
	body                               []byte
}

// fakeAzure is a TLS server on 127.0.0.1 that answers every call with status and the fixture file, and a client
// that sends every host name (contoso.openai.azure.com, ...) to it, so that round trips test the real URLs without
// leaving the machine.
func fakeAzure(t *testing.T, status int, contentType, fixture string) (*http.Client, func() seen) {
	t.Helper()
	answer, err := os.ReadFile(filepath.Join("testdata", fixture))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var last seen
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		last = seen{r.Method, r.Host, r.URL.Path, r.URL.RawPath, r.URL.RawQuery, r.Header.Clone(), body}
		mu.Unlock()
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		w.Write(answer)
	}))
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} // the test certificate names 127.0.0.1, not Azure's hosts
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	return &http.Client{Transport: tr}, func() seen {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}

func TestRoundTrip(t *testing.T) {
	chat := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"Hi"}]}`)
	jwt := "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.eyJvaWQiOiIxIn0.c2ln"
	tests := []struct {
		name       string
		target     providers.Target
		call       providers.Call
		status     int
		fixture    string
		host, path string
		query      string
		auth       map[string]string // header → value; "" means absent
		body       string            // expected upstream body; "" means the call's body unchanged
	}{
		{
			name: "chat through a resource and deployment from headers",
			target: providers.Target{APIKey: "azkey", Header: headerFunc(map[string]string{
				headerResource: "contoso", headerDeployment: "gpt-4o-prod", headerAPIVersion: "2024-10-21"})},
			call:   providers.Call{Endpoint: providers.ChatCompletions, Body: chat},
			status: 200, fixture: "chat_response.json",
			host: "contoso.openai.azure.com", path: "/openai/deployments/gpt-4o-prod/chat/completions", query: "api-version=2024-10-21",
			auth: map[string]string{"Api-Key": "azkey", "Authorization": ""},
		},
		{
			name: "stream passes through",
			target: providers.Target{APIKey: jwt, Fields: fields(`{"resource_name":"contoso","deployments":[
				{"deployment_id":"mini","alias":"gpt-4o-mini","api_version":"2024-08-01-preview"},
				{"deployment_id":"big","alias":"gpt-4o","api_version":"2024-10-21","is_default":true}]}`)},
			call:   providers.Call{Endpoint: providers.ChatCompletions, Body: []byte(`{"model":"gpt-4o-mini","messages":[],"stream":true}`), Stream: true},
			status: 200, fixture: "chat_stream.sse",
			host: "contoso.openai.azure.com", path: "/openai/deployments/mini/chat/completions", query: "api-version=2024-08-01-preview",
			auth: map[string]string{"Authorization": "Bearer " + jwt, "Api-Key": "", "Accept": "text/event-stream"},
		},
		{
			name:   "deployment not found passes through",
			target: providers.Target{APIKey: "azkey", Fields: fields(`{"resource_name":"contoso","deployment_id":"nope"}`)},
			call:   providers.Call{Endpoint: providers.ChatCompletions, Body: chat},
			status: 404, fixture: "error_deployment_not_found.json",
			host: "contoso.openai.azure.com", path: "/openai/deployments/nope/chat/completions", query: "api-version=2024-10-21",
			auth: map[string]string{"Api-Key": "azkey"},
		},
		{
			name:   "content filter error passes through",
			target: providers.Target{APIKey: "azkey", Fields: fields(`{"resource_name":"contoso","deployment_id":"gpt-4o"}`)},
			call:   providers.Call{Endpoint: providers.ChatCompletions, Body: chat},
			status: 400, fixture: "error_content_filter.json",
			host: "contoso.openai.azure.com", path: "/openai/deployments/gpt-4o/chat/completions", query: "api-version=2024-10-21",
		},
		{
			name:   "unauthorized passes through",
			target: providers.Target{APIKey: "wrong", Fields: fields(`{"resource_name":"contoso","deployment_id":"gpt-4o"}`)},
			call:   providers.Call{Endpoint: providers.ChatCompletions, Body: chat},
			status: 401, fixture: "error_unauthorized.json",
			host: "contoso.openai.azure.com", path: "/openai/deployments/gpt-4o/chat/completions", query: "api-version=2024-10-21",
			auth: map[string]string{"Api-Key": "wrong"},
		},
		{
			name:   "rate limited passes through",
			target: providers.Target{APIKey: "azkey", Fields: fields(`{"resource_name":"contoso","deployment_id":"gpt-4o"}`)},
			call:   providers.Call{Endpoint: providers.ChatCompletions, Body: chat},
			status: 429, fixture: "error_rate_limited.json",
			host: "contoso.openai.azure.com", path: "/openai/deployments/gpt-4o/chat/completions", query: "api-version=2024-10-21",
		},
		{
			name:   "v1 API rewrites the model to the deployment",
			target: providers.Target{APIKey: "azkey", Fields: fields(`{"resource_name":"contoso","deployment_id":"chat-prod","api_version":"v1"}`)},
			call:   providers.Call{Endpoint: providers.ChatCompletions, Body: chat},
			status: 200, fixture: "chat_response.json",
			host: "contoso.openai.azure.com", path: "/openai/v1/chat/completions", query: "",
			auth: map[string]string{"Api-Key": "azkey"},
			body: `{"model":"chat-prod","messages":[{"role":"user","content":"Hi"}]}`,
		},
		{
			name: "Foundry serverless",
			target: providers.Target{APIKey: "mlkey", Fields: fields(`{"cloudx_deployment_type":"serverless",
				"cloudx_deployment_name":"Meta-Llama-3-1-8B-abcd","cloudx_region":"eastus2","cloudx_api_version":"2024-05-01-preview"}`)},
			call:   providers.Call{Endpoint: providers.ChatCompletions, Body: chat},
			status: 200, fixture: "chat_response.json",
			host: "meta-llama-3-1-8b-abcd.eastus2.models.ai.azure.com", path: "/chat/completions", query: "api-version=2024-05-01-preview",
			auth: map[string]string{"Authorization": "Bearer mlkey", "Api-Key": "", "Extra-Parameters": "drop"},
		},
		{
			name: "Foundry managed endpoint",
			target: providers.Target{APIKey: "mlkey", Fields: fields(`{"cloudx_deployment_type":"managed",
				"cloudx_endpoint_name":"phi-ep","cloudx_deployment_name":"phi-green","cloudx_region":"westus3"}`)},
			call:   providers.Call{Endpoint: providers.ChatCompletions, Body: chat},
			status: 200, fixture: "chat_response.json",
			host: "phi-ep.westus3.inference.ml.azure.com", path: "/chat/completions", query: "",
			auth: map[string]string{"Authorization": "Bearer mlkey", "Azureml-Model-Deployment": "phi-green"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client, last := fakeAzure(t, tc.status, contentTypeOf(tc.fixture), tc.fixture)
			tc.target.Provider = ID
			req, err := Adapter{}.NewRequest(context.Background(), &tc.target, &tc.call)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			s := last()
			if s.method != http.MethodPost || s.host != tc.host || s.path != tc.path || s.query != tc.query {
				t.Errorf("upstream got %s https://%s%s?%s\nwant POST https://%s%s?%s", s.method, s.host, s.path, s.query, tc.host, tc.path, tc.query)
			}
			if ct := s.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			for k, v := range tc.auth {
				if g := s.header.Get(k); g != v {
					t.Errorf("upstream header %s = %q, want %q", k, g, v)
				}
			}
			if tc.body == "" {
				if !bytes.Equal(s.body, tc.call.Body) {
					t.Errorf("upstream body changed: %s", s.body)
				}
			} else {
				jsonEqual(t, s.body, []byte(tc.body))
			}
			// Azure speaks OpenAI's format: the answer is what the engine passes on, byte for byte.
			want, _ := os.ReadFile(filepath.Join("testdata", tc.fixture))
			if resp.StatusCode != tc.status || !bytes.Equal(got, want) {
				t.Errorf("answer %d %q, want %d and the fixture", resp.StatusCode, got, tc.status)
			}
		})
	}
}

func contentTypeOf(fixture string) string {
	if strings.HasSuffix(fixture, ".sse") {
		return "text/event-stream"
	}
	return "application/json"
}

func fields(s string) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}

// TestPassThrough pins that the adapter translates nothing: Azure's answers, streams and errors are OpenAI's
// shape (DESIGN.md: OpenAI-compatible providers' error bodies pass through unchanged).
func TestPassThrough(t *testing.T) {
	var a providers.Adapter = Adapter{}
	if _, ok := a.(providers.ResponseTranslator); ok {
		t.Error("Adapter translates responses; Azure's are OpenAI's")
	}
	if _, ok := a.(providers.StreamTranslator); ok {
		t.Error("Adapter translates streams; Azure's are OpenAI's")
	}
	if _, ok := a.(providers.ErrorTranslator); ok {
		t.Error("Adapter translates errors; Azure's are OpenAI-shaped")
	}
	// The error fixtures are OpenAI-shaped: {"error": {"message": string, "code": ...}}.
	for _, name := range []string{"error_deployment_not_found.json", "error_content_filter.json", "error_unauthorized.json", "error_rate_limited.json"} {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			var e struct {
				Error struct {
					Message string          `json:"message"`
					Code    json.RawMessage `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(raw, &e); err != nil || e.Error.Message == "" || len(e.Error.Code) == 0 {
				t.Errorf("not OpenAI-shaped (%v): %s", err, raw)
			}
		})
	}
	// The stream fixture is OpenAI's SSE: data events ending with [DONE].
	raw, err := os.ReadFile(filepath.Join("testdata", "chat_stream.sse"))
	if err != nil {
		t.Fatal(err)
	}
	events := strings.Split(strings.TrimSpace(string(raw)), "\n\n")
	if events[len(events)-1] != "data: [DONE]" {
		t.Errorf("last event %q", events[len(events)-1])
	}
	for _, ev := range events[:len(events)-1] {
		if !strings.HasPrefix(ev, "data: {") || !json.Valid([]byte(strings.TrimPrefix(ev, "data: "))) {
			t.Errorf("event %q", ev)
		}
	}
}

func TestRegistered(t *testing.T) {
	a, ok := providers.Lookup(ID)
	if !ok {
		t.Fatal("azure-openai has no adapter")
	}
	if _, ok := a.(Adapter); !ok {
		t.Errorf("azure-openai is served by %T", a)
	}
	if id, ok := providers.Canonical("cloudx"); !ok || id != ID {
		t.Errorf("cloudx = %q, %v", id, ok)
	}
	if providers.DefaultBaseURL(ID) != "" {
		t.Error("azure-openai has a default base URL; the adapter builds it")
	}
}

func TestContextHonoured(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tg := providers.Target{APIKey: "k", Fields: fields(`{"resource_name":"contoso","deployment_id":"d"}`)}
	req, err := Adapter{}.NewRequest(ctx, &tg, &providers.Call{Endpoint: providers.ChatCompletions, Body: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if req.Context().Err() == nil {
		t.Error("request does not carry the call's context")
	}
}
