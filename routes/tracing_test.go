package routes

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmgw/gateway/tracing"
)

// traced switches tracing on for the test over an in-memory exporter that receives each span as it ends. Tests
// that call it must not run in parallel: tracing is process-wide.
func traced(t testing.TB, batched bool) *tracetest.InMemoryExporter {
	exp := tracetest.NewInMemoryExporter()
	opt := sdktrace.WithSyncer(exp)
	if batched {
		opt = sdktrace.WithBatcher(exp)
	}
	tp := sdktrace.NewTracerProvider(opt)
	off := tracing.Use(tp)
	t.Cleanup(func() {
		off()
		tp.Shutdown(context.Background())
	})
	return exp
}

const (
	callerTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan   = "00f067aa0ba902b7"
	callerParent = "00-" + callerTrace + "-" + callerSpan + "-01"
)

func attr(s tracetest.SpanStub, key attribute.Key) attribute.Value {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value
		}
	}
	return attribute.Value{}
}

func spansOfKind(spans tracetest.SpanStubs, kind trace.SpanKind) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.SpanKind == kind {
			out = append(out, s)
		}
	}
	return out
}

// TestTraceparentWithTracingOff: with tracing off the gateway invents no traceparent, and passes a caller's
// traceparent and tracestate upstream unchanged.
func TestTraceparentWithTracingOff(t *testing.T) {
	if tracing.Enabled() {
		t.Fatal("tracing is on")
	}
	f := newFixture(t, Options{})
	up := newUpstream(t, nil)
	h := upstreamHeaders(up)
	if a := f.chat(t, chatBody, h...); a.status != 200 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	r, _ := up.lastRequest()
	if v := r.Header.Get("Traceparent"); v != "" {
		t.Fatalf("a traceparent was invented: %q", v)
	}
	if a := f.chat(t, chatBody, append(h, "traceparent", callerParent, "tracestate", "vendor=x")...); a.status != 200 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	r, _ = up.lastRequest()
	if r.Header.Get("Traceparent") != callerParent || r.Header.Get("Tracestate") != "vendor=x" {
		t.Fatalf("upstream got traceparent %q tracestate %q", r.Header.Get("Traceparent"), r.Header.Get("Tracestate"))
	}
	// A malformed traceparent is not passed on, nor the tracestate that came with it.
	if a := f.chat(t, chatBody, append(h, "traceparent", "00-not-a-trace-01", "tracestate", "vendor=x")...); a.status != 200 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	r, _ = up.lastRequest()
	if v := r.Header.Get("Traceparent") + r.Header.Get("Tracestate"); v != "" {
		t.Fatalf("a malformed caller trace context reached the upstream: %q", v)
	}
}

