package routes

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
)

// fiber's net/http adaptor buffers a handler's whole answer, which an event stream (the MCP endpoint's answer
// to a call) cannot wait for: serveStreaming runs a net/http handler with a ResponseWriter that is also an
// http.Flusher, and relays what it flushes as it comes.

const (
	// streamChunkBytes is how much a handler may write before its bytes are handed over without a Flush: the
	// answer is never held whole in memory, whatever the handler writes.
	streamChunkBytes = 32 << 10
	// streamStallTimeout bounds how long a chunk waits for the caller to take the one before: a caller that
	// reads nothing for this long is taken as gone, so that the handler does not block on it for good.
	streamStallTimeout = time.Minute
)

// errStreamClosed is what a handler's write answers once its caller cannot be written to.
var errStreamClosed = errors.New("routes: the caller's stream is closed")

// serveStreaming answers the request with h. The answer goes as one body when h returns before it flushes
// (or before it writes streamChunkBytes); otherwise the status and headers go at the first flush and the body
// follows as h flushes it, chunk by chunk, through fasthttp's stream writer. The request's context ends when
// the caller goes away (its connection closes, or a write to it fails), when Shutdown's grace period is over,
// or once h has returned. h runs on a goroutine of its own, which the stream waits for.
func (s *Server) serveStreaming(c *fiber.Ctx, h http.HandlerFunc) error {
	t := s.inflight.begin(c.UserContext(), c.Context().Conn())
	r, err := newHTTPRequest(c, t.ctx)
	if err != nil {
		s.inflight.unwatch(&t)
		s.inflight.end(t)
		return fiber.NewError(fiber.StatusBadRequest, "malformed request URI")
	}
	w := &streamWriter{header: http.Header{}, callerDone: t.ctx.Done(), abandon: func() { t.cancel(errCallerGone) },
		commit: make(chan struct{}), chunks: make(chan []byte), gone: make(chan struct{}), done: make(chan struct{})}
	trace := ensureTraceID(c) // c is fasthttp's again once a stream begins
	go func() {
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("handler panicked", "panic", fmt.Sprint(p), "trace_id", trace)
				if !w.streaming {
					w.header, w.status, w.pending = http.Header{}, 0, nil
					http.Error(w, "internal error", http.StatusInternalServerError)
				}
			}
			// The connection's next request can only begin once the answer is written, after this.
			s.inflight.unwatch(&t)
			if w.streaming {
				w.handOver() // what the handler wrote after its last flush
				close(w.chunks)
			}
			s.inflight.end(t)
			close(w.done)
		}()
		h(w, r)
	}()
	select {
	case <-w.commit:
	case <-w.done:
	}
	// Both channels are closed after the handler's last change to what is read here.
	resp := c.Response()
	if w.status == 0 { // nothing written
		w.status = http.StatusOK
	}
	resp.SetStatusCode(w.status)
	for name, values := range w.sent {
		switch name {
		case "Content-Length", "Transfer-Encoding", "Connection": // fasthttp's to set
			continue
		}
		for _, v := range values {
			resp.Header.Add(name, v)
		}
	}
	if !w.streaming {
		if len(w.sent.Values("Content-Type")) == 0 && len(w.pending) > 0 {
			resp.Header.SetContentType(http.DetectContentType(w.pending)) // as net/http does
		}
		resp.SetBodyRaw(w.pending)
		return nil
	}
	resp.Header.Set("X-Accel-Buffering", "no") // proxies in front must not hold the events back either
	resp.ImmediateHeaderFlush = true
	c.Context().SetBodyStreamWriter(func(bw *bufio.Writer) {
		for chunk := range w.chunks {
			_, err := bw.Write(chunk)
			if err == nil {
				err = bw.Flush()
			}
			if err != nil {
				w.fail()
				w.abandon()
				return
			}
		}
	})
	return nil
}

// newHTTPRequest is the net/http request of c, with ctx: copies of its method, URI, headers and body, since
// the handler may outlive fasthttp's buffers (fasthttpadaptor's request points into them).
func newHTTPRequest(c *fiber.Ctx, ctx context.Context) (*http.Request, error) {
	fr := c.Request()
	uri := string(fr.RequestURI())
	u, err := url.ParseRequestURI(uri)
	if err != nil {
		return nil, err
	}
	body := bytes.Clone(fr.Body()) // limitBody has read it, within BodyLimit
	r := &http.Request{Method: string(fr.Header.Method()), URL: u, RequestURI: uri, Proto: "HTTP/1.1",
		ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{}, Host: string(fr.Host()),
		RemoteAddr: c.Context().RemoteAddr().String(), TLS: c.Context().TLSConnectionState(),
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}
	fr.Header.VisitAll(func(name, value []byte) {
		if n := string(name); n != "Transfer-Encoding" {
			r.Header.Add(n, string(value))
		}
	})
	return r.WithContext(ctx), nil
}

// streamWriter is the handler's http.ResponseWriter. Its methods are called by one goroutine at a time (the
// net/http contract); the fiber side reads status, sent, pending and streaming once commit or done is closed,
// and the stream writer takes chunks until it is closed.
type streamWriter struct {
	header     http.Header
	status     int
	sent       http.Header // header as it was when the status was written: later changes are ignored
	pending    []byte      // written, not yet handed over
	streaming  bool        // the answer is a stream: commit is closed
	callerDone <-chan struct{}
	abandon    func() // ends the request's context: its caller is gone

	commit   chan struct{} // closed at the first flush: the headers go, the body follows in chunks
	chunks   chan []byte   // to the stream writer; closed after the handler's last write
	gone     chan struct{} // closed once the caller cannot be written to
	goneOnce sync.Once
	done     chan struct{} // closed once the handler has returned
}

var _ http.Flusher = (*streamWriter)(nil)

func (w *streamWriter) Header() http.Header { return w.header }

func (w *streamWriter) WriteHeader(status int) {
	if w.status != 0 || status < 100 || status > 999 {
		return
	}
	w.status = status
	w.sent = w.header.Clone()
}

func (w *streamWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	w.pending = append(w.pending, p...)
	if len(w.pending) < streamChunkBytes {
		return len(p), nil
	}
	if err := w.FlushError(); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush sends the headers, if not yet, and what was written since the last flush.
func (w *streamWriter) Flush() { w.FlushError() }

// FlushError is Flush, telling when the caller cannot be written to (http.ResponseController uses it).
func (w *streamWriter) FlushError() error {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.streaming {
		w.streaming = true
		close(w.commit)
	}
	return w.handOver()
}

// handOver gives what is pending to the stream writer, waiting for it to take it: one chunk at a time, never
// more, however fast the handler writes.
func (w *streamWriter) handOver() error {
	if len(w.pending) == 0 {
		return nil
	}
	chunk := w.pending
	w.pending = nil
	select {
	case <-w.gone:
		return errStreamClosed
	default:
	}
	stall := time.NewTimer(streamStallTimeout)
	defer stall.Stop()
	select {
	case w.chunks <- chunk:
		return nil
	case <-w.gone:
	case <-w.callerDone:
		w.fail()
	case <-stall.C:
		w.fail()
		w.abandon()
	}
	return errStreamClosed
}

func (w *streamWriter) fail() { w.goneOnce.Do(func() { close(w.gone) }) }
