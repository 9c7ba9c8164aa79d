package routes

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/llmgw/gateway/storage"
)

// nodeSDKHeaders are the headers Portkey's Node SDK (portkey-ai, which wraps OpenAI's Node client) sends on a
// chat completion, given apiKey, provider, Authorization and customHost: its own x-portkey-* headers
// (createHeaders, defaultHeaders, getPlatformProperties) and the OpenAI client's.
func nodeSDKHeaders(gatewayKey, host string) []string {
	return []string{
		"Content-Type", "application/json",
		"Accept", "application/json",
		"User-Agent", "OpenAI/JS 4.87.3",
		"X-Stainless-Lang", "js",
		"X-Stainless-Package-Version", "4.87.3",
		"X-Stainless-OS", "Linux",
		"X-Stainless-Arch", "x64",
		"X-Stainless-Runtime", "node",
		"X-Stainless-Runtime-Version", "v20.11.0",
		"X-Stainless-Retry-Count", "0",
		"x-portkey-api-key", gatewayKey,
		"x-portkey-provider", "openai",
		"x-portkey-custom-host", host,
		"x-portkey-strict-open-ai-compliance", "false",
		"x-portkey-trace-id", "node-trace-1",
		"x-portkey-metadata", `{"_user":"u-1"}`,
		"x-portkey-package-version", "portkey-1.9.1",
		"x-portkey-runtime", "node",
		"x-portkey-runtime-version", "v20.11.0",
		"authorization", "Bearer sk-provider",
	}
}

// pythonSDKHeaders are the headers Portkey's Python SDK (portkey_ai, over OpenAI's Python client) sends given
// api_key and virtual_key: the OpenAI client's key is the SDK's placeholder "OPENAI_API_KEY".
func pythonSDKHeaders(gatewayKey, slug string) []string {
	return []string{
		"Content-Type", "application/json",
		"Accept", "application/json",
		"User-Agent", "OpenAI/Python 1.66.3",
		"X-Stainless-Lang", "python",
		"X-Stainless-Package-Version", "1.66.3",
		"X-Stainless-OS", "Linux",
		"X-Stainless-Arch", "x64",
		"X-Stainless-Runtime", "CPython",
		"X-Stainless-Runtime-Version", "3.12.1",
		"X-Stainless-Async", "false",
		"X-Stainless-Retry-Count", "0",
		"Authorization", "Bearer OPENAI_API_KEY",
		"x-portkey-api-key", gatewayKey,
		"x-portkey-virtual-key", slug,
		"x-portkey-strict-open-ai-compliance", "false",
		"x-portkey-package-version", "portkey-1.13.0",
		"x-portkey-runtime", "CPython",
		"x-portkey-runtime-version", "3.12.1",
	}
}

// TestPortkeySDKs: the exact requests of Portkey's Node and Python SDKs, pointed at the gateway by their base
// URL alone, are served, whole and streamed: the key, provider, custom host, virtual key, metadata and trace ID
// come from their x-portkey-* headers.
func TestPortkeySDKs(t *testing.T) {
	f := newFixture(t, Options{})
	base, _ := f.serve(t)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		if r.Header.Get("Accept") == "text/event-stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, sseEvents)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, chatAnswer)
	})
	host, _ := json.Marshal(up.URL + "/v1")
	if _, err := f.store.Providers.Put(&storage.Provider{WorkspaceID: f.ws.ID, Slug: "openai-prod", Provider: "openai",
		Fields: map[string]json.RawMessage{"api_key": json.RawMessage(`"sk-stored"`), "custom_host": host}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		headers  []string
		wantAuth string
	}{
		{"node", nodeSDKHeaders(f.plain, up.URL+"/v1"), "Bearer sk-provider"},
		{"python", pythonSDKHeaders(f.plain, "openai-prod"), "Bearer sk-stored"},
	} {
		for _, stream := range []bool{false, true} {
			body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}`
			want := chatAnswer
			if stream {
				body = `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Hi"}]}`
				want = sseEvents
			}
			req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(body))
			for i := 0; i+1 < len(tc.headers); i += 2 {
				req.Header.Set(tc.headers[i], tc.headers[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			a := readAnswer(t, resp)
			if a.status != 200 || string(a.body) != want {
				t.Fatalf("%s, stream %v: %d %s", tc.name, stream, a.status, a.body)
			}
			r, sent := up.lastRequest()
			if got := r.Header.Get("Authorization"); got != tc.wantAuth {
				t.Errorf("%s: upstream Authorization %q, want %q", tc.name, got, tc.wantAuth)
			}
			for name := range r.Header {
				if strings.HasPrefix(strings.ToLower(name), "x-portkey-") || strings.HasPrefix(strings.ToLower(name), "x-gateway-") {
					t.Errorf("%s: header %s went upstream", tc.name, name)
				}
			}
			if tc.name == "node" {
				if a.header.Get(HeaderTraceID) != "node-trace-1" {
					t.Errorf("trace ID %q, want x-portkey-trace-id's", a.header.Get(HeaderTraceID))
				}
				if !strings.Contains(sent, `"user":"u-1"`) {
					t.Errorf("x-portkey-metadata's _user not applied: %s", sent)
				}
			}
		}
	}
}