// TestTracedChat: a request with a caller's traceparent gives a server span in the caller's trace, a client
// span per attempt as its child with the GenAI attributes, and the upstream gets the attempt span's context.
func TestTracedChat(t *testing.T) {
	exp := traced(t, false)
	f := newFixture(t, Options{})
	up := newUpstream(t, nil)
	a := f.chat(t, chatBody, append(upstreamHeaders(up), "traceparent", callerParent, HeaderTraceID, "trace-otel-1")...)
	if a.status != 200 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	spans := exp.GetSpans()
	servers, clients := spansOfKind(spans, trace.SpanKindServer), spansOfKind(spans, trace.SpanKindClient)
	if len(servers) != 1 || len(clients) != 1 {
		t.Fatalf("%d server and %d client spans, want 1 and 1: %v", len(servers), len(clients), spans)
	}
	srv, cl := servers[0], clients[0]
	if srv.SpanContext.TraceID().String() != callerTrace || srv.Parent.SpanID().String() != callerSpan || !srv.Parent.IsRemote() {
		t.Fatalf("server span does not continue the caller's trace: %v parent %v", srv.SpanContext, srv.Parent)
	}
	if srv.Name != "POST /v1/chat/completions" {
		t.Errorf("server span name %q", srv.Name)
	}
	for key, want := range map[attribute.Key]any{
		"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini", "gen_ai.provider.name": "openai",
		"gateway.trace_id": "trace-otel-1", "gateway.endpoint": "chat/completions", "http.response.status_code": int64(200),
		"gateway.cache_status": "DISABLED", "gateway.retries": int64(0), "gen_ai.usage.input_tokens": int64(5),
		"gen_ai.usage.output_tokens": int64(2),
	} {
		if got := attr(srv, key).AsInterface(); got != want {
			t.Errorf("server span %s = %v, want %v", key, got, want)
		}
	}
	if cl.Parent.SpanID() != srv.SpanContext.SpanID() || cl.SpanContext.TraceID() != srv.SpanContext.TraceID() {
		t.Fatalf("attempt span is not the server span's child")
	}
	if cl.Name != "chat gpt-4o-mini" {
		t.Errorf("attempt span name %q", cl.Name)
	}
	for key, want := range map[attribute.Key]any{
		"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini", "gen_ai.response.model": "gpt-4o-mini",
		"gen_ai.provider.name": "openai", "gen_ai.system": "openai", "server.address": "127.0.0.1",
		"http.response.status_code": int64(200), "gen_ai.usage.input_tokens": int64(5), "gen_ai.usage.output_tokens": int64(2),
	} {
		if got := attr(cl, key).AsInterface(); got != want {
			t.Errorf("attempt span %s = %v, want %v", key, got, want)
		}
	}
	r, _ := up.lastRequest()
	if want := "00-" + callerTrace + "-" + cl.SpanContext.SpanID().String() + "-01"; r.Header.Get("Traceparent") != want {
		t.Fatalf("upstream traceparent %q, want %q", r.Header.Get("Traceparent"), want)
	}

	// Without a caller's traceparent the gateway starts a trace of its own and still sends its context.
	exp.Reset()
	if a := f.chat(t, chatBody, upstreamHeaders(up)...); a.status != 200 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	servers = spansOfKind(exp.GetSpans(), trace.SpanKindServer)
	if len(servers) != 1 || servers[0].Parent.IsValid() {
		t.Fatalf("server spans %v", servers)
	}
	r, _ = up.lastRequest()
	if tp := r.Header.Get("Traceparent"); !strings.HasPrefix(tp, "00-"+servers[0].SpanContext.TraceID().String()+"-") {
		t.Fatalf("upstream traceparent %q is not of the gateway's trace", tp)
	}
}

