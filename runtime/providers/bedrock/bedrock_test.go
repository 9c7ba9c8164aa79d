package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
)

const (
	testKeyID  = "AKIAIOSFODNN7EXAMPLE"
	testSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	testToken  = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQ"
)

func fields(kv ...string) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	for i := 0; i < len(kv); i += 2 {
		b, _ := json.Marshal(kv[i+1])
		m[kv[i]] = b
	}
	return m
}

func headers(kv ...string) func(string) string {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h.Get
}

func TestRegistered(t *testing.T) {
	a, ok := providers.Lookup("bedrock")
	if !ok {
		t.Fatal("bedrock is not registered")
	}
	if _, ok := a.(*Adapter); !ok {
		t.Fatalf("registered %T", a)
	}
	if id, ok := providers.Canonical("cloudz"); !ok || id != "bedrock" {
		t.Errorf("cloudz → %q", id)
	}
}

// TestRoundTrip sends requests built by NewRequest to a local upstream, checks exactly what it receives (path
// as escaped on the wire, query, headers, body, signature recomputed independently), and translates its answer.
func TestRoundTrip(t *testing.T) {
	type received struct {
		r    *http.Request
		body []byte
	}
	got := make(chan received, 1)
	var answer struct {
		status      int
		contentType string
		header      http.Header
		body        []byte
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- received{r, body}
		for k, v := range answer.header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Type", answer.contentType)
		w.WriteHeader(answer.status)
		w.Write(answer.body)
	}))
	defer srv.Close()
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("upstream at %s", srv.URL)
	}

	tests := []struct {
		name        string
		target      providers.Target
		call        providers.Call
		keyID       string
		secret      string
		token       string
		region      string
		path        string // RequestURI as received
		accept      string
		wantBody    []byte            // the body Bedrock must receive (JSON)
		wantHeaders map[string]string // further headers ("" = absent)
		status      int
		contentType string
		respHeader  http.Header
		respBody    []byte
		check       func(t *testing.T, a *Adapter, tg *providers.Target, c *providers.Call, resp *http.Response)
	}{
		{
			name: "converse with config credentials and session token",
			target: providers.Target{Provider: ID, Fields: fields(fieldAccessKeyID, testKeyID, fieldSecretAccessKey, testSecret,
				fieldSessionToken, testToken, fieldRegion, "us-east-1"),
				Forward: http.Header{"X-Team": {"search"}, "Authorization": {"Bearer leak"}, "X-Amz-Date": {"19700101T000000Z"}}},
			call:  providers.Call{Endpoint: providers.ChatCompletions, Body: readTestdata(t, "chat", "request", "basic.openai.json")},
			keyID: testKeyID, secret: testSecret, token: testToken, region: "us-east-1",
			path:   "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse",
			accept: mimeJSON, wantBody: readTestdata(t, "chat", "request", "basic.converse.json"),
			wantHeaders: map[string]string{"X-Amz-Security-Token": testToken, "X-Team": "search"},
			status:      200, contentType: mimeJSON, respBody: readTestdata(t, "chat", "response", "text.converse.json"),
			check: func(t *testing.T, a *Adapter, tg *providers.Target, c *providers.Call, resp *http.Response) {
				body, _ := io.ReadAll(resp.Body)
				out, err := a.TranslateResponse(tg, c, body)
				if err != nil {
					t.Fatal(err)
				}
				jsonEqual(t, out, readTestdata(t, "chat", "response", "text.openai.json"))
			},
		},
		{
			name: "converse-stream with header credentials",
			target: providers.Target{Provider: ID, Header: headers(headerAccessKeyID, "AKIDHEADER", headerSecretAccessKey, "header-secret",
				headerRegion, "eu-west-3")},
			call:  providers.Call{Endpoint: providers.ChatCompletions, Stream: true, Body: streamCall(false).Body},
			keyID: "AKIDHEADER", secret: "header-secret", region: "eu-west-3",
			path:   "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse-stream",
			accept: mimeEventStream, wantBody: []byte(`{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`),
			wantHeaders: map[string]string{"X-Amz-Security-Token": ""},
			status:      200, contentType: mimeEventStream, respBody: readTestdata(t, "stream", "text.bin"),
			check: func(t *testing.T, a *Adapter, tg *providers.Target, c *providers.Call, resp *http.Response) {
				out, err := io.ReadAll(a.TranslateStream(tg, c, resp.Body))
				if err != nil {
					t.Fatal(err)
				}
				compareSSE(t, string(out), string(readTestdata(t, "stream", "text.sse")))
			},
		},
		{
			name: "inference profile ARN under a custom host path; config wins over headers",
			target: providers.Target{Provider: ID, BaseURL: "/proxy/bedrock/",
				Fields: fields(fieldAccessKeyID, testKeyID, fieldSecretAccessKey, testSecret, fieldRegion, "us-west-2"),
				Header: headers(headerAccessKeyID, "AKIDHEADER", headerSecretAccessKey, "header-secret", headerSessionToken, "header-token",
					headerRegion, "eu-west-3")},
			call: providers.Call{Endpoint: providers.ChatCompletions,
				Body: []byte(`{"model":"arn:aws:bedrock:us-west-2:123456789012:application-inference-profile/a1b2c3","messages":[{"role":"user","content":"x"}]}`)},
			keyID: testKeyID, secret: testSecret, region: "us-west-2",
			path:   "/proxy/bedrock/model/arn%3Aaws%3Abedrock%3Aus-west-2%3A123456789012%3Aapplication-inference-profile%2Fa1b2c3/converse",
			accept: mimeJSON, wantBody: []byte(`{"messages":[{"role":"user","content":[{"text":"x"}]}]}`),
			wantHeaders: map[string]string{"X-Amz-Security-Token": ""},
			status:      200, contentType: mimeJSON, respBody: readTestdata(t, "chat", "response", "tool_use.converse.json"),
			check: func(t *testing.T, a *Adapter, tg *providers.Target, c *providers.Call, resp *http.Response) {
				body, _ := io.ReadAll(resp.Body)
				out, err := a.TranslateResponse(tg, &providers.Call{Endpoint: c.Endpoint, Strict: true, Body: []byte(`{"model":"` + testModel + `"}`)}, body)
				if err != nil {
					t.Fatal(err)
				}
				jsonEqual(t, out, readTestdata(t, "chat", "response", "tool_use.strict.json"))
			},
		},
		{
			name:   "invoke titan embeddings",
			target: providers.Target{Provider: ID, Fields: fields(fieldAccessKeyID, testKeyID, fieldSecretAccessKey, testSecret, fieldRegion, "ap-northeast-1")},
			call:   providers.Call{Endpoint: providers.Embeddings, Body: readTestdata(t, "embeddings", "titan.openai.json")},
			keyID:  testKeyID, secret: testSecret, region: "ap-northeast-1",
			path:   "/model/amazon.titan-embed-text-v2%3A0/invoke",
			accept: mimeJSON, wantBody: readTestdata(t, "embeddings", "titan.invoke.json"),
			status: 200, contentType: mimeJSON, respBody: readTestdata(t, "embeddings", "titan.response.json"),
			check: func(t *testing.T, a *Adapter, tg *providers.Target, c *providers.Call, resp *http.Response) {
				body, _ := io.ReadAll(resp.Body)
				out, err := a.TranslateResponse(tg, c, body)
				if err != nil {
					t.Fatal(err)
				}
				jsonEqual(t, out, readTestdata(t, "embeddings", "titan.want.json"))
			},
		},
		{
			name:   "error answer",
			target: providers.Target{Provider: ID, Fields: fields(fieldAccessKeyID, testKeyID, fieldSecretAccessKey, testSecret, fieldRegion, "us-east-1")},
			call:   providers.Call{Endpoint: providers.ChatCompletions, Body: readTestdata(t, "chat", "request", "tools.openai.json")},
			keyID:  testKeyID, secret: testSecret, region: "us-east-1",
			path:   "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse",
			accept: mimeJSON, wantBody: readTestdata(t, "chat", "request", "tools.converse.json"),
			status: 429, contentType: mimeJSON,
			respHeader: http.Header{"X-Amzn-Errortype": {"ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"}},
			respBody:   []byte(`{"message":"Too many requests, please wait before trying again."}`),
			check: func(t *testing.T, a *Adapter, tg *providers.Target, c *providers.Call, resp *http.Response) {
				body, _ := io.ReadAll(resp.Body)
				out := a.TranslateError(tg, c, resp.StatusCode, body)
				jsonEqual(t, out, []byte(`{"error":{"message":"Too many requests, please wait before trying again.","type":"rate_limit_error",
					"code":"rate_limited","param":null,"provider_error":{"message":"Too many requests, please wait before trying again."}}}`))
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := testAdapter()
			tg := tc.target
			if tg.BaseURL == "" || strings.HasPrefix(tg.BaseURL, "/") {
				tg.BaseURL = srv.URL + tg.BaseURL
			}
			if tg.Header == nil {
				tg.Header = func(string) string { return "" }
			}
			answer.status, answer.contentType, answer.header, answer.body = tc.status, tc.contentType, tc.respHeader, tc.respBody
			req, err := a.NewRequest(context.Background(), &tg, &tc.call)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			rec := <-got
			r := rec.r
			if r.Method != http.MethodPost || r.RequestURI != tc.path || r.URL.RawQuery != "" {
				t.Errorf("upstream got %s %s, want POST %s", r.Method, r.RequestURI, tc.path)
			}
			jsonEqual(t, rec.body, tc.wantBody)
			if ct := r.Header.Get("Content-Type"); ct != mimeJSON {
				t.Errorf("Content-Type %q", ct)
			}
			if acc := r.Header.Get("Accept"); acc != tc.accept {
				t.Errorf("Accept %q, want %q", acc, tc.accept)
			}
			for k, v := range tc.wantHeaders {
				if got := r.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			signed := verifySigV4(t, r, rec.body, tc.keyID, tc.secret, tc.region)
			for _, must := range []string{"host", "x-amz-date", "content-type", "content-length"} {
				if !slices.Contains(signed, must) {
					t.Errorf("%s is not signed (%v)", must, signed)
				}
			}
			if tc.token != "" && !slices.Contains(signed, "x-amz-security-token") {
				t.Errorf("the session token is not signed (%v)", signed)
			}
			tc.check(t, a, &tg, &tc.call, resp)
		})
	}
}

