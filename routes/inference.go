package routes

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
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
		// The body is read once, here; fiber reuses its buffer, so the engine gets a copy that outlives the handler.
		body, err := schema.ReadBody(bytes.Clone(c.Body()))
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
	req := &runtime.Request{Endpoint: ep, URLPath: strings.Clone(c.Path()), Body: body, Stream: body.Stream(),
		Key: callerKey(c), TraceID: ensureTraceID(c)}
	if err := readGatewayHeaders(c, req); err != nil {
		return nil, err
	}
	return req, nil
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
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("X-Accel-Buffering", "no")
	upstream, log, trace := resp.Stream, s.log, req.TraceID
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer cancel()
		relayStart := time.Now()
		first, err := copySSE(w, upstream)
		if err != nil {
			log.Warn("stream ended early", "trace_id", trace, "err", err)
		}
		upstream.Close() // before observe: closing the stream settles its usage (resp.Usage)
		times := streamTimes{relayed: time.Since(relayStart)}
		if !first.IsZero() {
			times.firstEvent = first.Sub(start)
		}
		s.observe(ctx, start, req, resp, resp.Status, false, times)
	})
	return nil
}

func noCancel() {}

var sseReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}

// errCallerGone reports that the caller closed the connection mid-stream.
var errCallerGone = errors.New("caller went away")

// copySSE copies an upstream event stream to the caller event by event, flushing after each event so that
// nothing waits in a buffer. When the upstream breaks mid-way the caller gets a final error event and no
// [DONE]; when the caller goes away the copy stops (and the caller of copySSE closes the upstream). first is
// when the first line was read (zero when none was).
func copySSE(w *bufio.Writer, upstream io.Reader) (first time.Time, err error) {
	br := sseReaders.Get().(*bufio.Reader)
	br.Reset(upstream)
	defer func() { br.Reset(nil); sseReaders.Put(br) }()
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			if first.IsZero() {
				first = time.Now()
			}
			if _, werr := w.Write(line); werr != nil {
				return first, errCallerGone
			}
			if len(bytes.TrimRight(line, "\r\n")) == 0 { // a blank line ends an event
				if w.Flush() != nil {
					return first, errCallerGone
				}
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if w.Flush() != nil {
				return first, errCallerGone
			}
			return first, nil
		default:
			broke := &gwerr.Error{Status: fiber.StatusBadGateway, Code: gwerr.CodeUpstream, Message: "the provider's stream broke off: " + err.Error()}
			event, _ := json.Marshal(broke.Body())
			w.WriteString("\n\ndata: ")
			w.Write(event)
			w.WriteString("\n\n")
			w.Flush()
			return first, err
		}
	}
}
