package ratelimit

import (
	"math"
	"strconv"
	"time"

	"github.com/llmgw/gateway/storage"
)

// unboundedSpendTTL is how long the shared spend of a policy without periodic reset outlives its last write.
// Its spend never resets, but the key need not live for ever: storage keeps the spend, and the first replica to
// use the group afterwards seeds the key again from it.
const unboundedSpendTTL = 30 * 24 * time.Hour

// maxUsageKeys is how many shared spends Usage reads per round trip.
const maxUsageKeys = 1000

// periodKey is a group's shared spend key for one period.
type periodKey struct {
	period int64
	key    string
}

// spendKey is the Redis key of a group's spend in the period that starts at period: a new period is a new key,
// as is a new type or reset, so that a policy counting another way starts from nothing.
func (b *Budgets) spendKey(ws, policyID, typ, reset string, period int64, ghash string) string {
	if reset == "" {
		reset = "none"
	}
	return b.redis.Key("budget", ws, policyID, typ, reset, strconv.FormatInt(period, 10), ghash)
}

// keyFor returns the group's spend key for period, built once per period.
func (b *Budgets) keyFor(c *spend, period int64) string {
	if k := c.rkey.Load(); k != nil && k.period == period {
		return k.key
	}
	s := c.set
	k := &periodKey{period: period, key: b.spendKey(s.ws, s.policyID, s.typ, s.reset, period, c.ghash)}
	c.rkey.Store(k)
	return k.key
}

// spendTTL is how long a shared spend is kept after a write at now: a day past its period's end, when the
// next period's key has long taken over.
func spendTTL(reset string, now time.Time) time.Duration {
	_, end, ok := PeriodBounds(reset, now)
	if !ok {
		return unboundedSpendTTL
	}
	if ttl := time.Unix(end, 0).Sub(now) + 24*time.Hour; ttl > 0 {
		return ttl
	}
	return 24 * time.Hour
}

// sharedSpend reads the shared spend of every hit's group in one round trip (MGET): one value per hit, nil for a
// key Redis does not hold. It returns nil without Redis or when the call fails, and the request is decided on
// this replica's spend alone.
func (b *Budgets) sharedSpend(hits []budgetHit, now time.Time) []any {
	if !b.redis.Available() {
		return nil
	}
	var keysBuf [inlineHits]string
	keys := keysBuf[:0]
	for i := range hits {
		h := &hits[i]
		h.c = h.p.set.get(b, h.key, now)
		keys = append(keys, b.keyFor(h.c, h.p.periodStart(now)))
	}
	ctx, cancel := b.redis.CallContext()
	vals, err := b.redis.Redis().MGet(ctx, keys...).Result()
	cancel()
	if err != nil {
		b.redis.Failed("budget.reserve", err)
		return nil
	}
	if len(vals) != len(hits) {
		return nil // not an MGET's answer: decided locally
	}
	return vals
}

// takeShared merges the group's shared spend v (from sharedSpend) into c, under c's lock: spend only grows within
// a period, so the larger is the newer. A key Redis lacks (never written, or lost) is seeded with this replica's
// spend, which came from storage, unless another replica seeds it first.
func (b *Budgets) takeShared(c *spend, p *budgetPolicy, v any, now time.Time) {
	s, ok := v.(string)
	if !ok {
		if c.spent > 0 {
			b.writes.push(redisOp{kind: opSeed, key: b.keyFor(c, c.period), v: c.spent, ttl: spendTTL(p.reset, now)})
		}
		return
	}
	shared, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(shared) || math.IsInf(shared, 0) {
		b.log.Error("budget: shared spend is not a number; using this replica's", "policy", p.sel.id, "value", s)
		return
	}
	if shared > c.spent {
		c.spent = shared
		c.dirty = true
	}
	if p.alert > 0 && shared >= p.alert && !c.alerted {
		c.alerted = true // a replica whose settlement crossed the threshold raised the alert
		c.dirty = true
	}
}

// settleShared sends a settlement's use to Redis, under c's lock, and reports whether it went: then Redis's
// new total decides the alert, on the queue's goroutine (settled). False without Redis or with a full queue:
// the caller decides the alert on this replica's spend.
func (b *Budgets) settleShared(c *spend, p *budgetPolicy, used float64, now time.Time) bool {
	if b.writes == nil || !b.redis.Available() {
		return false
	}
	period := c.period
	return b.writes.push(redisOp{kind: opAdd, key: b.keyFor(c, period), v: used, ttl: spendTTL(p.reset, now),
		done: func(total float64, err error) { b.settled(c, p, period, used, total, err) }})
}

// settled takes INCRBYFLOAT's answer for a settlement of used in period: the new total is merged into c, and the
// alert is raised when this settlement took the total across the threshold, so exactly one replica raises it.
// When the write failed, this replica's spend decides, as without Redis.
func (b *Budgets) settled(c *spend, p *budgetPolicy, period int64, used, total float64, err error) {
	c.mu.Lock()
	var crossed bool
	var spent float64
	if err != nil {
		crossed = c.period == period && p.alert > 0 && !c.alerted && c.spent >= p.alert
		spent = c.spent
	} else {
		crossed = p.alert > 0 && total >= p.alert && total-used < p.alert
		spent = total
		if c.period == period && total > c.spent {
			c.spent = total
			c.dirty = true
		}
	}
	if crossed && c.period == period {
		c.alerted = true
		c.dirty = true
	}
	c.mu.Unlock()
	if crossed {
		b.logAlert(p, c, spent)
		if b.onAlert != nil {
			b.onAlert(p.sel.id)
		}
	}
}

// sharedUsage replaces the groups' spend with Redis's where it is larger (it holds what every replica settled),
// in rounds of maxUsageKeys keys. Groups that no replica has saved yet are not listed.
func (b *Budgets) sharedUsage(pol *storage.UsageLimitPolicy, reset string, period int64, spentBy map[string]float64) {
	groups := make([]string, 0, len(spentBy))
	for g := range spentBy {
		groups = append(groups, g)
	}
	for len(groups) > 0 {
		chunk := groups[:min(len(groups), maxUsageKeys)]
		groups = groups[len(chunk):]
		keys := make([]string, len(chunk))
		for i, g := range chunk {
			keys[i] = b.spendKey(pol.WorkspaceID, pol.ID, pol.Type, reset, period, groupHash(g))
		}
		ctx, cancel := b.redis.CallContext()
		vals, err := b.redis.Redis().MGet(ctx, keys...).Result()
		cancel()
		if err != nil {
			b.redis.Failed("budget.usage", err)
			return
		}
		for i, v := range vals {
			s, ok := v.(string)
			if !ok || i >= len(chunk) {
				continue
			}
			if f, err := strconv.ParseFloat(s, 64); err == nil && f > spentBy[chunk[i]] && !math.IsInf(f, 0) {
				spentBy[chunk[i]] = f
			}
		}
	}
}