// TestTracedFallbackAndHooks: a fallback over a failing target gives two attempt spans, the first failed; a
// guardrail gives a span for its stage; a failed request's server span is marked failed.
func TestTracedFallbackAndHooks(t *testing.T) {
	exp := traced(t, false)
	f := newFixture(t, Options{})
	bad := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ int64) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(500)
		io.WriteString(w, `{"error":{"message":"boom"}}`)
	})
	good := newUpstream(t, nil)
	target := func(u *upstream) string {
		return fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q}`, u.URL+"/v1")
	}
	cfg := `{"strategy":{"mode":"fallback"},"targets":[` + target(bad) + `,` + target(good) + `],` +
		`"input_guardrails":[{"id":"g","default.contains":{"words":["forbidden"],"operator":"none"}}]}`
	if a := f.chat(t, chatBody, HeaderConfig, cfg); a.status != 200 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	spans := exp.GetSpans()
	servers, clients := spansOfKind(spans, trace.SpanKindServer), spansOfKind(spans, trace.SpanKindClient)
	if len(servers) != 1 || len(clients) != 2 {
		t.Fatalf("%d server and %d client spans, want 1 and 2", len(servers), len(clients))
	}
	if attr(clients[0], "http.response.status_code").AsInt64() != 500 || clients[0].Status.Code != codes.Error {
		t.Errorf("first attempt: status %v %v", attr(clients[0], "http.response.status_code"), clients[0].Status)
	}
	if attr(clients[1], "http.response.status_code").AsInt64() != 200 || clients[1].Status.Code == codes.Error {
		t.Errorf("second attempt: status %v %v", attr(clients[1], "http.response.status_code"), clients[1].Status)
	}
	if got := attr(servers[0], "gateway.target").AsString(); got != "config.targets[1]" {
		t.Errorf("server span target %q", got)
	}
	var hooks []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == "hooks before" {
			hooks = append(hooks, s)
		}
	}
	if len(hooks) != 2 { // the config's input guardrails run before each target's call
		t.Fatalf("%d hook spans, want 2", len(hooks))
	}
	for _, h := range hooks {
		if h.Parent.SpanID() != servers[0].SpanContext.SpanID() || attr(h, "gateway.hook.stage").AsString() != "before" ||
			attr(h, "gateway.hook.items").AsInt64() != 1 {
			t.Fatalf("hook span %v", h)
		}
	}

	// Every target fails: the caller gets the last 500, and the server span says so.
	exp.Reset()
	cfg = `{"strategy":{"mode":"fallback"},"targets":[` + target(bad) + `,` + target(bad) + `]}`
	if a := f.chat(t, chatBody, HeaderConfig, cfg); a.status != 500 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	servers = spansOfKind(exp.GetSpans(), trace.SpanKindServer)
	if len(servers) != 1 || servers[0].Status.Code != codes.Error || attr(servers[0], "http.response.status_code").AsInt64() != 500 {
		t.Fatalf("failed request's server span %v", servers)
	}
}

// TestTracedStream: a streamed answer's spans end when the stream does.
func TestTracedStream(t *testing.T) {
	exp := traced(t, false)
	f := newFixture(t, Options{})
	up := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ int64) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n")
		io.WriteString(w, "data: [DONE]\n\n")
	})
	a := f.chat(t, `{"model":"m","stream":true,"messages":[{"role":"user","content":"Hi"}]}`, upstreamHeaders(up)...)
	if a.status != 200 || !strings.Contains(string(a.body), "[DONE]") {
		t.Fatalf("%d %s", a.status, a.body)
	}
	spans := exp.GetSpans()
	servers, clients := spansOfKind(spans, trace.SpanKindServer), spansOfKind(spans, trace.SpanKindClient)
	if len(servers) != 1 || len(clients) != 1 || clients[0].Parent.SpanID() != servers[0].SpanContext.SpanID() {
		t.Fatalf("%d server and %d client spans once the stream ended: %v", len(servers), len(clients), spans)
	}
	if attr(servers[0], "http.response.status_code").AsInt64() != 200 || attr(servers[0], "gen_ai.provider.name").AsString() != "openai" {
		t.Fatalf("server span attributes %v", servers[0].Attributes)
	}
}

// TestGuardrailVerdictMetrics: each check of a hook run counts one verdict by check id.
func TestGuardrailVerdictMetrics(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, nil)
	cfg := fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,"input_guardrails":[`+
		`{"id":"g","default.contains":{"words":["forbidden"],"operator":"none"}},`+
		`{"id":"soft","default.wordCount":{"maxWords":0}}]}`, up.URL+"/v1")
	if a := f.chat(t, chatBody, HeaderConfig, cfg); a.status != 246 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	denying := strings.Replace(cfg, `{"id":"soft",`, `{"id":"soft","deny":true,`, 1)
	if a := f.chat(t, chatBody, HeaderConfig, denying); a.status != 446 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	reg := f.srv.Metrics().Registry()
	for _, tc := range []struct {
		check, verdict string
		want           float64
	}{
		{"default.contains", "pass", 2},
		{"default.wordCount", "fail", 1},
		{"default.wordCount", "deny", 1},
	} {
		if v, _ := metricValue(t, reg, "gateway_guardrail_verdicts_total", map[string]string{"check": tc.check, "verdict": tc.verdict}); v != tc.want {
			t.Errorf("gateway_guardrail_verdicts_total{check=%q,verdict=%q} = %v, want %v", tc.check, tc.verdict, v, tc.want)
		}
	}
}

// BenchmarkChatCompletionGatewayTraced is BenchmarkChatCompletionGateway with tracing on, over an in-memory
// exporter behind the SDK's batch processor: the difference is what tracing costs a request (a server span,
// an attempt span, the traceparent sent upstream). Tracing off costs an atomic load per call site, which
// BenchmarkChatCompletionGateway includes.
func BenchmarkChatCompletionGatewayTraced(b *testing.B) {
	traced(b, true)
	f := newFixture(b, Options{})
	up := benchUpstream(b)
	cfg := `{"strategy":{"mode":"fallback"},"targets":[{"provider":"openai","api_key":"sk","custom_host":"` + up.URL + `/v1"}]}`
	runChat(b, f.srv.Handler().Handler(), HeaderAPIKey, f.plain, HeaderConfig, cfg, "traceparent", callerParent)
}
