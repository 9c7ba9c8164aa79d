package tracing

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/llmgw/gateway/tracing/tracingtest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// otelVars are the variables Setup reads; each test starts with them unset.
var otelVars = []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER",
	"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_TRACES_SAMPLER",
	"OTEL_RESOURCE_ATTRIBUTES"}

func clearEnv(t *testing.T) {
	for _, v := range otelVars {
		t.Setenv(v, "")
	}
}

func TestSetupOff(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
	}{
		{"no endpoint", nil},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			shutdown, err := Setup(context.Background(), quiet)
			if err != nil {
				t.Fatal(err)
			}
			if Enabled() {
				t.Fatal("tracing is on")
			}
			if err := shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSetupRefuses(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string // in the error
	}{
		{"exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER"},
		{"protocol", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{"traces protocol", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "thrift"}, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
		{"scheme", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://collector:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"no scheme", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			if _, ok := tc.env["OTEL_EXPORTER_OTLP_ENDPOINT"]; !ok && tc.env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] == "" {
				t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			shutdown, err := Setup(context.Background(), quiet)
			if err == nil {
				shutdown(context.Background())
				t.Fatal("Setup accepted it")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not name %s", err, tc.want)
			}
			if Enabled() {
				t.Fatal("tracing is on after a refused setup")
			}
		})
	}
}

// TestSetupExports switches tracing on against an in-process OTLP receiver: a span continuing a caller's
// traceparent reaches it with the caller's trace ID and the default service name, and the header injected for
// an upstream carries that trace and the span's ID.
func TestSetupExports(t *testing.T) {
	for _, protocol := range []string{"", "http/protobuf"} {
		t.Run("protocol="+protocol, func(t *testing.T) {
			clearEnv(t)
			recv := tracingtest.New(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL())
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
			shutdown, err := Setup(context.Background(), quiet)
			if err != nil {
				t.Fatal(err)
			}
			if !Enabled() {
				t.Fatal("tracing is off")
			}
			const callerTrace, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
			caller := http.Header{"Traceparent": {"00-" + callerTrace + "-" + callerSpan + "-01"}}
			ctx := Extract(context.Background(), caller.Get)
			ctx, span := Start(ctx, "chat m", trace.SpanKindClient, KeyRequestModel.String("m"))
			SetProvider(span, "openai")
			SetUsage(span, 3, 4)
			SetStatus(span, 200)
			upstream := http.Header{}
			Inject(ctx, upstream.Set)
			own := span.SpanContext().SpanID().String()
			span.End()
			if want := "00-" + callerTrace + "-" + own + "-01"; upstream.Get("Traceparent") != want {
				t.Fatalf("traceparent sent upstream %q, want %q", upstream.Get("Traceparent"), want)
			}
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := shutdown(sctx); err != nil { // flushes
				t.Fatal(err)
			}
			if Enabled() {
				t.Fatal("tracing is still on after shutdown")
			}
			spans := recv.Wait(t, 10*time.Second, func(s []tracingtest.Span) bool { return len(s) > 0 })
			s := spans[0]
			if s.TraceID != callerTrace || s.ParentSpanID != callerSpan || s.SpanID != own {
				t.Fatalf("span %+v does not continue the caller's trace", s)
			}
			if s.Service != DefaultServiceName || s.Str("gen_ai.provider.name") != "openai" || s.Str("gen_ai.system") != "openai" ||
				s.Str("gen_ai.request.model") != "m" {
				t.Fatalf("span attributes: service %q, %v", s.Service, s.Attrs)
			}
			if n, _ := s.Int("gen_ai.usage.output_tokens"); n != 4 {
				t.Fatalf("output tokens %d, want 4", n)
			}
		})
	}
}

// TestSetupGRPC: OTEL_EXPORTER_OTLP_PROTOCOL=grpc is accepted (the exporter connects lazily).
func TestSetupGRPC(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	shutdown, err := Setup(context.Background(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if !Enabled() {
		t.Fatal("tracing is off")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	shutdown(ctx) // nothing to flush
	if Enabled() {
		t.Fatal("tracing is still on after shutdown")
	}
}

func TestStartOffIsNoop(t *testing.T) {
	off := Use(noop.NewTracerProvider())
	off()
	ctx := context.Background()
	got, span := Start(ctx, "x", trace.SpanKindInternal)
	if got != ctx || span.IsRecording() {
		t.Fatal("Start with tracing off derived a context or a recording span")
	}
}

func TestOperation(t *testing.T) {
	tests := []struct{ path, want string }{
		{"/chat/completions", "chat"},
		{"/completions", "text_completion"},
		{"/embeddings", "embeddings"},
		{"/responses", "responses"},
		{"/images/generations", "images/generations"},
	}
	for _, tc := range tests {
		if got := Operation(tc.path); got != tc.want {
			t.Errorf("Operation(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}