// TestPortkeyHeaderTwins: a twin sent as x-gateway-* wins over x-portkey-*; headers the gateway does not read
// are ignored; Portkey's cloud prefixes become the gateway's; the Portkey SDK's echo of the gateway key as the
// provider's Bearer token never goes upstream.
func TestPortkeyHeaderTwins(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, nil)
	a := f.do(t, "POST", "/v1/chat/completions", chatBody, "Content-Type", "application/json",
		HeaderAPIKey, f.plain, "x-portkey-api-key", "not-a-key",
		HeaderProvider, "openai", "x-portkey-provider", "no-such-provider",
		HeaderCustomHost, up.URL+"/v1", "Authorization", "Bearer sk",
		"x-portkey-debug", "true", "x-portkey-some-future-header", "x")
	if a.status != 200 {
		t.Fatalf("the x-gateway-* twins did not win: %d %s", a.status, a.body)
	}
	a = f.do(t, "POST", "/v1/chat/completions", chatBody, "Content-Type", "application/json",
		"X-Portkey-Api-Key", f.plain, "X-Portkey-Provider", "openai", "X-Portkey-Custom-Host", up.URL+"/v1",
		"Authorization", "Bearer "+f.plain)
	if r, _ := up.lastRequest(); a.status != 200 || r.Header.Get("Authorization") != "" {
		t.Fatalf("%d %s; the gateway key went upstream as %q", a.status, a.body, r.Header.Get("Authorization"))
	}
	for portkey, gateway := range map[string]string{
		"api-key":                   "x-gateway-api-key",
		"virtual-key":               "x-gateway-virtual-key",
		"cache-force-refresh":       "x-gateway-cache-force-refresh",
		"azure-resource-name":       "x-gateway-cloudx-resource-name",
		"azure-deployment-id":       "x-gateway-cloudx-deployment-id",
		"vertex-project-id":         "x-gateway-cloudy-project-id",
		"aws-secret-access-key":     "x-gateway-cloudz-secret-access-key",
		"openai-organization":       "x-gateway-llmvendor-organization",
		"runtime-version":           "x-gateway-runtime-version",
		"strict-open-ai-compliance": "x-gateway-strict-open-ai-compliance",
	} {
		if got := gatewayTwin(portkey); got != gateway {
			t.Errorf("twin of x-portkey-%s = %s, want %s", portkey, got, gateway)
		}
	}
}

// parsedRequest is a request's header as fasthttp parses it from the wire.
func parsedRequest(tb testing.TB, headers string) *fasthttp.Request {
	var req fasthttp.Request
	if err := req.Read(bufio.NewReader(strings.NewReader("POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n" + headers + "\r\n"))); err != nil {
		tb.Fatal(err)
	}
	return &req
}

const plainHeaders = "Content-Type: application/json\r\nx-gateway-api-key: gw-key\r\nx-gateway-provider: openai\r\n" +
	"Authorization: Bearer sk\r\nUser-Agent: OpenAI/Python 1.66.3\r\nX-Stainless-Lang: python\r\nX-Stainless-Retry-Count: 0\r\n"

func TestPortkeyDetectionAllocs(t *testing.T) {
	plain := parsedRequest(t, plainHeaders)
	if hasPortkeyHeader(&plain.Header) {
		t.Fatal("a request without x-portkey-* headers was taken for one with")
	}
	if n := testing.AllocsPerRun(100, func() { hasPortkeyHeader(&plain.Header) }); n != 0 {
		t.Errorf("a request without x-portkey-* headers costs %v allocations", n)
	}
	if !hasPortkeyHeader(&parsedRequest(t, plainHeaders+"X-PORTKEY-RUNTIME: node\r\n").Header) {
		t.Error("an x-portkey-* header in upper case was missed")
	}
	var built fasthttp.Request // not parsed: no raw headers
	built.Header.Set("x-portkey-api-key", "k")
	if !hasPortkeyHeader(&built.Header) {
		t.Error("an x-portkey-* header of a request built in memory was missed")
	}
}

// BenchmarkPortkeyHeaders is what the rename costs a request: nothing allocated when it sends no x-portkey-*
// header.
func BenchmarkPortkeyHeaders(b *testing.B) {
	b.Run("absent", func(b *testing.B) {
		req := parsedRequest(b, plainHeaders)
		b.ReportAllocs()
		for b.Loop() {
			if hasPortkeyHeader(&req.Header) {
				renamePortkeyHeaders(&req.Header)
			}
		}
	})
	b.Run("sdk", func(b *testing.B) {
		raw := "Content-Type: application/json\r\nx-portkey-api-key: gw-key\r\nx-portkey-provider: openai\r\n" +
			"x-portkey-runtime: node\r\nx-portkey-runtime-version: v20\r\nx-portkey-package-version: portkey-1.9.1\r\n" +
			"x-portkey-strict-open-ai-compliance: false\r\nAuthorization: Bearer sk\r\n"
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			req := parsedRequest(b, raw)
			b.StartTimer()
			if hasPortkeyHeader(&req.Header) {
				renamePortkeyHeaders(&req.Header)
			}
		}
	})
}

// TestPortkeyHeadersAreNeverForwarded: forward_headers cannot send a Portkey header (which may carry the
// gateway key) upstream, as it cannot send an x-gateway-* one.
func TestPortkeyHeadersAreNeverForwarded(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, nil)
	a := f.do(t, "POST", "/v1/chat/completions", chatBody, "Content-Type", "application/json",
		"x-portkey-api-key", f.plain, HeaderProvider, "openai", HeaderCustomHost, up.URL+"/v1", "Authorization", "Bearer sk",
		HeaderForward, "x-portkey-api-key,X-Portkey-Trace-Id,x-team", "x-portkey-trace-id", "t-1", "x-team", "blue")
	if a.status != 200 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	r, _ := up.lastRequest()
	if r.Header.Get("X-Team") != "blue" {
		t.Fatalf("a named caller header was not forwarded: %v", r.Header)
	}
	for name := range r.Header {
		if strings.HasPrefix(strings.ToLower(name), "x-portkey-") || strings.HasPrefix(strings.ToLower(name), "x-gateway-") {
			t.Fatalf("%s went upstream", name)
		}
	}
}
