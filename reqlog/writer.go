package reqlog

import (
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgw/gateway/storage"
)

// Entry is one request's log entry; its fields and JSON view are storage.LogEntry's, which owns the encoding.
// The caller fills it and hands it to Record, which copies it: the caller's entry is its own again (it can live
// on the caller's stack), and is not changed. ID is assigned when the copy is written; CreatedAt, when zero, is
// the time of Record.
type Entry = storage.LogEntry

// Defaults of Options.
const (
	DefaultRetention    = 7 * 24 * time.Hour
	DefaultMaxBodyBytes = 1 << 20
	DefaultQueueSize    = 8192
	DefaultBatchSize    = 256
	DefaultFlushWindow  = 100 * time.Millisecond
	DefaultSweepEvery   = 10 * time.Minute
)

// Options configure a Writer. The zero value is usable.
type Options struct {
	// Retention is how long entries are kept. Default DefaultRetention (7 days).
	Retention time.Duration
	// Bodies keeps the request and response bodies (--log-bodies). Off by default: Record drops them.
	Bodies bool
	// MaxBodyBytes bounds each stored body; a longer one is stored cut, as a JSON string, and marked
	// request_truncated or response_truncated. Default DefaultMaxBodyBytes (1 MiB).
	MaxBodyBytes int
	// QueueSize is how many entries may wait to be written; Record drops entries past it. Default
	// DefaultQueueSize.
	QueueSize int
	// BatchSize is the most entries written in one pebble batch. Default DefaultBatchSize.
	BatchSize int
	// FlushWindow is how long the writer waits, after an entry arrives, for more to join its batch. Default
	// DefaultFlushWindow.
	FlushWindow time.Duration
	// SweepEvery is the interval of the retention sweeps after the one at start. Default DefaultSweepEvery.
	SweepEvery time.Duration
	// Now is the clock of CreatedAt and of the sweeps. Default time.Now.
	Now func() time.Time
	// Logger receives write and sweep failures. Default slog.Default().
	Logger *slog.Logger
	// OnDrop is told of entries dropped: a full queue, a Record after Close, or a failed write. Default: none.
	// It is called on the request path and must be cheap.
	OnDrop func(n int)
}

// Writer writes request log entries in the background. Build it with New and Close it once nothing records
// any more. It is safe for concurrent use.
type Writer struct {
	store *storage.LogStore
	opts  Options

	// The queue is a slice under a mutex rather than a channel, so that handing an entry over wakes nothing: the
	// writer takes the queue when its window ticks, or at once when kicked because a batch is full. A channel
	// send woke the writer for every request, a goroutine wake-up on the request path. It holds the entries
	// themselves, not pointers: its array is reused batch after batch, so that recording allocates nothing.
	mu      sync.Mutex
	pending []Entry
	kick    chan struct{} // a full batch is waiting

	batch []*Entry // the writer goroutine's: the batch handed to storage, reused

	closed    atomic.Bool
	quit      chan struct{} // closed by Close: drain the queue and stop
	done      sync.WaitGroup
	closeOnce sync.Once

	onBatch func(n int) // tests: told of each batch written
}

