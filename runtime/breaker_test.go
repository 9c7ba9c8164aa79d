package runtime

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime/config"
)

func TestBreakerOpensAndHalfOpens(t *testing.T) {
	cfg := &config.CircuitBreaker{FailureThreshold: 2, CooldownInterval: 30000}
	var b breaker
	t0 := time.Unix(1_000_000, 0)
	step := func(at time.Duration, allowed bool, failed bool) {
		t.Helper()
		now := t0.Add(at)
		if got := b.allow(now, cfg); got != allowed {
			t.Fatalf("at %v: allow = %v, want %v (state %d)", at, got, allowed, b.state)
		}
		if allowed {
			b.record(now, cfg, failed)
		}
	}
	step(0, true, true)
	step(time.Second, true, true) // second failure: opens
	step(2*time.Second, false, false)
	step(29*time.Second, false, false)
	step(32*time.Second, true, true) // cooldown over: the probe fails, open again
	step(33*time.Second, false, false)
	step(63*time.Second, true, false) // the next probe succeeds: closed
	step(64*time.Second, true, true)  // one failure is below the threshold
	step(65*time.Second, true, false)
}

func TestBreakerFailuresOutsideTheWindowDoNotAddUp(t *testing.T) {
	cfg := &config.CircuitBreaker{FailureThreshold: 2, CooldownInterval: 30000}
	var b breaker
	t0 := time.Unix(1_000_000, 0)
	b.record(t0, cfg, true)
	b.record(t0.Add(31*time.Second), cfg, true) // the first failure has left the window
	if !b.allow(t0.Add(32*time.Second), cfg) {
		t.Fatal("breaker opened on failures a window apart")
	}
}

func TestBreakerOneProbeAtATime(t *testing.T) {
	cfg := &config.CircuitBreaker{FailureThreshold: 1, CooldownInterval: 30000}
	var b breaker
	t0 := time.Unix(1_000_000, 0)
	b.record(t0, cfg, true)
	later := t0.Add(31 * time.Second)
	var allowed sync.WaitGroup
	var mu sync.Mutex
	n := 0
	for i := 0; i < 16; i++ {
		allowed.Add(1)
		go func() {
			defer allowed.Done()
			if b.allow(later, cfg) {
				mu.Lock()
				n++
				mu.Unlock()
			}
		}()
	}
	allowed.Wait()
	if n != 1 {
		t.Fatalf("%d probes let through while half-open, want 1", n)
	}
}

func TestBreakerFailureCodes(t *testing.T) {
	tests := []struct {
		codes  []int
		status int
		want   bool
	}{
		{nil, 0, true},
		{nil, 500, false},
		{nil, 502, true},
		{nil, 429, false},
		{[]int{429}, 429, true},
		{[]int{429}, 503, false},
		{[]int{429}, 0, true},
	}
	for _, tc := range tests {
		if got := isBreakerFailure(&config.CircuitBreaker{FailureStatusCodes: tc.codes}, tc.status); got != tc.want {
			t.Errorf("codes %v status %d: %v, want %v", tc.codes, tc.status, got, tc.want)
		}
	}
}

func TestBreakersAreBounded(t *testing.T) {
	var b breakers
	b.max = 100
	failing := b.get("failing")
	failing.state = open
	for i := range 1000 {
		b.get(fmt.Sprint("target-", i))
	}
	if n := b.n.Load(); n > 101 {
		t.Fatalf("%d breakers kept, bound 100", n)
	}
	if got := b.get("failing"); got != failing {
		t.Fatal("an open breaker was dropped")
	}
}
