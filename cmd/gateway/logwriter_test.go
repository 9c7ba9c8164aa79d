package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// countingBuffer is a bytes.Buffer safe for the flusher's goroutine and the test's.
type countingBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	n  int // writes
}

func (s *countingBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return s.b.Write(p)
}

func (s *countingBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLogWriterBatchesAndFlushes(t *testing.T) {
	var out countingBuffer
	w := newLogWriter(&out)
	for i := 0; i < 100; i++ {
		w.Write([]byte("line\n"))
	}
	// The flusher writes them within its period; a bounded wait, not a timing assertion.
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(out.String(), "line\n") < 100 {
		if time.Now().After(deadline) {
			t.Fatalf("lines not flushed: %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	out.mu.Lock()
	writes := out.n
	out.mu.Unlock()
	if writes >= 100 {
		t.Errorf("%d writes for 100 lines: not batched", writes)
	}
	// A line larger than what is left of the buffer is never split.
	big := strings.Repeat("x", logBufferSize-10) + "\n"
	w.Write([]byte("short\n"))
	w.Write([]byte(big))
	w.Close()
	if !strings.HasSuffix(out.String(), "short\n"+big) {
		t.Error("the lines written before Close were not all written by it")
	}
	// After Close a line goes out at once.
	w.Write([]byte("after\n"))
	if !strings.HasSuffix(out.String(), "after\n") {
		t.Error("a line written after Close was held")
	}
	w.Close() // twice is harmless
}