func TestDefaultURL(t *testing.T) {
	tests := []struct {
		name   string
		call   providers.Call
		region string
		url    string
	}{
		{"converse", providers.Call{Endpoint: providers.ChatCompletions, Body: []byte(`{"model":"meta.llama3-70b-instruct-v1:0","messages":[{"role":"user","content":"x"}]}`)},
			"us-west-2", "https://bedrock-runtime.us-west-2.amazonaws.com/model/meta.llama3-70b-instruct-v1%3A0/converse"},
		{"converse-stream", providers.Call{Endpoint: providers.ChatCompletions, Stream: true, Body: []byte(`{"model":"amazon.nova-lite-v1:0","messages":[{"role":"user","content":"x"}]}`)},
			"eu-central-1", "https://bedrock-runtime.eu-central-1.amazonaws.com/model/amazon.nova-lite-v1%3A0/converse-stream"},
		{"invoke", providers.Call{Endpoint: providers.Embeddings, Body: []byte(`{"model":"cohere.embed-multilingual-v3","input":"x"}`)},
			"us-east-1", "https://bedrock-runtime.us-east-1.amazonaws.com/model/cohere.embed-multilingual-v3/invoke"},
		{"odd model id", providers.Call{Endpoint: providers.ChatCompletions, Body: []byte(`{"model":"a b/c?d#e%f","messages":[{"role":"user","content":"x"}]}`)},
			"us-east-1", "https://bedrock-runtime.us-east-1.amazonaws.com/model/a%20b%2Fc%3Fd%23e%25f/converse"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tg := &providers.Target{Provider: ID, Fields: fields(fieldAccessKeyID, "AK", fieldSecretAccessKey, "SK", fieldRegion, tc.region),
				Header: func(string) string { return "" }}
			req, err := testAdapter().NewRequest(context.Background(), tg, &tc.call)
			if err != nil {
				t.Fatal(err)
			}
			if req.URL.String() != tc.url {
				t.Errorf("URL %s\nwant %s", req.URL, tc.url)
			}
			if !strings.HasPrefix(req.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AK/20231114/"+tc.region+"/bedrock/aws4_request") {
				t.Errorf("Authorization %q", req.Header.Get("Authorization"))
			}
		})
	}
}

