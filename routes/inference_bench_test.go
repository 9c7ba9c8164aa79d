package routes

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/llmgw/gateway/reqlog"
	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/ratelimit"
	"github.com/llmgw/gateway/storage"
)

// benchServer is a loopback upstream for the benchmarks.
type benchServer struct {
	URL string // http://127.0.0.1:port, no trailing slash
}

// benchUpstream answers every call with a fixed chat completion.
func benchUpstream(b *testing.B) *benchServer { return benchUpstreamAnswering(b, chatAnswer) }

// benchUpstreamAnswering answers every call with the fixed JSON answer, from a fasthttp server that allocates
// nothing per request, so that a benchmark's allocations and CPU are the caller's (the gateway's or the direct
// proxy's), not the mock's (net/http's server took about 25 allocations a request).
func benchUpstreamAnswering(b *testing.B, answer string) *benchServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	raw := []byte(answer)
	srv := &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			ctx.Response.Header.SetContentType("application/json")
			ctx.Response.SetBodyRaw(raw)
		},
		NoDefaultServerHeader: true,
		NoDefaultDate:         true,
	}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Shutdown() })
	return &benchServer{URL: "http://" + ln.Addr().String()}
}

// runChat drives handler with a chat completion request carrying headers, b.N times.
func runChat(b *testing.B, handler fasthttp.RequestHandler, headers ...string) {
	runPost(b, handler, "/v1/chat/completions", chatBody, headers...)
}

