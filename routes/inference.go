package routes

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
	"github.com/llmgw/gateway/tracing"
)

// inference serves POST /v1/chat/completions, /v1/completions and /v1/embeddings through the engine.
func (s *Server) inference(ep providers.Endpoint) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := requireJSON(c); err != nil {
			return err
		}
		// The body is read once, by limitBody, into a buffer the engine can keep past the handler (ownedBody).
		body, err := schema.ReadBody(ownedBody(c))
		if err != nil {
			return err
		}
		if body.Stream() && ep == providers.Embeddings {
			return gwerr.BadRequest("stream", "embeddings cannot be streamed")
		}
		req, err := newEngineRequest(c, ep, body)
		if err != nil {
			return err
		}
		return s.run(c, req, nil)
	}
}

// newEngineRequest makes the engine request of an inference call: the body, the caller's key and trace ID,
// and the gateway headers.
func newEngineRequest(c *fiber.Ctx, ep providers.Endpoint, body schema.Body) (*runtime.Request, error) {
	req := &runtime.Request{Endpoint: ep, URLPath: ownedPath(c), Body: body, Stream: body.Stream(),
		Key: callerKey(c), TraceID: ensureTraceID(c)}
	if err := readGatewayHeaders(c, req); err != nil {
		return nil, err
	}
	return req, nil
}

// endpointPaths holds the URL paths of the inference endpoints, so that a request to one of them takes the
// held string rather than a copy of fiber's (which fiber reuses once the handler returns).
var endpointPaths = func() map[string]string {
	m := make(map[string]string)
	for _, ep := range []providers.Endpoint{providers.ChatCompletions, providers.Completions, providers.Embeddings, providers.Responses} {
		p := "/v1" + ep.Path()
		m[p] = p
	}
	return m
}()

// ownedPath is the request's URL path, safe to keep past the handler.
func ownedPath(c *fiber.Ctx) string {
	if p, ok := endpointPaths[c.Path()]; ok {
		return p
	}
	return strings.Clone(c.Path())
}

// run sends the request through the engine and writes its answer (see send). The request's context ends when
// the caller closes its connection while the engine works (so its upstream calls stop), when Shutdown's grace
// period is over, or once the answer is written: a stream outlives the handler, and its context ends when the
// stream writer is done with it (a caller gone mid-stream shows as a failed write).
func (s *Server) run(c *fiber.Ctx, req *runtime.Request, wrap func(c *fiber.Ctx, resp *runtime.Response) []byte) error {
	start := c.Context().Time() // when the request arrived
	t := s.inflight.begin(c.UserContext(), c.Context().Conn())
	req.Header = func(name string) string { return c.Get(name) }
	req.Cancel = t.cancel
	var span trace.Span // the request's server span when tracing is on (tracing.go)
	if tracing.Enabled() {
		span = traceRequest(c, &t, req)
	}
	resp, err := s.engine.Do(t.ctx, req)
	req.Header = nil // c.Get must not be called once the handler has returned
	s.inflight.unwatch(&t)
	if err != nil || resp.Stream == nil {
		if err != nil {
			s.observe(t.ctx, start, req, nil, toGatewayError(c, err).Status, refusedByRateLimit(err), streamTimes{})
			if span != nil {
				endTrace(span, nil, toGatewayError(c, err).Status, err)
			}
		}
		s.inflight.end(t)
		if t.ctx.Err() != nil && context.Cause(t.ctx) == errCallerGone {
			s.log.Info("the caller went away; its upstream calls were cancelled", "trace_id", req.TraceID)
			if err != nil { // nobody reads it, and it is no failure of the gateway's: not logged as one
				return writeError(c, toGatewayError(c, err))
			}
		}
		if err != nil {
			return err
		}
		if span != nil {
			defer endTrace(span, resp, resp.Status, nil)
		}
		return s.send(c, req, resp, noCancel, wrap, start, t.ctx)
	}
	if span != nil {
		traceStream(span, resp)
	}
	stream := t // a copy, so that only a streamed answer's entry escapes to the heap
	return s.send(c, req, resp, func() { s.inflight.end(stream) }, wrap, start, stream.ctx)
}

// send writes an engine answer: the gateway headers, then the body, or the stream event by event. wrap, when
// set, reshapes a whole 2xx body (prompt completions wrap it in {"status", "headers", "body"}). cancel ends
// the request's context once the answer is written. The request is reported (observe) once the answer is
// written: at once for a whole answer, when the stream ends for a streamed one; start is its arrival, ctx
// its context.
func (s *Server) send(c *fiber.Ctx, req *runtime.Request, resp *runtime.Response, cancel context.CancelFunc, wrap func(c *fiber.Ctx, resp *runtime.Response) []byte, start time.Time, ctx context.Context) error {
	c.Set(HeaderAnswerProvider, resp.Provider)
	c.Set(HeaderRetryCount, strconv.Itoa(resp.Retries))
	c.Set(HeaderOptionIndex, resp.OptionPath)
	c.Set(HeaderCacheStatus, resp.CacheStatus)
	if rl := resp.RateLimit; rl.Set {
		var buf [32]byte
		h := &c.Response().Header
		h.SetBytesV("X-Ratelimit-Limit", strconv.AppendFloat(buf[:0], rl.Limit, 'f', -1, 64))
		h.SetBytesV("X-Ratelimit-Remaining", strconv.AppendFloat(buf[:0], rl.Remaining, 'f', -1, 64))
		h.SetBytesV("X-Ratelimit-Reset", strconv.AppendInt(buf[:0], rl.Reset, 10))
	}
	for name, values := range resp.Header {
		for _, v := range values {
			c.Response().Header.Add(name, v)
		}
	}
	c.Status(resp.Status)
	if resp.Stream == nil {
		cancel()
		s.observe(ctx, start, req, resp, resp.Status, false, streamTimes{})
		if u := resp.Usage; u.CostKnown {
			var buf [32]byte
			c.Response().Header.SetBytesV(HeaderCost, strconv.AppendFloat(buf[:0], u.CostUSD, 'f', -1, 64))
		}
		if len(resp.Header.Values("Content-Type")) == 0 {
			c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		}
		if wrap != nil && resp.Status >= 200 && resp.Status < 300 {
			c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
			return c.Send(wrap(c, resp))
		}
		return c.Send(resp.Body)
	}
	if resp.Raw { // audio: the provider's bytes as they arrive, with its content type (media.go)
		if len(resp.Header.Values("Content-Type")) == 0 {
			c.Set(fiber.HeaderContentType, fiber.MIMEOctetStream)
		}
		c.Response().ImmediateHeaderFlush = true
		c.Context().SetBodyStream(s.newRawRelay(req, resp, cancel, start, ctx), -1)
		return nil
	}
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("X-Accel-Buffering", "no")
	// The headers leave at once, as the provider's did: a caller's time to first byte is not its first event's.
	c.Response().ImmediateHeaderFlush = true
	c.Context().SetBodyStream(s.newRelay(req, resp, cancel, start, ctx), -1) // stream.go
	return nil
}

func noCancel() {}
