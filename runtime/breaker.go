package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/redisstate"
)

// breakers holds one circuit breaker per target (its provider, host and credentials), across requests.
// Inline configs can name any number of targets, so the set is bounded: past maxBreakers entries, the closed
// breakers are dropped (a closed breaker holds at most a partial count of failures; open and half-open ones,
// which protect a failing target, stay).
//
// With Redis (Options.Redis) the replicas share their breakers (sharedBreakers), at no cost while a target
// answers: allow and a success touch nothing but the breaker. A failure is also counted in Redis, so that the
// replicas' failures together reach the threshold; an opening and a closing are told to every replica, which
// applies them to its own breaker of the target (made for the purpose when it has none yet). Redis down: each
// replica counts alone, as without it.
type breakers struct {
	m       sync.Map // identity → *breaker
	n       atomic.Int64
	pruning sync.Mutex
	max     int64 // maxBreakers unless a test sets it

	shared *sharedBreakers // nil: this replica's own
	byHash sync.Map        // with shared: identityHash → *breaker, for the other replicas' messages
}

const maxBreakers = 10_000

func (b *breakers) get(key string) *breaker {
	if v, ok := b.m.Load(key); ok {
		return v.(*breaker)
	}
	if b.shared == nil {
		v, loaded := b.m.LoadOrStore(key, &breaker{})
		if !loaded {
			b.added(key)
		}
		return v.(*breaker)
	}
	// A breaker is counted once, where it is made: here, or in byHash by a message naming a target this
	// replica had not called yet, which this call then adopts.
	nb := &breaker{hash: identityHash(key)}
	if v, loaded := b.byHash.LoadOrStore(nb.hash, nb); loaded {
		nb = v.(*breaker)
		nb.mu.Lock()
		nb.remoteOnly = false
		nb.mu.Unlock()
	} else {
		defer b.added(key)
	}
	v, _ := b.m.LoadOrStore(key, nb)
	return v.(*breaker)
}

// added counts a new breaker and prunes past the bound.
func (b *breakers) added(keep string) {
	limit := b.max
	if limit <= 0 {
		limit = maxBreakers
	}
	if b.n.Add(1) > limit {
		b.prune(keep)
	}
}

// byID returns the breaker the shared id names, making one (open or closed as the message says) when this
// replica has none.
func (b *breakers) byID(id string) *breaker {
	if v, ok := b.byHash.Load(id); ok {
		return v.(*breaker)
	}
	v, loaded := b.byHash.LoadOrStore(id, &breaker{hash: id, remoteOnly: true})
	if !loaded {
		b.added("")
	}
	return v.(*breaker)
}

// prune drops the closed breakers other than keep, and the ones other replicas' messages made whose opening
// has passed; one prune runs at a time, others go on without waiting.
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
			if b.shared == nil || b.byHash.CompareAndDelete(br.hash, br) {
				b.n.Add(-1)
			}
		}
		return true
	})
	if b.shared == nil {
		return
	}
	now := b.shared.now()
	b.byHash.Range(func(k, v any) bool {
		br := v.(*breaker)
		br.mu.Lock()
		idle := br.remoteOnly && (br.state == closed || br.state == open && !now.Before(br.until))
		br.mu.Unlock()
		if idle && b.byHash.CompareAndDelete(k, br) {
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
	until       time.Time // while open: the end of the cooldown
	probing     bool

	hash       string // with shared breakers: identityHash of the key, the breaker's name in Redis
	remoteOnly bool   // made by another replica's message; this replica has not called the target
}

// breakerChange is what an outcome did to a breaker.
type breakerChange uint8

const (
	unchanged   breakerChange = iota
	counted                   // a failure counted, below the threshold
	opened                    // the failure that reached the threshold
	reopened                  // the probe failed
	closedAgain               // the probe succeeded
)

// allow tells whether a request may go to the target now.
func (b *breaker) allow(now time.Time, cfg *config.CircuitBreaker) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case open:
		if now.Before(b.until) {
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

// record notes the outcome of a request the breaker allowed.
func (b *breaker) record(now time.Time, cfg *config.CircuitBreaker, failed bool) breakerChange {
	b.mu.Lock()
	defer b.mu.Unlock()
	cooldown := time.Duration(cfg.CooldownInterval) * time.Millisecond
	switch b.state {
	case halfOpen:
		b.probing = false
		if failed {
			b.state, b.until = open, now.Add(cooldown)
			return reopened
		}
		b.state, b.failures = closed, 0
		return closedAgain
	case closed:
		if !failed {
			return unchanged
		}
		if b.failures == 0 || now.Sub(b.windowStart) > cooldown {
			b.windowStart, b.failures = now, 0
		}
		b.failures++
		if b.failures >= cfg.FailureThreshold {
			b.state, b.until = open, now.Add(cooldown)
			return opened
		}
		return counted
	}
	return unchanged
}

// openShared opens a closed breaker because the replicas' failures together reached the threshold. It reports
// whether it opened it, and until when.
func (b *breaker) openShared(now time.Time, cfg *config.CircuitBreaker) (bool, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != closed {
		return false, time.Time{}
	}
	b.state, b.until, b.failures = open, now.Add(time.Duration(cfg.CooldownInterval)*time.Millisecond), 0
	return true, b.until
}

// openUntil applies another replica's opening: open until until, unless this breaker is open longer already.
// An opening that has passed is old news (this replica's own message, read back after its probe closed the
// breaker) and is ignored.
func (b *breaker) openUntil(now, until time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !now.Before(until) || b.state == open && !until.After(b.until) {
		return
	}
	b.state, b.until, b.failures, b.probing = open, until, 0, false
}

// closeShared applies another replica's successful probe.
func (b *breaker) closeShared() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != closed {
		b.state, b.failures, b.probing = closed, 0, false
	}
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

// sharedBreakers is what the breakers share through Redis.
type sharedBreakers struct {
	r    *redisstate.Breakers
	now  func() time.Time
	stop func()
}

// share makes b share its state through c, until Engine.Close.
func (b *breakers) share(c *redisstate.Client, now func() time.Time) {
	sh := &sharedBreakers{r: c.Breakers(), now: now}
	b.shared = sh
	sh.stop = sh.r.Watch(
		func(id string, until time.Time) { b.byID(id).openUntil(sh.now(), until) },
		func(id string) {
			if v, ok := b.byHash.Load(id); ok {
				v.(*breaker).closeShared()
			}
		})
}

// identityHash names a breaker in Redis: its key holds credential-derived identity, never sent in clear.
func identityHash(identity string) string {
	sum := sha256.Sum256([]byte("gateway breaker\x00" + identity))
	return hex.EncodeToString(sum[:16])
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
	now := e.now()
	change := br.record(now, cfg, isBreakerFailure(cfg, status))
	if sh := e.breakers.shared; sh != nil {
		switch change {
		case counted:
			// Only a failure costs a Redis call: the replicas' failures together may reach the threshold.
			if n, ok := sh.r.Fail(br.hash, time.Duration(cfg.CooldownInterval)*time.Millisecond); ok && n >= int64(cfg.FailureThreshold) {
				var until time.Time
				if ok, until = br.openShared(now, cfg); ok {
					change = opened
					sh.r.Open(br.hash, until)
				}
			}
		case opened, reopened:
			br.mu.Lock()
			until := br.until
			br.mu.Unlock()
			sh.r.Open(br.hash, until)
		case closedAgain:
			sh.r.Close(br.hash)
		}
	}
	if (change == opened || change == closedAgain) && e.observer != nil {
		e.observer.CircuitChanged(out.prov+" "+out.path, change == opened)
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
