//go:build unix

package httpclient

import (
	"net"
	"syscall"
)

// stillOpen peeks at an idle connection's socket without blocking: true when nothing is waiting (the server
// keeps it open), false when the server closed it, reset it or sent bytes no request asked for.
func stillOpen(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var probe [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), probe[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK
		return true // never wait: the answer is known either way
	})
	return err == nil && open
}
