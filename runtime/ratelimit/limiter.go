package ratelimit

import (
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/llmgw/gateway/runtime/redisstate"
	"github.com/llmgw/gateway/runtime/schema"
	"github.com/llmgw/gateway/storage"
)

// Attrs are what a request shows the policies. The caller fills them from the authenticated key and the
// request's headers; the limiter reads Body only when a policy of the workspace needs the model.
//
// An MCP tool call sets ToolCall, MCPServer and Tool besides WorkspaceID, APIKey and Metadata, and leaves
// Provider, VirtualKey, Config and Body empty: only policies that name mcp_server or tool match it, and those
// never match a model request.
type Attrs struct {
	WorkspaceID string
	APIKey      string            // the gateway API key's ID
	Provider    string            // x-gateway-provider as sent ("openai", "@slug")
	VirtualKey  string            // x-gateway-virtual-key
	Config      string            // x-gateway-config when it is a saved config's ID; "" for an inline config
	Metadata    map[string]string // x-gateway-metadata
	Body        *schema.Body      // the request body; its top-level "model" is the model (nil: none)

	ToolCall  bool   // an MCP tools/call rather than a model request
	MCPServer string // the tool's server: its registry ID
	Tool      string // the tool's name as its server knows it, without the "<server>__" prefix
}

// Options configure New.
type Options struct {
	// Now is the clock. Default: time.Now.
	Now func() time.Time
	// FlushInterval is how often changed counters are saved, and so how much a crash can lose. Default 1 s.
	FlushInterval time.Duration
	// Logger receives storage errors and policies that cannot be enforced. Default: slog.Default().
	Logger *slog.Logger
	// Redis, when set, shares the counts with the other replicas (see "Several replicas" in the package's
	// documentation). Nil: this process counts alone.
	Redis *redisstate.Client
}

// Limiter enforces the rate-limit policies of every workspace. It is safe for concurrent use.
type Limiter struct {
	base
	workspaces workspaces[storage.RateLimitPolicy, snapshot, *snapshot]
	retire     retirements[*counterSet]
	redis      *redisstate.Client // nil: counts stay in this process
	writes     *writeQueue        // the tokens counted in Redis; nil without Redis
	admits     admitBatch         // the script calls of concurrent Admits, sent together
}

// New returns a limiter over the store's policies and counters and starts its flusher; Close stops it.
func New(store *storage.Store, opts Options) *Limiter {
	l := &Limiter{}
	l.base.init(store, opts.Now, opts.Logger, opts.FlushInterval)
	l.workspaces.init(store.Policies, l.compile, l.log, "ratelimit: list policies")
	if opts.Redis != nil {
		l.redis = opts.Redis
		l.writes = newWriteQueue(opts.Redis, l.log, "ratelimit.tokens")
	}
	l.start(l.every, l.flush, l.log, "ratelimit: save counters")
	return l
}

// base is what the Limiter and the Budgets share besides their policies: the store, the clock, the logger and
// the flusher that saves their state.
type base struct {
	store *storage.Store
	now   func() time.Time
	log   *slog.Logger
	every time.Duration
	flusher
}

// init sets the options' values, or their defaults: time.Now, slog.Default() and a flush every second.
func (b *base) init(store *storage.Store, now func() time.Time, log *slog.Logger, every time.Duration) {
	b.store, b.now, b.log, b.every = store, now, log, every
	if b.now == nil {
		b.now = time.Now
	}
	if b.log == nil {
		b.log = slog.Default()
	}
	if b.every <= 0 {
		b.every = time.Second
	}
}

// inlineTokens is how many matched tokens policies an Admission holds without allocating.
const inlineTokens = 4

// Admission is what Admit lets through: the counters of the matched tokens policies, for AddTokens, and the
// figures of the rate-limit headers. It is a value, so that admitting a request allocates nothing.
type Admission struct {
	tokens [inlineTokens]*counter
	more   []*counter // beyond inlineTokens
	n      int

	ok        bool
	limit     float64
	remaining float64
	reset     time.Duration
}

// Headers returns the figures of x-ratelimit-limit, x-ratelimit-remaining and x-ratelimit-reset: those of the
// most constrained matched policy (the lowest remaining share of its limit), remaining counted after this
// request, reset in whole seconds rounded up until the counted usage has left the window. ok is false when no
// policy matched the request.
func (a *Admission) Headers() (limit, remaining float64, resetSeconds int64, ok bool) {
	if !a.ok {
		return 0, 0, 0, false
	}
	return a.limit, a.remaining, ceilSeconds(a.reset), true
}

