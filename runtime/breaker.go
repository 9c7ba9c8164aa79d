package runtime

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/gwerr"
)

// breakers holds one circuit breaker per target (its provider, host and credentials), across requests.
// Inline configs can name any number of targets, so the set is bounded: past maxBreakers entries, the closed
// breakers are dropped (a closed breaker holds at most a partial count of failures; open and half-open ones,
// which protect a failing target, stay).
type breakers struct {
	m       sync.Map // string → *breaker
	n       atomic.Int64
	pruning sync.Mutex
	max     int64 // maxBreakers unless a test sets it
}

const maxBreakers = 10_000

func (b *breakers) get(key string) *breaker {
	if v, ok := b.m.Load(key); ok {
		return v.(*breaker)
	}
	v, loaded := b.m.LoadOrStore(key, &breaker{})
	if !loaded {
		limit := b.max
		if limit <= 0 {
			limit = maxBreakers
		}
		if b.n.Add(1) > limit {
			b.prune(key)
		}
	}
	return v.(*breaker)
}

// prune drops the closed breakers other than keep; one prune runs at a time, others go on without waiting.
func (b *breakers) prune(keep string) {
	if !b.pruning.TryLock() {
		return
	}
	defer b.pruning.Unlock()
	b.m.Range(func(k, v any) bool {
		br := v.(*breaker)
		br.mu.Lock()
		idle := br.state == closed && !br.probing
		br.mu.Unlock()
		if idle && k.(string) != keep {
			b.m.Delete(k)
			b.n.Add(-1)
		}
		return true
	})
}

type breakerState uint8

const (
	closed breakerState = iota
	open
	halfOpen
)

// breaker counts a target's failures within the cooldown window. At the threshold it opens: the target is
// skipped until the cooldown has passed; then one probe request is let through, and its outcome closes the
// breaker or opens it again (DESIGN.md).
type breaker struct {
	mu          sync.Mutex
	state       breakerState
	failures    int
	windowStart time.Time
	openedAt    time.Time
	probing     bool
}

// allow tells whether a request may go to the target now.
func (b *breaker) allow(now time.Time, cfg *config.CircuitBreaker) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	cooldown := time.Duration(cfg.CooldownInterval) * time.Millisecond
	switch b.state {
	case open:
		if now.Sub(b.openedAt) < cooldown {
			return false
		}
		b.state, b.probing = halfOpen, true
		return true
	case halfOpen:
		if b.probing {
			return false
		}
		b.probing = true
		return true
	}
	return true
}

// record notes the outcome of a request the breaker allowed. It reports whether the breaker opened (from
// closed) or closed (after a successful probe); a half-open breaker that fails its probe stays open.
func (b *breaker) record(now time.Time, cfg *config.CircuitBreaker, failed bool) (opened, closedAgain bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cooldown := time.Duration(cfg.CooldownInterval) * time.Millisecond
	switch b.state {
	case halfOpen:
		b.probing = false
		if failed {
			b.state, b.openedAt = open, now
			return false, false
		}
		b.state, b.failures = closed, 0
		return false, true
	case closed:
		if !failed {
			return false, false
		}
		if b.failures == 0 || now.Sub(b.windowStart) > cooldown {
			b.windowStart, b.failures = now, 0
		}
		b.failures++
		if b.failures >= cfg.FailureThreshold {
			b.state, b.openedAt = open, now
			return true, false
		}
	}
	return false, false
}

// release gives back a request the breaker allowed whose outcome says nothing about the target (the request
// was cancelled): a half-open breaker lets the next request probe.
func (b *breaker) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == halfOpen {
		b.probing = false
	}
}

// settleBreaker gives the breaker that allowed a target's call the call's outcome.
func (e *Engine) settleBreaker(ctx context.Context, br *breaker, cfg *config.CircuitBreaker, out *outcome) {
	if out.err != nil && ctx.Err() != nil {
		// The request ended (the caller went away, its deadline passed, the gateway is stopping): the failed
		// call says nothing about the target.
		br.release()
		return
	}
	status := out.status
	if out.err != nil {
		status = out.err.Status
		if out.err.Code == gwerr.CodeUpstream || out.err.Code == gwerr.CodeRequestTimeout {
			status = 0 // transport failures always count
		}
	}
	opened, closedAgain := br.record(e.now(), cfg, isBreakerFailure(cfg, status))
	if (opened || closedAgain) && e.observer != nil {
		e.observer.CircuitChanged(out.prov+" "+out.path, opened)
	}
}

// isFailure applies cb_config.failure_status_codes, by default statuses above 500 and transport errors
// (status 0 here).
func isBreakerFailure(cfg *config.CircuitBreaker, status int) bool {
	if status == 0 {
		return true
	}
	if cfg.FailureStatusCodes == nil {
		return status > 500
	}
	for _, c := range cfg.FailureStatusCodes {
		if c == status {
			return true
		}
	}
	return false
}