func TestAuthResolution(t *testing.T) {
	tests := []struct {
		name   string
		target providers.Target
		param  string // 400 naming this field, or "" for success
		auth   string // the Authorization prefix on success
	}{
		{"config", providers.Target{Fields: fields(fieldAccessKeyID, "AK", fieldSecretAccessKey, "SK", fieldRegion, "us-east-1")}, "",
			"AWS4-HMAC-SHA256 Credential=AK/"},
		{"headers", providers.Target{Header: headers(headerAccessKeyID, "HK", headerSecretAccessKey, "HS", headerRegion, "us-east-1")}, "",
			"AWS4-HMAC-SHA256 Credential=HK/"},
		{"config keys, header region", providers.Target{Fields: fields(fieldAccessKeyID, "AK", fieldSecretAccessKey, "SK"),
			Header: headers(headerRegion, "eu-west-1")}, "", "AWS4-HMAC-SHA256 Credential=AK/20231114/eu-west-1/"},
		{"config wins", providers.Target{Fields: fields(fieldAccessKeyID, "AK", fieldSecretAccessKey, "SK", fieldRegion, "us-east-1"),
			Header: headers(headerAccessKeyID, "HK", headerSecretAccessKey, "HS", headerRegion, "eu-west-1")}, "",
			"AWS4-HMAC-SHA256 Credential=AK/20231114/us-east-1/"},
		{"nothing", providers.Target{}, fieldAccessKeyID, ""},
		{"no secret", providers.Target{Fields: fields(fieldAccessKeyID, "AK", fieldRegion, "us-east-1")}, fieldSecretAccessKey, ""},
		{"header key, no header secret", providers.Target{Header: headers(headerAccessKeyID, "HK", headerRegion, "us-east-1")}, fieldSecretAccessKey, ""},
		{"secret without key", providers.Target{Fields: fields(fieldSecretAccessKey, "SK", fieldRegion, "us-east-1")}, fieldAccessKeyID, ""},
		{"no region", providers.Target{Fields: fields(fieldAccessKeyID, "AK", fieldSecretAccessKey, "SK")}, fieldRegion, ""},
		{"no region with custom host still signs with one", providers.Target{BaseURL: "http://127.0.0.1:9",
			Fields: fields(fieldAccessKeyID, "AK", fieldSecretAccessKey, "SK")}, fieldRegion, ""},
		{"region that would change the host", providers.Target{Fields: fields(fieldAccessKeyID, "AK", fieldSecretAccessKey, "SK",
			fieldRegion, "evil.example.com/x#")}, fieldRegion, ""},
		{"api key as bearer", providers.Target{APIKey: "bedrock-api-key-123", Fields: fields(fieldRegion, "us-east-1")}, "", "Bearer bedrock-api-key-123"},
		{"api key on a custom host needs no region", providers.Target{APIKey: "k", BaseURL: "http://127.0.0.1:9"}, "", "Bearer k"},
		{"api key without region", providers.Target{APIKey: "k"}, fieldRegion, ""},
		{"sigv4 wins over api key", providers.Target{APIKey: "k", Fields: fields(fieldAccessKeyID, "AK", fieldSecretAccessKey, "SK", fieldRegion, "us-east-1")}, "",
			"AWS4-HMAC-SHA256 "},
	}
	call := &providers.Call{Endpoint: providers.ChatCompletions, Body: []byte(`{"model":"m","messages":[{"role":"user","content":"x"}]}`)}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tg := tc.target
			if tg.Header == nil {
				tg.Header = func(string) string { return "" }
			}
			req, err := testAdapter().NewRequest(context.Background(), &tg, call)
			if tc.param != "" {
				var ge *gwerr.Error
				if !errors.As(err, &ge) || ge.Status != 400 || ge.Param != tc.param {
					t.Fatalf("err = %v, want 400 naming %s", err, tc.param)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a := req.Header.Get("Authorization"); !strings.HasPrefix(a, tc.auth) {
				t.Errorf("Authorization %q, want prefix %q", a, tc.auth)
			}
		})
	}
}

