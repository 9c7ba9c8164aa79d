package routes

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// promptBody is a chat completion request whose user message is about size bytes of prose with the escapes a
// real prompt carries (new lines, quotes, a tab, a non-ASCII letter), as agents and retrieval send all day.
func promptBody(size int) []byte {
	const para = `Retrieved passage: the \"gateway\" forwards each request to the provider named by its config.\n` +
		`\tIt keeps the caller's bytes when nothing changes them; café prices are not part of it.\n`
	var content strings.Builder
	for content.Len() < size {
		content.WriteString(para)
	}
	return []byte(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You answer from the passages."},` +
		`{"role":"user","content":"` + content.String() + `"}],"temperature":0.2}`)
}

// bodySizes are the prompt sizes the body benchmarks compare: the 1 KiB baseline, then large prompts.
var bodySizes = []int{1 << 10, 64 << 10, 512 << 10}

// serveBody answers one POST of body to path through handler, the body arriving as a stream of its declared
// length, as it does from a connection (the server runs with StreamRequestBody).
func serveBody(b *testing.B, handler fasthttp.RequestHandler, ctx *fasthttp.RequestCtx, path string, body []byte, headers []string) {
	ctx.Request.Reset()
	ctx.Response.Reset()
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI(path)
	ctx.Request.Header.SetContentType("application/json")
	for j := 0; j+1 < len(headers); j += 2 {
		ctx.Request.Header.Set(headers[j], headers[j+1])
	}
	ctx.Request.SetBodyStream(bytes.NewReader(body), len(body))
	handler(ctx)
	if ctx.Response.StatusCode() != 200 {
		b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
}

// runBodySizes drives handler with chat completions of each of bodySizes. Each size reports ns/op and
// allocations of its own requests, and us/KB: what a KiB of body adds to a request over the 1 KiB baseline,
// measured in the same run (the baseline's requests run beside the timed ones, with the timer stopped).
func runBodySizes(b *testing.B, handler fasthttp.RequestHandler, headers ...string) {
	small := promptBody(bodySizes[0])
	for _, size := range bodySizes {
		body := promptBody(size)
		b.Run(strconv.Itoa(size>>10)+"KB", func(b *testing.B) {
			var ctx fasthttp.RequestCtx
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			var baseline time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if len(body) != len(small) {
					b.StopTimer()
					start := time.Now()
					serveBody(b, handler, &ctx, "/v1/chat/completions", small, headers)
					baseline += time.Since(start)
					b.StartTimer()
				}
				serveBody(b, handler, &ctx, "/v1/chat/completions", body, headers)
			}
			b.StopTimer()
			if len(body) != len(small) {
				extraKB := float64(len(body)-len(small)) / 1024
				perKB := (float64(b.Elapsed()) - float64(baseline)) / float64(b.N) / 1e3 / extraKB
				b.ReportMetric(perKB, "us/KB")
			}
		})
	}
}

// bodyBenchConfig is the config of the body benchmarks: one OpenAI target on the loopback upstream, plus extra
// members of the target (override_params) when given.
func bodyBenchConfig(url, extra string) string {
	return `{"strategy":{"mode":"fallback"},"targets":[{"provider":"openai","api_key":"sk","custom_host":"` + url + `/v1"` + extra + `}]}`
}

// BenchmarkRequestBody is a non-streamed chat completion through the whole gateway with prompts of 1, 64 and
// 512 KiB: the body read, checked and sent upstream as the caller's bytes.
func BenchmarkRequestBody(b *testing.B) {
	f := newFixture(b, Options{})
	up := benchUpstream(b)
	runBodySizes(b, f.srv.Handler().Handler(), HeaderAPIKey, f.plain, HeaderConfig, bodyBenchConfig(up.URL, ""))
}

// BenchmarkRequestBodyDirectProxy is the floor of BenchmarkRequestBody: a trivial proxy that reads the body,
// makes the same upstream call and copies the answer back. The gateway's own cost per KiB is the difference.
func BenchmarkRequestBodyDirectProxy(b *testing.B) {
	runBodySizes(b, directProxy(benchUpstream(b)))
}

// BenchmarkRequestBodyOverride is BenchmarkRequestBody with override_params on the target, which change
// the body on its way upstream (only the 64 KiB prompt matters; the others show the trend).
func BenchmarkRequestBodyOverride(b *testing.B) {
	f := newFixture(b, Options{})
	up := benchUpstream(b)
	cfg := bodyBenchConfig(up.URL, `,"override_params":{"temperature":0.7,"max_tokens":256}`)
	runBodySizes(b, f.srv.Handler().Handler(), HeaderAPIKey, f.plain, HeaderConfig, cfg)
}

// BenchmarkRequestBodyMetadataUser is BenchmarkRequestBody with metadata._user, which fills the body's "user".
func BenchmarkRequestBodyMetadataUser(b *testing.B) {
	f := newFixture(b, Options{})
	up := benchUpstream(b)
	runBodySizes(b, f.srv.Handler().Handler(), HeaderAPIKey, f.plain, HeaderConfig, bodyBenchConfig(up.URL, ""),
		HeaderMetadata, `{"_user":"u-42"}`)
}
