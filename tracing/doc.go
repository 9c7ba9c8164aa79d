// Package tracing owns the gateway's OpenTelemetry traces: switching them on from the standard OTEL_*
// variables (Setup), the tracer every call site uses (Start), the W3C TraceContext propagation of a caller's
// traceparent and of the gateway's own to providers, and the names of the span attributes (attributes.go:
// OpenTelemetry's GenAI conventions plus the gateway's own "gateway.*" keys), so that they live in one place.
//
// Tracing is off unless OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set (and
// OTEL_TRACES_EXPORTER is not "none"). Off, it must cost nothing measurable: every call site asks Enabled (an
// atomic load) before it starts a span or derives a context, and does neither when it is false.
//
// The spans: one server span per inference request (routes), one client span per provider attempt (runtime),
// one span per hook stage (runtime) and one per wasm plugin call (plugins).
//
// tracing imports the OpenTelemetry API, SDK and OTLP exporters and nothing of the gateway's, so that routes,
// runtime and plugins can all import it. Its state is one atomic pointer, set by Setup (or Use, in tests); it
// is safe for concurrent use.
package tracing