func TestNewRequestRejects(t *testing.T) {
	creds := fields(fieldAccessKeyID, "AK", fieldSecretAccessKey, "SK", fieldRegion, "us-east-1")
	tests := []struct {
		name  string
		tg    providers.Target
		call  providers.Call
		param string
	}{
		{"completions", providers.Target{Fields: creds}, providers.Call{Endpoint: providers.Completions, Body: []byte(`{"model":"m","prompt":"x"}`)}, ""},
		{"bad custom host", providers.Target{Fields: creds, BaseURL: "ftp://x"},
			providers.Call{Endpoint: providers.ChatCompletions, Body: []byte(`{"model":"m","messages":[{"role":"user","content":"x"}]}`)}, "custom_host"},
		{"chat body", providers.Target{Fields: creds}, providers.Call{Endpoint: providers.ChatCompletions, Body: []byte(`{"messages":[]}`)}, "model"},
		{"embeddings body", providers.Target{Fields: creds}, providers.Call{Endpoint: providers.Embeddings, Body: []byte(`{"model":"amazon.titan-embed-text-v1"}`)}, "input"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.tg.Header = func(string) string { return "" }
			_, err := testAdapter().NewRequest(context.Background(), &tc.tg, &tc.call)
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Status != 400 || ge.Param != tc.param {
				t.Fatalf("err = %v, want 400 naming %q", err, tc.param)
			}
		})
	}
}

