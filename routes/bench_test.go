package routes

import (
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// benchRequest runs one request through the app's handler (middleware, routing, handler, error mapping)
// without a network, as fasthttp would after parsing it.
func benchRequest(b *testing.B, f *fixture, method, path string, headers ...string) {
	b.Helper()
	h := f.srv.Handler().Handler()
	var ctx fasthttp.RequestCtx
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetMethod(method)
		ctx.Request.SetRequestURI(path)
		for j := 0; j+1 < len(headers); j += 2 {
			ctx.Request.Header.Set(headers[j], headers[j+1])
		}
		h(&ctx)
		if ctx.Response.StatusCode() != fiber.StatusOK {
			b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
}

// BenchmarkAuthenticatedNoop measures the per-request cost of the front: trace ID, key lookup, routing.
func BenchmarkAuthenticatedNoop(b *testing.B) {
	f := newFixture(b, Options{})
	f.srv.Handler().Get("/v1/bench-noop", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusOK) })
	benchRequest(b, f, "GET", "/v1/bench-noop", HeaderAPIKey, f.plain, HeaderTraceID, "bench-trace")
}

// BenchmarkHealth is the floor: a route with no key.
func BenchmarkHealth(b *testing.B) {
	f := newFixture(b, Options{})
	benchRequest(b, f, "GET", "/health")
}
