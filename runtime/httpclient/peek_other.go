//go:build !unix

package httpclient

import "net"

// peeker cannot peek here: a dead connection is found when it is used, and the call retried once.
type peeker struct{}

func (*peeker) init(net.Conn)   {}
func (*peeker) stillOpen() bool { return true }

func stillOpen(net.Conn) bool { return true }
