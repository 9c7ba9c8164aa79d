package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"go.opentelemetry.io/otel/trace"

	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/tracing"
)

// startAttemptSpan starts the client span of one provider attempt, named "{operation} {model}" as the GenAI
// conventions name inference spans. attempt calls it only when tracing.Enabled.
func startAttemptSpan(ctx context.Context, t *providers.Target, call *providers.Call) (context.Context, trace.Span) {
	op := tracing.Operation(call.Endpoint.Path())
	model := callModel(call)
	p := tracing.Provider(t.Provider)
	ctx, span := tracing.Start(ctx, op+" "+model, trace.SpanKindClient,
		tracing.KeyOperation.String(op), tracing.KeyRequestModel.String(model), p[0], p[1])
	if u, err := url.Parse(t.BaseURL); err == nil && u.Hostname() != "" {
		span.SetAttributes(tracing.KeyServer.String(u.Hostname()))
	}
	return ctx, span
}

// callModel is the model an attempt asks for: the caller's, or the one override_params put in the body.
func callModel(call *providers.Call) string {
	if call.Request != nil {
		return call.Request.Model()
	}
	var b struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(call.Body, &b) // a body without a model names none
	return b.Model
}

// endAttemptSpan records an attempt's outcome on its span and ends it; a streamed answer's span ends when the
// stream is closed.
func endAttemptSpan(span trace.Span, out *outcome) {
	switch {
	case out.err != nil:
		span.SetAttributes(tracing.KeyStatusCode.Int(out.err.Status))
		tracing.SetError(span, out.err)
	default:
		tracing.SetStatus(span, out.status)
	}
	if out.ok() && out.body != nil {
		if in, o, ok := AnswerTokens(out.body); ok {
			tracing.SetUsage(span, in, o)
		}
		if m := answerModel(out.body); m != "" {
			span.SetAttributes(tracing.KeyModel.String(m))
		}
	}
	if s := out.stream; s != nil {
		cancel := s.cancel
		s.cancel = func() { cancel(); span.End() }
		return
	}
	span.End()
}

// answerModel reads the "model" of a whole answer without decoding it (as AnswerTokens reads usage): the
// first "model" key, whose string holds no escape; "" when there is none.
func answerModel(body []byte) string {
	const key = `"model"`
	for {
		i := bytes.Index(body, []byte(key))
		if i < 0 {
			return ""
		}
		body = bytes.TrimLeft(body[i+len(key):], " \t\r\n")
		if len(body) == 0 || body[0] != ':' {
			continue
		}
		body = bytes.TrimLeft(body[1:], " \t\r\n")
		if len(body) == 0 || body[0] != '"' {
			return ""
		}
		end := bytes.IndexAny(body[1:], `"\\`)
		if end < 0 || body[1+end] != '"' {
			return ""
		}
		return string(body[1 : 1+end])
	}
}

// forwardTrace puts the trace context on an upstream request: the attempt span's when tracing is on (span not
// nil), else the caller's own traceparent and tracestate, so that a caller's trace still reaches the provider
// through a gateway that does not trace. The caller's headers are read by the W3C propagator and written again:
// a malformed traceparent is not passed on, and a tracestate only within the standard's bounds. Without a
// traceparent, no header is added.
func forwardTrace(ctx context.Context, span trace.Span, t *providers.Target, req *http.Request) {
	if span != nil {
		tracing.Inject(ctx, req.Header.Set)
		return
	}
	if t.Header("traceparent") == "" {
		return
	}
	tracing.Inject(tracing.Extract(ctx, tracing.HeaderFunc(t.Header)), req.Header.Set)
}