// TestNewRequestHonoursContext: the request carries the caller's context.
func TestNewRequestHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tg := &providers.Target{Fields: fields(fieldAccessKeyID, "AK", fieldSecretAccessKey, "SK", fieldRegion, "us-east-1"), BaseURL: "http://127.0.0.1:9",
		Header: func(string) string { return "" }}
	req, err := New().NewRequest(ctx, tg, &providers.Call{Endpoint: providers.ChatCompletions, Body: []byte(`{"model":"m","messages":[{"role":"user","content":"x"}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	if req.Context().Err() == nil {
		t.Error("request context is not the caller's")
	}
	if b, _ := io.ReadAll(req.Body); !bytes.Contains(b, []byte(`"messages"`)) || req.ContentLength != int64(len(b)) {
		t.Errorf("body %s, length %d", b, req.ContentLength)
	}
}

func TestEscapeModelID(t *testing.T) {
	tests := map[string]string{
		"anthropic.claude-3-haiku-20240307-v1:0":               "anthropic.claude-3-haiku-20240307-v1%3A0",
		"arn:aws:bedrock:us-east-1:1:inference-profile/us.x:0": "arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.x%3A0",
		"a~b_c-d.e": "a~b_c-d.e",
		"é":         "%C3%A9",
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			if got := escapeModelID([]byte(in)); got != want {
				t.Errorf("escapeModelID(%q) = %q, want %q", in, got, want)
			}
		})
	}
}
