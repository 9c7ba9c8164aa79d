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

// Bounds of the recorders that assemble a stream's whole answer as it passes through (the cache's, Anthropic's):
// a stream with a longer line or event, or a longer answer, still passes through; it is just not recorded.
const (
	// MaxEvent bounds one line, and one event's data, that a Splitter follows.
	MaxEvent = 8 << 20
	// MaxAnswer bounds the answer a recorder assembles (and the cache stores).
	MaxAnswer = 64 << 20
)

// Handler takes the events a Splitter cuts: data is the event's data lines joined by '\n' (valid until the
// call returns), errorEvent reports an "event: error" field. It returns false to stop following the stream.
type Handler interface {
	Event(data []byte, errorEvent bool) bool
}

// Splitter cuts a stream fed to it in pieces of any size into events, as the server-sent events format reads
// it: lines end with "\r\n", "\n" or "\r"; a blank line ends an event; "data" lines gather, "event: error"
// marks the event, comments and other fields are skipped. It is what the recorders of streams (the cache's,
// Anthropic's) share, which read a stream as it passes through them rather than pulling from a buffer.
// The zero value is ready; Max 0 means MaxEvent.
type Splitter struct {
	Max     int
	line    []byte // the current line, not yet ended
	afterCR bool   // the last line ended with '\r': a '\n' right after it ends nothing more
	data    []byte // the data lines of the current event, joined with '\n'
	hasData bool
	errEvt  bool // the current event has "event: error"
}

// Feed splits p. It returns false, and must not be fed again, once a line or an event's data passed Max or h
// asked to stop.
func (s *Splitter) Feed(p []byte, h Handler) bool {
	for len(p) > 0 {
		if s.afterCR {
			s.afterCR = false
			if p[0] == '\n' {
				p = p[1:]
				continue
			}
		}
		i := bytes.IndexAny(p, "\r\n")
		if i < 0 {
			return s.appendLine(p)
		}
		if !s.appendLine(p[:i]) {
			return false
		}
		s.afterCR = p[i] == '\r'
		if !s.endLine(h) {
			return false
		}
		p = p[i+1:]
	}
	return true
}

// End takes a last line without its line ending, and a last event without its blank line, as they are (some
// servers end with "data: [DONE]" and nothing after it).
func (s *Splitter) End(h Handler) bool {
	if len(s.line) > 0 && !s.endLine(h) {
		return false
	}
	return !s.hasData || s.dispatch(h)
}

// Reset drops what the splitter holds.
func (s *Splitter) Reset() { *s = Splitter{Max: s.Max} }

func (s *Splitter) max() int {
	if s.Max > 0 {
		return s.Max
	}
	return MaxEvent
}

func (s *Splitter) appendLine(b []byte) bool {
	if len(s.line)+len(b) > s.max() {
		return false
	}
	s.line = append(s.line, b...)
	return true
}

// endLine handles one complete line.
func (s *Splitter) endLine(h Handler) bool {
	line := s.line
	s.line = s.line[:0]
	if len(line) == 0 {
		ok := !s.hasData || s.dispatch(h)
		s.errEvt = false
		return ok
	}
	if line[0] == ':' {
		return true // a comment (keep-alive)
	}
	field, value, _ := bytes.Cut(line, []byte{':'})
	value = bytes.TrimPrefix(value, []byte{' '})
	switch string(field) {
	case "data":
		if len(s.data)+1+len(value) > s.max() {
			return false
		}
		if s.hasData {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		s.hasData = true
	case "event":
		s.errEvt = string(value) == "error"
	}
	return true
}

func (s *Splitter) dispatch(h Handler) bool {
	data := s.data
	s.data, s.hasData = s.data[:0], false
	return h.Event(data, s.errEvt)
}
