//go:build linux

package routes

import (
	"net"
	"sync"
	"syscall"
)

// connWatcher notices callers that close their connection (or reset it) while their request is being served:
// one epoll instance for every watched connection, read by one goroutine. A connection is watched for
// EPOLLRDHUP (the peer's FIN), EPOLLHUP and EPOLLERR only, never for readable data, so it reads nothing: a
// pipelined next request stays in the socket for fasthttp. Go's own poller keeps its registration of the same
// descriptor; an epoll set holds its own. Watching costs an epoll_ctl to add and one to delete.
//
// It is safe for concurrent use.
type connWatcher struct {
	mu     sync.RWMutex // read-held while the descriptors are in use, write-held to close them
	closed bool
	epfd   int
	wake   [2]int // a pipe: a byte written to wake[1] stops the loop
	gone   func(id uint64)
	done   chan struct{}
}

// wakeID is the token of the wake pipe; requests are numbered from 1.
const wakeID = 0

// newConnWatcher starts a watcher that calls gone with the id a connection was watched under when its peer
// goes away. gone runs on the watcher's goroutine and must not block.
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

// watch starts watching conn under id and returns the descriptor to pass to unwatch, or -1 when conn cannot
// be watched (it has no descriptor, or the watcher is closed).
func (w *connWatcher) watch(conn net.Conn, id uint64) int {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return -1
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return -1
	}
	op := addOps.Get().(*addOp)
	// One shot: a peer that has gone stays gone, and a level-triggered report would repeat until unwatch.
	op.epfd, op.fd = w.epfd, -1
	op.ev = syscall.EpollEvent{Events: syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(uint32(id)), Pad: int32(uint32(id >> 32))}
	raw.Control(op.fn)
	fd := op.fd
	addOps.Put(op)
	return fd
}

// addOp is an epoll_ctl ADD for RawConn.Control, pooled with its bound method: a closure per request would
// cost two allocations (itself and the event it points to).
type addOp struct {
	epfd, fd int
	ev       syscall.EpollEvent
	fn       func(uintptr)
}

var addOps = sync.Pool{New: func() any {
	op := &addOp{}
	op.fn = op.add
	return op
}}

func (op *addOp) add(s uintptr) {
	if syscall.EpollCtl(op.epfd, syscall.EPOLL_CTL_ADD, int(s), &op.ev) == nil {
		op.fd = int(s)
	}
}

// unwatch stops watching fd. The connection must still be open: the caller's handler is still running.
func (w *connWatcher) unwatch(fd int) {
	w.mu.RLock()
	if !w.closed {
		syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_DEL, fd, nil)
	}
	w.mu.RUnlock()
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
			w.gone(id)
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
