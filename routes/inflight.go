package routes

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"
)

// errShuttingDown is the cause of the contexts of requests still running when Shutdown's grace period ends.
var errShuttingDown = errors.New("the gateway is shutting down")

// drainAfterCancel bounds how long Shutdown waits, after the grace period, for cancelled requests to write
// their answers. A cancelled request returns as soon as its upstream call notices, in milliseconds; this is for
// one that does not.
const drainAfterCancel = 5 * time.Second

// inflight tracks the inference requests being served. fasthttp's context never ends, so each request gets
// one of its own that ends when its caller goes away while the engine waits upstream (a connWatcher sees
// the connection close), when Shutdown's grace period runs out, or once its answer has been sent. It is safe
// for concurrent use; the zero value is not usable, call init first.
type inflight struct {
	log *slog.Logger

	mu       sync.Mutex
	live     map[uint64]context.CancelCauseFunc
	next     uint64
	stopping error        // set by cancelAll: requests that begin afterwards start cancelled
	watcher  *connWatcher // made for the first connection to watch; nil before, and after stopWatching
	noWatch  bool         // no watcher can be made (or stopWatching ran): connections go unwatched
}

// tracked is one request's entry: its context and, while the handler runs, the watched connection.
type tracked struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	id     uint64
	wc     *watchedConn // the watched connection; nil when none
	w      *connWatcher
}

func (f *inflight) init(log *slog.Logger) {
	f.log = log
	f.live = make(map[uint64]context.CancelCauseFunc)
}

// begin tracks a request whose caller is on conn (nil, or a connection without a descriptor, goes unwatched).
// The caller must call end exactly once, and unwatch before its handler returns: the connection's next request
// is another's.
func (f *inflight) begin(parent context.Context, conn net.Conn) tracked {
	ctx, cancel := context.WithCancelCause(parent)
	f.mu.Lock()
	if f.stopping != nil {
		cancel(f.stopping)
	}
	f.next++
	t := tracked{ctx: ctx, cancel: cancel, id: f.next}
	f.live[t.id] = cancel
	_, watchable := conn.(syscall.Conn) // in-memory connections (app.Test) have nothing to watch
	if watchable && !f.noWatch && f.watcher == nil {
		w, err := newConnWatcher(f.gone)
		if err != nil {
			f.noWatch = true
			f.log.Warn("callers that go away cannot be noticed before their answer is written", "err", err)
		}
		f.watcher = w
	}
	w := f.watcher
	f.mu.Unlock()
	if watchable && w != nil {
		t.wc, t.w = w.watch(conn, t.id), w
	}
	return t
}

// unwatch stops watching the request's connection.
func (f *inflight) unwatch(t *tracked) {
	if t.wc != nil {
		t.w.unwatch(t.wc, t.id)
		t.wc = nil
	}
}

// end forgets the request and ends its context.
func (f *inflight) end(t tracked) {
	f.mu.Lock()
	delete(f.live, t.id)
	f.mu.Unlock()
	t.cancel(nil)
}

// gone cancels the request whose caller went away; a request that has ended already is ignored.
func (f *inflight) gone(id uint64) {
	f.mu.Lock()
	cancel := f.live[id]
	f.mu.Unlock()
	if cancel != nil {
		cancel(errCallerGone)
	}
}

// cancelAll cancels every request being served, and those that begin later, with cause. It returns how many
// were being served.
func (f *inflight) cancelAll(cause error) int {
	f.mu.Lock()
	f.stopping = cause
	cancels := make([]context.CancelCauseFunc, 0, len(f.live))
	for _, c := range f.live {
		cancels = append(cancels, c)
	}
	f.mu.Unlock()
	for _, c := range cancels {
		c(cause)
	}
	return len(cancels)
}

// closed forgets a connection the server has closed (fasthttp's ConnState).
func (f *inflight) closed(conn net.Conn) {
	f.mu.Lock()
	w := f.watcher
	f.mu.Unlock()
	if w != nil {
		w.forget(conn)
	}
}

// stopWatching ends the watcher; connections are no longer watched.
func (f *inflight) stopWatching() {
	f.mu.Lock()
	w := f.watcher
	f.watcher, f.noWatch = nil, true
	f.mu.Unlock()
	if w != nil {
		w.close()
	}
}
