// Package sse owns what every reader of a server-sent event stream in the gateway shares with the relay that
// writes it to the caller: whether a whole further line is already buffered. The relay flushes to the caller
// when nothing further is waiting; a translating reader must therefore hand over, in one Read, everything it
// can make from what is already buffered, or the relay would write once per event of a burst.
package sse

import (
	"bufio"
	"bytes"
)

// LineBuffered reports whether br holds a whole line, so that reading it will not wait.
func LineBuffered(br *bufio.Reader) bool {
	n := br.Buffered()
	if n == 0 {
		return false
	}
	buffered, _ := br.Peek(n)
	return bytes.IndexByte(buffered, '\n') >= 0
}
