//go:build unix

package httpclient

import (
	"net"
	"syscall"
)

// peeker peeks at a connection's socket without blocking. It is set up once per connection, so that the peek
// before every reuse allocates nothing.
type peeker struct {
	rc    syscall.RawConn // nil: not a socket, never peeked at
	open  bool
	probe [1]byte
	check func(fd uintptr) bool // p.recv, bound once
}

func (p *peeker) init(c net.Conn) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	if rc, err := sc.SyscallConn(); err == nil {
		p.rc = rc
		p.check = p.recv
	}
}

func (p *peeker) recv(fd uintptr) bool {
	_, _, err := syscall.Recvfrom(int(fd), p.probe[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	p.open = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
	return true // never wait: the answer is known either way
}

// stillOpen is true when nothing is waiting on the socket (the server keeps it open), false when the server
// closed it, reset it or sent bytes no request asked for.
func (p *peeker) stillOpen() bool {
	if p.rc == nil {
		return true
	}
	p.open = false
	return p.rc.Read(p.check) == nil && p.open
}

// stillOpen peeks at c once (see peeker.stillOpen).
func stillOpen(c net.Conn) bool {
	var p peeker
	p.init(c)
	return p.stillOpen()
}
