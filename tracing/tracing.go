package tracing

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// DefaultServiceName is the service.name of the gateway's spans when OTEL_SERVICE_NAME is not set.
const DefaultServiceName = "gateway"

// instrumentation is the name of the gateway's tracer (the instrumentation scope of its spans).
const instrumentation = "github.com/llmgw/gateway"

// propagator reads and writes W3C traceparent and tracestate headers.
var propagator = propagation.TraceContext{}

// current is the tracer in use; nil while tracing is off.
var current atomic.Pointer[tracerState]

type tracerState struct{ tracer trace.Tracer }

// Enabled reports whether tracing is on. Call sites ask it before starting a span or deriving a context, so
// that tracing off costs one atomic load.
func Enabled() bool { return current.Load() != nil }

// Use switches tracing on with tp's tracer (tests give one over an in-memory exporter) and returns the
// function that switches it off again. Setup calls it; so may tests, which must not run in parallel with
// tests that expect tracing off.
func Use(tp trace.TracerProvider) (off func()) {
	current.Store(&tracerState{tracer: tp.Tracer(instrumentation)})
	return func() { current.Store(nil) }
}

// Start starts a span as a child of ctx's span (or of a remote parent that Extract put there). With tracing
// off it returns ctx and a span that records nothing; call sites should not get that far (ask Enabled).
func Start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	s := current.Load()
	if s == nil {
		return ctx, noop.Span{}
	}
	return s.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// HeaderFunc reads one request header by name (case-insensitive), as fiber's Ctx.Get and runtime.Request's
// Header do.
type HeaderFunc func(name string) string

// Extract returns ctx with the remote span context of a caller's traceparent (and tracestate) header, read
// through get; without a valid traceparent, ctx unchanged. The span started on the result continues the
// caller's trace.
func Extract(ctx context.Context, get HeaderFunc) context.Context {
	return propagator.Extract(ctx, headerCarrier{get: get})
}

// Inject writes the traceparent (and tracestate) of ctx's span through set: the header that makes an
// upstream's spans children of that span.
func Inject(ctx context.Context, set func(name, value string)) {
	propagator.Inject(ctx, headerCarrier{set: set})
}

// headerCarrier adapts header functions to propagation.TextMapCarrier. TraceContext reads and writes only the
// names it knows, so Keys is never needed.
type headerCarrier struct {
	get HeaderFunc
	set func(name, value string)
}

func (c headerCarrier) Get(key string) string {
	if c.get == nil {
		return ""
	}
	return c.get(key)
}

func (c headerCarrier) Set(key, value string) {
	if c.set != nil {
		c.set(key, value)
	}
}

func (c headerCarrier) Keys() []string { return nil }

// Setup switches tracing on when the standard variables ask for it: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_ENDPOINT set, and OTEL_TRACES_EXPORTER unset, "otlp" or "none" (which keeps it off).
// Spans go to that endpoint over OTLP, HTTP/protobuf by default or gRPC when
// OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL is "grpc", in batches (OTEL_BSP_* tune them); OTEL_SERVICE_NAME names
// the service (default "gateway"), OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG choose the sampler (the
// SDK's default: every trace, or as the caller's traceparent says), and OTEL_EXPORTER_OTLP_HEADERS,
// _TIMEOUT, _COMPRESSION and _CERTIFICATE are read by the exporter. It installs the W3C TraceContext
// propagator as OpenTelemetry's global one too.
//
// A value it cannot use is an error, so that a misconfigured gateway does not start without the traces its
// operator asked for. shutdown flushes the spans still buffered, bounded by its ctx, and switches tracing
// off; with tracing off it does nothing.
func Setup(ctx context.Context, log *slog.Logger) (shutdown func(context.Context) error, err error) {
	return setup(ctx, log, os.Getenv)
}

func setup(ctx context.Context, log *slog.Logger, getenv func(string) string) (func(context.Context) error, error) {
	off := func(context.Context) error { return nil }
	endpointVar := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	endpoint := getenv(endpointVar)
	if endpoint == "" {
		endpointVar = "OTEL_EXPORTER_OTLP_ENDPOINT"
		endpoint = getenv(endpointVar)
	}
	switch v := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); v {
	case "", "otlp":
	case "none":
		return off, nil
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER: %q is not supported: otlp (the default) or none", v)
	}
	if endpoint == "" {
		return off, nil
	}
	if err := checkEndpoint(endpoint); err != nil {
		return nil, fmt.Errorf("%s: %w", endpointVar, err)
	}
	protocolVar := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	protocol := getenv(protocolVar)
	if protocol == "" {
		protocolVar = "OTEL_EXPORTER_OTLP_PROTOCOL"
		protocol = getenv(protocolVar)
	}
	var exporter sdktrace.SpanExporter
	var err error
	switch protocol {
	case "", "http/protobuf":
		exporter, err = otlptracehttp.New(ctx)
	case "grpc":
		exporter, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("%s: %q is not supported: http/protobuf (the default) or grpc", protocolVar, protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	name := getenv("OTEL_SERVICE_NAME")
	if name == "" {
		name = DefaultServiceName
	}
	// The service name is set last: OTEL_RESOURCE_ATTRIBUTES may add attributes but not rename the service
	// OTEL_SERVICE_NAME (or the default) names.
	res, err := resource.Merge(resource.Environment(), resource.NewSchemaless(semconv.ServiceName(name)))
	if err != nil {
		return nil, fmt.Errorf("tracing: OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	otel.SetTextMapPropagator(propagator)
	otel.SetTracerProvider(tp)
	otel.SetErrorHandler(exportErrors(log))
	stop := Use(tp)
	log.Info("tracing on", "endpoint", redactEndpoint(endpoint), "protocol", cmp.Or(protocol, "http/protobuf"), "service", name)
	return func(ctx context.Context) error {
		stop()
		if err := tp.Shutdown(ctx); err != nil {
			return fmt.Errorf("tracing: flush spans: %w", err)
		}
		return nil
	}, nil
}

// checkEndpoint accepts an http or https URL with a host, the form OTLP endpoints take.
func checkEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return errors.New("not a URL") // url's error repeats the value, which may hold credentials
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("must be an http:// or https:// URL, not %q", u.Scheme+"://…")
	}
	if u.Host == "" {
		return errors.New("the URL names no host")
	}
	return nil
}

// redactEndpoint keeps an endpoint fit for the log: no user info, query or fragment.
func redactEndpoint(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host + u.Path
}

// exportErrors logs the SDK's errors (a collector that cannot be reached, spans dropped), at most one line a
// minute, so that a collector down does not flood the log.
func exportErrors(log *slog.Logger) otel.ErrorHandler {
	var last atomic.Int64
	var dropped atomic.Int64
	return otel.ErrorHandlerFunc(func(err error) {
		now := time.Now().UnixNano()
		prev := last.Load()
		if now-prev < int64(time.Minute) || !last.CompareAndSwap(prev, now) {
			dropped.Add(1)
			return
		}
		log.Warn("tracing: spans could not be exported", "err", err, "errors_not_logged", dropped.Swap(0))
	})
}