// CountsTokens reports whether a tokens policy waits for the request's usage, so that a caller can skip reading
// usage (and wrapping a stream) when none does. It turns false once AddTokens has counted.
func (a *Admission) CountsTokens() bool { return a.n > 0 }

func (a *Admission) addCounter(c *counter) {
	if a.n < inlineTokens {
		a.tokens[a.n] = c
	} else {
		a.more = append(a.more, c)
	}
	a.n++
}

// Exceeded is a refusal: the policy whose limit the request would pass. With several, the one that frees up
// last, so that retrying after RetryAfter is not refused by another.
type Exceeded struct {
	PolicyID  string
	Type      string // requests | tokens
	Unit      string // rpm | rph | rpd
	Limit     float64
	Remaining float64 // 0
	// Reset is how long until everything counted has left the window.
	Reset time.Duration
	// RetryAfter is how long until enough old usage has left the window for the request to fit; the whole
	// window when it never can (a limit below one request).
	RetryAfter time.Duration
}

func (e *Exceeded) Error() string {
	per := map[string]string{"rpm": "minute", "rph": "hour", "rpd": "day"}[e.Unit]
	return fmt.Sprintf("rate limit exceeded: policy %s allows %s %s per %s; retry after %d s",
		e.PolicyID, strconv.FormatFloat(e.Limit, 'f', -1, 64), e.Type, per, e.RetryAfterSeconds())
}

// RetryAfterSeconds is RetryAfter for the retry-after header: whole seconds, rounded up, at least 1.
func (e *Exceeded) RetryAfterSeconds() int64 { return max(1, ceilSeconds(e.RetryAfter)) }

func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// inlineHits is how many matched policies Admit handles without allocating.
const inlineHits = 8

// hit is a policy that matched a request (a rate-limit or a usage-limit one), the request's group key in it,
// and that group's counter or spend.
type hit[P any, C guarded] struct {
	p   P
	key string
	c   C
}

// Admit decides whether the request may go on. Every matched policy is checked first and only then are the
// requests policies counted, all under the counters' locks (taken in policy-ID order): a refused request counts
// nowhere, and two racing requests cannot both take the last unit. With Redis available the same happens in
// one script call over the shared counters (admitShared). A nil Limiter admits everything.
func (l *Limiter) Admit(a *Attrs) (Admission, *Exceeded) {
	var adm Admission
	if l == nil || a == nil || a.WorkspaceID == "" {
		return adm, nil
	}
	snap := l.workspaces.snapshot(a.WorkspaceID)
	if len(snap.policies) == 0 {
		return adm, nil
	}
	var buf [inlineHits]hit[*policy, *counter]
	hits := buf[:0]
	for _, p := range snap.policies {
		if p.matches(a) {
			hits = append(hits, hit[*policy, *counter]{p: p, key: p.groupKey(a)})
		}
	}
	if len(hits) == 0 {
		return adm, nil
	}
	nanos := l.now().UnixNano()
	if l.redis.Available() {
		if adm, ex, ok := l.admitShared(hits, nanos); ok {
			return adm, ex
		}
	}
	for {
		for i := range hits {
			hits[i].c = hits[i].p.set.get(l, hits[i].key, nanos)
		}
		if lockAll(hits) {
			break
		}
	}
	for i := range hits {
		hits[i].c.advance(nanos / hits[i].c.set.bucket)
	}
	if i, after, refused := refusalOf(hits, nanos, nil); refused {
		ex := exceeded(hits[i].p, hits[i].c, nanos, after)
		unlockAll(hits)
		return Admission{}, ex
	}
	for i := range hits {
		h := &hits[i]
		if h.p.tokens {
			adm.addCounter(h.c)
		} else {
			h.c.add(1)
		}
	}
	adm.setHeaders(hits, nanos)
	unlockAll(hits)
	return adm, nil
}