// New starts a writer over store: its batch writer and its sweeper, which sweeps once at once.
func New(store *storage.LogStore, opts Options) *Writer {
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.FlushWindow <= 0 {
		opts.FlushWindow = DefaultFlushWindow
	}
	if opts.SweepEvery <= 0 {
		opts.SweepEvery = DefaultSweepEvery
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.OnDrop == nil {
		opts.OnDrop = func(int) {}
	}
	w := &Writer{store: store, opts: opts, kick: make(chan struct{}, 1), quit: make(chan struct{}),
		pending: make([]Entry, 0, opts.BatchSize)}
	w.done.Add(2)
	go w.writeLoop()
	go w.sweepLoop()
	return w
}

// KeepsBodies reports whether Record keeps the bodies (Options.Bodies): a caller that must encode a body
// (an MCP tool call's result, up to 16 MiB) skips it when it would be dropped.
func (w *Writer) KeepsBodies() bool { return w.opts.Bodies }

// Record queues a copy of e to be written; e itself is neither kept nor changed. It never blocks and never
// fails: when the queue is full (or the writer is closed) the entry is dropped and counted through OnDrop.
// Without Options.Bodies, the entry's Request and Response are dropped here.
func (w *Writer) Record(e *Entry) {
	createdAt := e.CreatedAt
	if createdAt.IsZero() {
		createdAt = w.opts.Now()
	}
	if w.closed.Load() {
		w.opts.OnDrop(1)
		return
	}
	w.mu.Lock()
	if len(w.pending) >= w.opts.QueueSize {
		w.mu.Unlock()
		w.opts.OnDrop(1)
		return
	}
	w.pending = append(w.pending, *e)
	q := &w.pending[len(w.pending)-1]
	q.CreatedAt = createdAt
	if !w.opts.Bodies {
		q.Request, q.Response = nil, nil
	}
	full := len(w.pending) == w.opts.BatchSize
	w.mu.Unlock()
	if full {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

// take hands the writer what is queued, and the queue a spare slice.
func (w *Writer) take(spare []Entry) []Entry {
	w.mu.Lock()
	defer w.mu.Unlock()
	got := w.pending
	w.pending = spare[:0]
	return got
}

// Close writes the entries still queued and stops the writer and the sweeper. Entries recorded after it are
// dropped. It is idempotent.
func (w *Writer) Close() error {
	w.closeOnce.Do(func() {
		w.closed.Store(true)
		close(w.quit)
	})
	w.done.Wait()
	return nil
}

// Sweep deletes the entries older than the retention period, by the writer's clock.
func (w *Writer) Sweep() error {
	return w.store.DeleteBefore(w.opts.Now().Add(-w.opts.Retention))
}

func (w *Writer) writeLoop() {
	defer w.done.Done()
	tick := time.NewTicker(w.opts.FlushWindow)
	defer tick.Stop()
	spare := make([]Entry, 0, w.opts.BatchSize)
	for {
		select {
		case <-tick.C:
		case <-w.kick:
		case <-w.quit:
			w.writeAll(w.take(nil))
			return
		}
		got := w.take(spare)
		w.writeAll(got)
		clear(got) // the bodies and metadata are garbage once written
		spare = got
		if cap(spare) > 4*w.opts.BatchSize { // a burst's queue is not kept for the quiet after it
			spare = make([]Entry, 0, w.opts.BatchSize)
		}
	}
}

// writeAll writes entries in batches of at most BatchSize.
func (w *Writer) writeAll(entries []Entry) {
	for len(entries) > 0 {
		n := min(len(entries), w.opts.BatchSize)
		w.write(entries[:n:n])
		entries = entries[n:]
	}
}

func (w *Writer) write(entries []Entry) {
	if len(entries) == 0 {
		return
	}
	batch := w.batch[:0]
	for i := range entries {
		e := &entries[i]
		if !storage.ValidID(e.WorkspaceID) { // one bad entry must not cost the batch
			w.opts.Logger.Warn("request log entry without a workspace dropped", "trace_id", e.TraceID)
			w.opts.OnDrop(1)
			continue
		}
		e.Request, e.RequestTruncated = w.storedBody(e.Request)
		e.Response, e.ResponseTruncated = w.storedBody(e.Response)
		batch = append(batch, e)
	}
	w.batch = batch
	defer clear(batch) // the entries' array is reused: the batch must not keep them
	if len(batch) == 0 {
		return
	}
	if err := w.store.Append(batch); err != nil {
		w.opts.Logger.Warn("request log entries lost: write failed", "entries", len(batch), "err", err)
		w.opts.OnDrop(len(batch))
	} else if w.onBatch != nil {
		w.onBatch(len(batch))
	}
}

// storedBody is body as it is stored: as it came when it is JSON within the limit, else a JSON string of (at
// most MaxBodyBytes of) its bytes, truncated when it was cut.
func (w *Writer) storedBody(body json.RawMessage) (json.RawMessage, bool) {
	if body == nil {
		return nil, false
	}
	cut := len(body) > w.opts.MaxBodyBytes
	if cut {
		body = body[:w.opts.MaxBodyBytes]
	} else if json.Valid(body) {
		return body, false
	}
	s, _ := json.Marshal(string(body)) // invalid UTF-8 (a cut rune) becomes U+FFFD
	return s, cut
}

func (w *Writer) sweepLoop() {
	defer w.done.Done()
	t := time.NewTicker(w.opts.SweepEvery)
	defer t.Stop()
	for {
		if err := w.Sweep(); err != nil {
			w.opts.Logger.Warn("request log sweep failed", "err", err)
		}
		select {
		case <-t.C:
		case <-w.quit:
			return
		}
	}
}
