package redisstate_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/gateway/internal/testservices"
	"github.com/llmgw/gateway/runtime/redisstate"
)

// answered is an error Redis answered (go-redis's redis.Error).
type answered string

func (e answered) Error() string { return string(e) }
func (answered) RedisError()     {}

// lockedBuffer is a log sink the probe's goroutine and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRedisBackAfterFailingAsItCameBack: a call that fails at the moment the probe marks Redis up again (Redis
// flapping) starts the next probe, so the replica goes back to Redis once it answers. The probe used to hold its
// "running" flag until after it had marked Redis up, so that such a failure found a probe still running, started
// none, and Redis stayed marked down for good.
func TestRedisBackAfterFailingAsItCameBack(t *testing.T) {
	var armed, failedOnce atomic.Bool
	var c *redisstate.Client
	var err error
	c, err = redisstate.Open(testservices.RedisURL(t), redisstate.Options{Prefix: testservices.RedisPrefix(t),
		Logger: quiet(), Timeout: 2 * time.Second, ProbeEvery: 10 * time.Millisecond,
		OnState: func(up bool) {
			if up && armed.Load() && failedOnce.CompareAndSwap(false, true) {
				c.Failed("test", errors.New("connection reset by peer")) // on the probe's goroutine, as it marks up
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	armed.Store(true)
	c.Failed("test", errors.New("connection reset by peer"))
	if c.Available() {
		t.Fatal("a failed call left Redis marked available")
	}
	waitUntil(t, "the probe to mark Redis up after the failure it met coming back", func() bool {
		return failedOnce.Load() && c.Available()
	})
}

// TestRedisAnsweredErrorsLogBounded: an error Redis answers on every call (out of memory, a key of another
// type) is one log line per interval, with the count of the calls it stands for, and does not mark Redis down;
// a refused password does mark it down, once, so that the probe and not every request finds out when it is
// fixed.
func TestRedisAnsweredErrorsLogBounded(t *testing.T) {
	var log lockedBuffer
	var errs atomic.Int64
	c, err := redisstate.Open(testservices.RedisURL(t), redisstate.Options{Prefix: testservices.RedisPrefix(t),
		Logger: slog.New(slog.NewTextHandler(&log, nil)), Timeout: 2 * time.Second, ProbeEvery: time.Hour,
		OnError: func(string) { errs.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	oom := answered("OOM command not allowed when used memory > 'maxmemory'.")
	for range 1000 {
		if c.Failed("cache", oom) {
			t.Fatal("an answered error counted as Redis lost")
		}
	}
	if n := strings.Count(log.String(), "redis: command failed"); n != 1 || errs.Load() != 1000 || !c.Available() {
		t.Fatalf("%d lines and %d errors counted for 1000 failures, available %v:\n%s", n, errs.Load(),
			c.Available(), log.String())
	}
	for range 100 {
		c.Failed("ratelimit.admit", answered("WRONGPASS invalid username-password pair or user is disabled."))
	}
	if c.Available() {
		t.Fatal("a refused password left Redis marked available")
	}
	if n := strings.Count(log.String(), "redis: lost"); n != 1 {
		t.Fatalf("%d 'lost' lines for 100 refused passwords:\n%s", n, log.String())
	}
}
