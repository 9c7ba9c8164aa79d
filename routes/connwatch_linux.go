//go:build linux

package routes

import (
	"net"
	"sync"
	"sync/atomic"
	"syscall"
)

// connWatcher notices callers that close their connection (or reset it) while their request is being served:
// one epoll instance for every watched connection, read by one goroutine. A connection is registered once, on
// its first watched request, for EPOLLRDHUP (the peer's FIN), EPOLLHUP and EPOLLERR only, edge-triggered, never
// for readable data, so it reads nothing: a pipelined next request stays in the socket for fasthttp. Go's own
// poller keeps its registration of the same descriptor; an epoll set holds its own, and the kernel drops it when
// the connection's descriptor is closed. A request then only marks itself as the connection's current one
// (an atomic store): no system call per request, which two epoll_ctl calls per request used to cost.
//
// It is safe for concurrent use.
type connWatcher struct {
	mu     sync.RWMutex // read-held while the descriptors are in use, write-held to close them
	closed bool
	epfd   int
	wake   [2]int // a pipe: a byte written to wake[1] stops the loop
	gone   func(id uint64)
	done   chan struct{}

	conns  sync.Map // net.Conn → *watchedConn, until the server reports the connection closed (forget)
	byID   sync.Map // the registration's id → *watchedConn, for the loop
	nextID atomic.Uint64
}

// watchedConn is one registered connection.
type watchedConn struct {
	id      uint64
	current atomic.Uint64 // the id of the request being served on it; 0 between requests
	gone    atomic.Bool   // its peer has gone
}

// wakeID is the token of the wake pipe; connections are numbered from 1.
const wakeID = 0

// newConnWatcher starts a watcher that calls gone with the id a request was watched under when its caller goes
// away. gone runs on the watcher's goroutine (or on the request's, when the caller had gone already) and must
// not block.
func newConnWatcher(gone func(id uint64)) (*connWatcher, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	w := &connWatcher{epfd: epfd, gone: gone, done: make(chan struct{})}
	if err := syscall.Pipe2(w.wake[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		syscall.Close(epfd)
		return nil, err
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, w.wake[0], &ev); err != nil {
		w.closeFDs()
		return nil, err
	}
	go w.loop()
	return w, nil
}

// watch marks request id as the one being served on conn, registering conn on its first request, and returns
// its registration, or nil when conn cannot be watched (it has no descriptor, or the watcher is closed). A
// caller that has gone already is reported at once.
func (w *connWatcher) watch(conn net.Conn, id uint64) *watchedConn {
	var wc *watchedConn
	if v, ok := w.conns.Load(conn); ok {
		wc = v.(*watchedConn)
	} else if wc = w.register(conn); wc == nil {
		return nil
	}
	wc.current.Store(id)
	if wc.gone.Load() {
		w.gone(id)
	}
	return wc
}

// register adds conn to the epoll set; nil when it cannot be watched.
func (w *connWatcher) register(conn net.Conn) *watchedConn {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return nil
	}
	wc := &watchedConn{id: w.nextID.Add(1)}
	op := addOps.Get().(*addOp)
	// Edge-triggered: a peer that has gone stays gone, and a level-triggered report would repeat.
	op.epfd, op.ok = w.epfd, false
	op.ev = syscall.EpollEvent{Events: syscall.EPOLLRDHUP | uint32(1)<<31 /* EPOLLET, which package syscall declares negative */, Fd: int32(uint32(wc.id)), Pad: int32(uint32(wc.id >> 32))}
	raw.Control(op.fn)
	ok = op.ok
	addOps.Put(op)
	if !ok {
		return nil
	}
	w.byID.Store(wc.id, wc)
	w.conns.Store(conn, wc)
	return wc
}

// addOp is an epoll_ctl ADD for RawConn.Control, pooled with its bound method: a closure would cost two
// allocations (itself and the event it points to).
type addOp struct {
	epfd int
	ok   bool
	ev   syscall.EpollEvent
	fn   func(uintptr)
}

var addOps = sync.Pool{New: func() any {
	op := &addOp{}
	op.fn = op.add
	return op
}}

func (op *addOp) add(s uintptr) {
	op.ok = syscall.EpollCtl(op.epfd, syscall.EPOLL_CTL_ADD, int(s), &op.ev) == nil
}

// unwatch ends request id's turn on its connection.
func (w *connWatcher) unwatch(wc *watchedConn, id uint64) {
	wc.current.CompareAndSwap(id, 0)
}

// forget drops a connection the server has closed (its descriptor's close took it out of the epoll set).
func (w *connWatcher) forget(conn net.Conn) {
	if v, ok := w.conns.LoadAndDelete(conn); ok {
		w.byID.Delete(v.(*watchedConn).id)
	}
}

func (w *connWatcher) loop() {
	defer close(w.done)
	events := make([]syscall.EpollEvent, 64)
	for {
		n, err := syscall.EpollWait(w.epfd, events, -1)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return
		}
		for _, ev := range events[:n] {
			id := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			if id == wakeID {
				return
			}
			v, ok := w.byID.Load(id)
			if !ok { // closed and forgotten meanwhile
				continue
			}
			wc := v.(*watchedConn)
			wc.gone.Store(true)
			if req := wc.current.Load(); req != 0 {
				w.gone(req)
			}
		}
	}
}

// close stops the watcher and waits for its goroutine to end.
func (w *connWatcher) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.mu.Unlock()
	syscall.Write(w.wake[1], []byte{1})
	<-w.done
	w.closeFDs()
}

func (w *connWatcher) closeFDs() {
	syscall.Close(w.wake[0])
	syscall.Close(w.wake[1])
	syscall.Close(w.epfd)
}
