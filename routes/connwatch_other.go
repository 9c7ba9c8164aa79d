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

func (*connWatcher) watch(net.Conn, uint64) int { return -1 }
func (*connWatcher) unwatch(int)                {}
func (*connWatcher) close()                     {}