// runPost drives handler with a POST of the JSON body to path carrying headers, b.N times; each must answer 200.
func runPost(b *testing.B, handler fasthttp.RequestHandler, path, body string, headers ...string) {
	var ctx fasthttp.RequestCtx
	raw := []byte(body)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI(path)
		ctx.Request.Header.SetContentType("application/json")
		for j := 0; j+1 < len(headers); j += 2 {
			ctx.Request.Header.Set(headers[j], headers[j+1])
		}
		ctx.Request.SetBody(raw)
		handler(&ctx)
		if ctx.Response.StatusCode() != 200 {
			b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
}

// BenchmarkChatCompletionGateway is a non-streamed chat completion through the whole gateway: trace ID, key
// lookup, header parsing, config (from the cache), strategy, provider call to a loopback upstream.
func BenchmarkChatCompletionGateway(b *testing.B) {
	f := newFixture(b, Options{})
	up := benchUpstream(b)
	cfg := `{"strategy":{"mode":"fallback"},"targets":[{"provider":"openai","api_key":"sk","custom_host":"` + up.URL + `/v1"}]}`
	runChat(b, f.srv.Handler().Handler(), HeaderAPIKey, f.plain, HeaderConfig, cfg)
}

// BenchmarkChatCompletionDirectProxy is the floor: a trivial proxy that makes the same upstream call with the
// same client settings and copies the answer back. The gateway's own overhead is the difference.
func BenchmarkChatCompletionDirectProxy(b *testing.B) {
	runChat(b, directProxy(benchUpstream(b)))
}

// directProxy is the floor the gateway is measured against: a trivial proxy that reads the body, makes the same
// upstream call with the same client settings and copies the answer back.
func directProxy(up *benchServer) fasthttp.RequestHandler {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	url := up.URL + "/v1/chat/completions"
	return func(ctx *fasthttp.RequestCtx) {
		req, _ := http.NewRequest("POST", url, bytes.NewReader(ctx.Request.Body()))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk")
		resp, err := client.Do(req)
		if err != nil {
			ctx.SetStatusCode(502)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ctx.SetStatusCode(resp.StatusCode)
		ctx.SetContentType("application/json")
		ctx.SetBody(body)
	}
}

// BenchmarkChatCompletionWithChecks is BenchmarkChatCompletionGateway with an input guardrail of three
// built-in checks on the request: the difference is what the checks add.
func BenchmarkChatCompletionWithChecks(b *testing.B) {
	f := newFixture(b, Options{})
	up := benchUpstream(b)
	cfg := `{"strategy":{"mode":"fallback"},"targets":[{"provider":"openai","api_key":"sk","custom_host":"` + up.URL + `/v1"}],` +
		`"input_guardrails":[{"id":"g","default.wordCount":{"maxWords":1000},"default.regexMatch":{"rule":"[a-z]+@[a-z]+\\.com","not":true},` +
		`"default.contains":{"words":["forbidden"],"operator":"none"}}]}`
	runChat(b, f.srv.Handler().Handler(), HeaderAPIKey, f.plain, HeaderConfig, cfg)
}

// BenchmarkChatCompletionCacheHit is a chat completion answered from the simple cache: key, lookup in pebble,
// zstd decompression, answer. The upstream is called once, before the timer starts.
func BenchmarkChatCompletionCacheHit(b *testing.B) {
	f := newFixture(b, Options{})
	up := benchUpstream(b)
	cfg := `{"cache":{"mode":"simple"},"provider":"openai","api_key":"sk","custom_host":"` + up.URL + `/v1"}`
	runChat(b, f.srv.Handler().Handler(), HeaderAPIKey, f.plain, HeaderConfig, cfg)
}

// BenchmarkChatCompletionRateLimited is BenchmarkChatCompletionGateway with a requests policy per API key
// that never refuses: the difference is what enforcement adds to a request.
func BenchmarkChatCompletionRateLimited(b *testing.B) {
	f := newFixtureWith(b, Options{}, func(st *storage.Store) runtime.Options {
		lim := ratelimit.New(st, ratelimit.Options{})
		b.Cleanup(func() { lim.Close() })
		return runtime.Options{RateLimiter: lim}
	})
	if _, err := f.store.Policies.Put(f.ws.ID, "0c9d8e7f-6a5b-4c3d-9e1f-123456789abc", &storage.RateLimitPolicy{ID: "0c9d8e7f-6a5b-4c3d-9e1f-123456789abc",
		WorkspaceID: f.ws.ID, Type: "requests", Unit: "rpm", Value: 1e12, Status: "active", GroupBy: []storage.PolicyGroup{{Key: "api_key"}}}); err != nil {
		b.Fatal(err)
	}
	up := benchUpstream(b)
	cfg := `{"strategy":{"mode":"fallback"},"targets":[{"provider":"openai","api_key":"sk","custom_host":"` + up.URL + `/v1"}]}`
	runChat(b, f.srv.Handler().Handler(), HeaderAPIKey, f.plain, HeaderConfig, cfg)
}

// BenchmarkChatCompletionGatewayQuiet is BenchmarkChatCompletionGateway without the request's info log line
// (--log-level warn), and BenchmarkChatCompletionGatewayLogged with it and a stored log entry: the difference
// between the two is what request logging costs a request (metrics are on in both: they cannot be switched off).
func BenchmarkChatCompletionGatewayQuiet(b *testing.B) {
	f := newFixture(b, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	up := benchUpstream(b)
	cfg := `{"strategy":{"mode":"fallback"},"targets":[{"provider":"openai","api_key":"sk","custom_host":"` + up.URL + `/v1"}]}`
	runChat(b, f.srv.Handler().Handler(), HeaderAPIKey, f.plain, HeaderConfig, cfg)
}

func BenchmarkChatCompletionGatewayLogged(b *testing.B) {
	f := newFixture(b, Options{})
	w := reqlog.New(f.store.Logs, reqlog.Options{})
	defer w.Close()
	f.srv.logs = w
	up := benchUpstream(b)
	cfg := `{"strategy":{"mode":"fallback"},"targets":[{"provider":"openai","api_key":"sk","custom_host":"` + up.URL + `/v1"}]}`
	runChat(b, f.srv.Handler().Handler(), HeaderAPIKey, f.plain, HeaderConfig, cfg)
}
