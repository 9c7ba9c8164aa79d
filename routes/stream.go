package routes

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/internal/sse"
	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
)

// lineReader is a stream read line by line. The engine's usage watch, which sits on every successful stream,
// reads the stream's lines anyway: the relay reads them from it, so that a stream is buffered once.
type lineReader interface {
	// ReadLine returns the next line with its line end (or a part of an overlong line), valid until the next call.
	ReadLine() ([]byte, error)
	// LineBuffered reports whether a whole further line is buffered, so that the next ReadLine will not wait.
	LineBuffered() bool
}

// sseReaders buffer the streams that come without a line reader of their own (answers replayed from the cache).
var sseReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}

// bufferedLines reads lines of any stream through a bufio.Reader; a line longer than its buffer comes in parts.
type bufferedLines struct{ br *bufio.Reader }

func (b bufferedLines) ReadLine() ([]byte, error) {
	line, err := b.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		err = nil
	}
	return line, err
}

func (b bufferedLines) LineBuffered() bool { return sse.LineBuffered(b.br) }

// errCallerGone reports that the caller closed the connection mid-stream.
var errCallerGone = errors.New("caller went away")

// sseRelay is a streamed answer's body, read by fasthttp as it writes the answer: each Read hands over the
// lines that are ready and fasthttp sends them as one chunk and flushes. A Read takes a further line only
// when it is already buffered, so that no event waits in a buffer while the provider is slow, and events that
// arrived together leave in one write. The relay has no goroutine and no buffer of its own: it copies lines
// from the usage watch's buffer into fasthttp's. When the upstream breaks mid-way the caller gets a final
// error event and no [DONE]. fasthttp closes the relay once the answer is written or the caller went away
// (its write failed): Close ends the stream (closes the upstream, which settles its usage), reports the
// request (observe) and ends its context.
type sseRelay struct {
	srv     *Server
	req     *runtime.Request
	resp    *runtime.Response
	ctx     context.Context
	cancel  context.CancelFunc
	arrived time.Time // when the request arrived

	lines   lineReader
	pooled  *bufio.Reader // bufferedLines' reader, from sseReaders
	pending []byte        // the part of the current line not yet handed over
	tail    []byte        // the error event that ends a broken stream, once pending is out
	ended   bool          // the upstream ended: nothing more is read from it
	err     error         // why the upstream broke off
	started time.Time     // the first Read
	first   time.Time     // when the first line was read (zero when none was)
	closed  bool
	// messages: the stream is Anthropic's Messages events, whose error event is Anthropic's.
	messages bool
}

func (s *Server) newRelay(req *runtime.Request, resp *runtime.Response, cancel context.CancelFunc, arrived time.Time, ctx context.Context) *sseRelay {
	r := &sseRelay{srv: s, req: req, resp: resp, ctx: ctx, cancel: cancel, arrived: arrived, messages: req.Endpoint == providers.Messages}
	streamOpened()
	var upstream io.Reader = resp.Stream
	if t, ok := upstream.(*tracedStream); ok {
		upstream = t.ReadCloser // the span only watches Close
	}
	if lines, ok := upstream.(lineReader); ok {
		r.lines = lines
	} else {
		r.pooled = sseReaders.Get().(*bufio.Reader)
		r.pooled.Reset(upstream)
		r.lines = bufferedLines{r.pooled}
	}
	return r
}

func (r *sseRelay) Read(p []byte) (int, error) {
	if r.started.IsZero() {
		r.started = time.Now()
	}
	n := 0
	for n < len(p) {
		if len(r.pending) == 0 {
			if len(r.tail) > 0 {
				r.pending, r.tail = r.tail, nil
				continue
			}
			if r.ended || n > 0 && !r.lines.LineBuffered() {
				break // what is here goes out now: the next line may be a while
			}
			line, err := r.lines.ReadLine()
			if len(line) > 0 && r.first.IsZero() {
				r.first = time.Now()
			}
			r.pending = line
			if err != nil {
				r.ended = true
				if !errors.Is(err, io.EOF) {
					r.err = err
					if !r.messages || !runtime.MessagesErrorEventSent(err) {
						r.tail = brokenStreamEvent(r.messages, err)
					}
				}
			}
			continue
		}
		c := copy(p[n:], r.pending)
		r.pending = r.pending[c:]
		n += c
	}
	if n == 0 && r.ended {
		return 0, io.EOF
	}
	return n, nil
}

// brokenStreamEvent is the event that ends a stream whose provider broke off: Anthropic's error event on a
// Messages stream, OpenAI's error chunk on the others.
func brokenStreamEvent(messages bool, err error) []byte {
	broke := &gwerr.Error{Status: fiber.StatusBadGateway, Code: gwerr.CodeUpstream, Message: "the provider's stream broke off: " + err.Error()}
	if messages {
		return append(append([]byte("\n\nevent: error\ndata: "), runtime.MessagesErrorBody(broke.Status, broke.Message)...), "\n\n"...)
	}
	event, _ := json.Marshal(broke.Body())
	return append(append([]byte("\n\ndata: "), event...), "\n\n"...)
}

func (r *sseRelay) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	defer streamClosed()
	defer r.cancel()
	err := r.err
	if err == nil && (!r.ended || len(r.pending) > 0 || len(r.tail) > 0) {
		err = errCallerGone // closed before the whole stream was handed over
	}
	if err != nil {
		r.srv.log.Warn("stream ended early", "trace_id", r.req.TraceID, "err", err)
	}
	r.pending, r.tail = nil, nil
	r.resp.Stream.Close() // before observe: closing the stream settles its usage (resp.Usage)
	if r.pooled != nil {
		r.pooled.Reset(nil)
		sseReaders.Put(r.pooled)
		r.pooled = nil
	}
	var times streamTimes
	if !r.started.IsZero() {
		times.relayed = time.Since(r.started)
	}
	if !r.first.IsZero() {
		times.firstEvent = r.first.Sub(r.arrived)
	}
	r.srv.observe(r.ctx, r.arrived, r.req, r.resp, r.resp.Status, false, times)
	return nil
}

// The memory a burst of streams held (buffers that sync.Pools keep for two collections, the stacks of
// fasthttp's idle workers, which exit after 10 s) goes back to the OS only after garbage collections, and an
// idle process collects only every two minutes. So when the open streams fall to an eighth of a burst of at
// least reclaimAfterBurst, a few collections run over the next half minute, and the runtime's scavenger
// returns what they free at its own pace.
var (
	streamsOpen, streamsPeak atomic.Int64
	reclaiming               atomic.Bool
)

const reclaimAfterBurst = 256

// reclaimCollections are the waits before each collection once a burst has ended: the second frees what the
// pools kept through the first, the third the stacks of the workers that exited in between.
var reclaimCollections = [...]time.Duration{2 * time.Second, 12 * time.Second, 15 * time.Second}

func streamOpened() {
	n := streamsOpen.Add(1)
	for p := streamsPeak.Load(); n > p && !streamsPeak.CompareAndSwap(p, n); p = streamsPeak.Load() {
	}
}

func streamClosed() {
	n := streamsOpen.Add(-1)
	if p := streamsPeak.Load(); p >= reclaimAfterBurst && n <= p/8 && reclaiming.CompareAndSwap(false, true) {
		streamsPeak.Store(n)
		go func() {
			defer reclaiming.Store(false)
			for _, wait := range reclaimCollections {
				time.Sleep(wait)
				goruntime.GC()
			}
		}()
	}
}
