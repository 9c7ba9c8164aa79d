package routes

import (
	"io"
	"strings"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/tracing"
)

// traceRequest starts the server span of an inference request, continuing the caller's W3C traceparent (and
// tracestate) when it sent one, and puts it in the request's context, so that the engine's spans (attempts,
// hooks, plugin calls) are its children. run calls it only when tracing.Enabled. The span ends with endTrace,
// or for a streamed answer when the stream is closed (traceStream).
func traceRequest(c *fiber.Ctx, t *tracked, req *runtime.Request) trace.Span {
	ctx := tracing.Extract(t.ctx, func(name string) string { return c.Get(name) })
	// fiber's strings point into buffers it reuses, and the span outlives the handler: copies.
	method, route := strings.Clone(c.Method()), c.Route().Path
	ctx, span := tracing.Start(ctx, method+" "+route, trace.SpanKindServer,
		tracing.KeyOperation.String(tracing.Operation(req.Endpoint.Path())),
		tracing.KeyEndpoint.String(endpointLabel(req)),
		tracing.KeyRequestModel.String(req.Body.Model()),
		tracing.KeyTraceID.String(req.TraceID),
		tracing.KeyMethod.String(method),
		tracing.KeyRoute.String(route))
	t.ctx = ctx
	return span
}

// endTrace ends a request's server span with what the caller got: status, and for an answer (resp not nil)
// the provider that answered, its target, the cache status, the retries and the tokens. err is the engine's
// failure, when it failed.
func endTrace(span trace.Span, resp *runtime.Response, status int, err error) {
	if resp != nil {
		tracing.SetProvider(span, resp.Provider)
		span.SetAttributes(tracing.KeyCacheStatus.String(resp.CacheStatus), tracing.KeyRetries.Int(resp.Retries),
			tracing.KeyTarget.String(resp.OptionPath))
		if u := resp.Usage; u.Known {
			tracing.SetUsage(span, u.InputTokens, u.OutputTokens)
		}
	}
	tracing.SetStatus(span, status)
	if err != nil && status >= 500 {
		tracing.SetError(span, err)
	}
	span.End()
}

// traceStream ends a streamed answer's server span when the stream is closed: once the stream writer is done
// with it, which is when the engine has read the stream's usage.
func traceStream(span trace.Span, resp *runtime.Response) {
	resp.Stream = &tracedStream{ReadCloser: resp.Stream, span: span, resp: resp}
}

type tracedStream struct {
	io.ReadCloser
	span trace.Span
	resp *runtime.Response
}

func (s *tracedStream) Close() error {
	err := s.ReadCloser.Close()
	endTrace(s.span, s.resp, s.resp.Status, nil)
	return err
}
