//go:build !linux

package routes

import (
	"errors"
	"net"
)

// connWatcher would notice callers that go away; only Linux has one (epoll). Elsewhere a non-streamed request
// runs to its end after its caller has gone, bounded by the engine's request deadline.
type connWatcher struct{}

func newConnWatcher(func(id uint64)) (*connWatcher, error) {
	return nil, errors.New("watching connections is supported on Linux only")
}

type watchedConn struct{}

func (*connWatcher) watch(net.Conn, uint64) *watchedConn { return nil }
func (*connWatcher) unwatch(*watchedConn, uint64)        {}
func (*connWatcher) forget(net.Conn)                     {}
func (*connWatcher) close()                              {}