// refusalOf finds the refusal of a request by the hits, whose counters show the window at nanos before it is
// counted: ok false when every policy lets it through, else the index of the hit that frees up last and when
// it does. unfit, when not nil, tells which hits do not fit (Redis's answer); else each policy's fits decides.
func refusalOf(hits []hit[*policy, *counter], nanos int64, unfit []bool) (refused int, after time.Duration, ok bool) {
	for i := range hits {
		h := &hits[i]
		fits := h.p.fits(h.c.total)
		if unfit != nil {
			fits = !unfit[i]
		}
		if !fits {
			if a := h.c.untilFits(nanos, h.p.fits); !ok || a > after {
				refused, after, ok = i, a, true
			}
		}
	}
	return refused, after, ok
}

// exceeded is the refusal by policy p, whose counter c shows the window at nanos.
func exceeded(p *policy, c *counter, nanos int64, retryAfter time.Duration) *Exceeded {
	return &Exceeded{PolicyID: p.id, Type: p.typ, Unit: p.unit, Limit: p.value, Reset: c.untilEmpty(nanos),
		RetryAfter: retryAfter}
}

// setHeaders sets the header figures from the most constrained of the hits, whose counters hold the admitted
// request.
func (adm *Admission) setHeaders(hits []hit[*policy, *counter], nanos int64) {
	var tight *hit[*policy, *counter]
	tightShare := math.Inf(1)
	for i := range hits {
		h := &hits[i]
		share := 0.0
		if h.p.value > 0 {
			share = (h.p.value - h.c.total) / h.p.value
		}
		if share < tightShare {
			tight, tightShare = h, share
		}
	}
	adm.ok = true
	adm.limit = tight.p.value
	adm.remaining = max(0, tight.p.value-tight.c.total)
	adm.reset = tight.c.untilEmpty(nanos)
}

// fits reports whether a request may pass a counter at total: a requests policy must have room for this one, a
// tokens policy must not have reached its limit yet (a request cannot know its cost in advance).
func (p *policy) fits(total float64) bool {
	if p.tokens {
		return total < p.value
	}
	return total+1 <= p.value
}

// guard is the lock of one group's counter or spend, and the state of it that the request path and the flusher
// share.
type guard struct {
	mu      sync.Mutex
	dirty   bool // changed since it was last saved
	saved   bool // a record of it may be in the store
	evicted bool // removed from its set: whoever holds it looks it up again
}

// guarded is a counter or a spend: what embeds a guard.
type guarded interface{ lockable() *guard }

func (g *guard) lockable() *guard { return g }

// lockAll locks the hits' counters (or spend) in order. When one was evicted meanwhile it unlocks them all and
// reports false: the caller looks them up again.
func lockAll[P any, C guarded](hits []hit[P, C]) bool {
	for i := range hits {
		g := hits[i].c.lockable()
		g.mu.Lock()
		if g.evicted {
			unlockAll(hits[:i+1])
			return false
		}
	}
	return true
}

func unlockAll[P any, C guarded](hits []hit[P, C]) {
	for i := range hits {
		hits[i].c.lockable().mu.Unlock()
	}
}

// AddTokens counts the usage (total_tokens) of an admitted request against its tokens policies, now. Later
// calls with the same Admission add nothing, so a caller may call it from more than one path. With Redis the
// tokens are also queued for the shared counters, without waiting. A nil Limiter or Admission does nothing.
func (l *Limiter) AddTokens(adm *Admission, tokens int) {
	if l == nil || adm == nil || adm.n == 0 {
		return
	}
	n := adm.n
	adm.n = 0
	if tokens <= 0 {
		return
	}
	nanos := l.now().UnixNano()
	for i := range n {
		var c *counter
		if i < inlineTokens {
			c = adm.tokens[i]
		} else {
			c = adm.more[i-inlineTokens]
		}
		l.addTokens(c, float64(tokens), nanos)
		if l.writes != nil && l.redis.Available() {
			l.writes.push(redisOp{kind: opHashAdd, key: c.rkey, field: nanos / c.set.bucket, v: float64(tokens),
				ttl: c.set.keyTTL()})
		}
	}
}

func (l *Limiter) addTokens(c *counter, v float64, nanos int64) {
	for {
		c.mu.Lock()
		if !c.evicted {
			c.advance(nanos / c.set.bucket)
			c.add(v)
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		c = c.set.get(l, c.key, nanos) // evicted while the request ran: count into its successor
	}
}

// Close stops the flusher and saves every changed counter, synced. The limiter still admits afterwards, but
// saves nothing more. Close does not close the store.
func (l *Limiter) Close() error {
	l.writes.close()
	return l.close(l.flush)
}
