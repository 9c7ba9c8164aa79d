package ratelimit

import (
	"math"
	"strings"
	"sync"
	"time"

	"github.com/llmgw/gateway/storage"
)

// nBuckets is the number of buckets of a window: a minute is counted in seconds, an hour in minutes, a day in
// periods of 24 minutes.
const nBuckets = storage.CounterBuckets

// ring maps an absolute bucket number to its place in a counter's ring.
func ring(n int64) int {
	i := n % nBuckets
	if i < 0 {
		i += nBuckets
	}
	return int(i)
}

// counterSet holds the counters of one policy, one per group. A policy update that keeps the type, the unit
// and group_by keeps the set (and so its counts); any other change starts a new one.
type counterSet struct {
	ws, policyID string
	typ, unit    string
	bucket       int64  // bucket length in nanoseconds
	groups       []attr // the policy's group_by, to spell a counter's stored group
	groupSig     string // group_by keys joined, to tell whether an updated policy can keep the set

	m sync.Map // group key (see policy.groupKey) → *counter
}

func (s *counterSet) window() time.Duration { return time.Duration(s.bucket * nBuckets) }

// get returns the counter of the group key, creating it on first use. A new counter starts from the saved
// record when there is one (once per group per process): that read is the only disk access on the request path,
// and the reason a restart does not reset a day's window.
func (s *counterSet) get(l *Limiter, key string, nanos int64) *counter {
	if v, ok := s.m.Load(key); ok {
		return v.(*counter)
	}
	key = strings.Clone(key) // key may point into the request's body
	c := &counter{set: s, key: key, group: groupName(s.groups, key)}
	if l.redis != nil {
		c.rkey = l.redis.Key("rl", s.ws, s.policyID, s.typ, s.unit, groupHash(c.group))
	}
	rec, ok, err := l.store.Counters.Load(s.ws, s.policyID, c.group)
	if err != nil {
		l.log.Error("ratelimit: load counter", "policy", s.policyID, "group", c.group, "err", err)
	} else if ok {
		c.saved = true
		c.restore(rec, nanos)
	}
	v, _ := s.m.LoadOrStore(key, c)
	return v.(*counter)
}

// groupName is how a group is spelled in storage and in the budgets' view: "" without group_by, else key=value
// pairs in query-string escaping, so that different group_by keys never share a record.
func groupName(groups []attr, key string) string {
	if len(groups) == 1 {
		return string(appendPair(nil, groups[0].key, key))
	}
	return key // "" or already the pairs (see policy.groupKey)
}

// counter counts one group of one policy over a sliding window of nBuckets buckets. ring[i] holds the bucket
// whose absolute number n (Unix time / bucket length) has n mod nBuckets == i, for n in (last-nBuckets, last].
// total is the sum of the ring, kept as buckets come and go; counts are whole numbers, so it stays exact.
type counter struct {
	set   *counterSet
	key   string // in set.m
	group string // as stored
	rkey  string // the shared counter's key in Redis; "" without Redis

	guard   // mu guards the rest
	last    int64
	total   float64
	buckets [nBuckets]float64
}

// advance moves the window so that bucket b is the newest, emptying the buckets that left it, and returns the
// bucket to count into. A clock that went back counts into the newest bucket rather than rewriting the past.
func (c *counter) advance(b int64) int64 {
	if b <= c.last {
		return c.last
	}
	if b-c.last >= nBuckets {
		c.buckets = [nBuckets]float64{}
		c.total = 0
	} else {
		for n := c.last + 1; n <= b; n++ {
			i := ring(n)
			c.total -= c.buckets[i]
			c.buckets[i] = 0
		}
	}
	c.last = b
	return b
}

// add counts v in the current bucket; the caller has advanced the window.
func (c *counter) add(v float64) {
	c.buckets[ring(c.last)] += v
	c.total += v
	c.dirty = true
}

// leaves returns how long until bucket n is out of the window, from nanos.
func (c *counter) leaves(n, nanos int64) time.Duration {
	return time.Duration((n+nBuckets)*c.set.bucket - nanos)
}

// untilFits returns how long until enough old buckets leave the window for fits(total) to hold, or the whole
// window when no amount of waiting is enough (a limit below one request).
func (c *counter) untilFits(nanos int64, fits func(total float64) bool) time.Duration {
	freed := 0.0
	for n := c.last - nBuckets + 1; n <= c.last; n++ {
		v := c.buckets[ring(n)]
		if v == 0 {
			continue
		}
		freed += v
		if fits(c.total - freed) {
			return c.leaves(n, nanos)
		}
	}
	return c.set.window()
}

// untilEmpty returns how long until everything counted has left the window, 0 when nothing is counted.
func (c *counter) untilEmpty(nanos int64) time.Duration {
	for n := c.last; n > c.last-nBuckets; n-- {
		if c.buckets[ring(n)] != 0 {
			return c.leaves(n, nanos)
		}
	}
	return 0
}

// record returns the counter as storage saves it, buckets oldest first.
func (c *counter) record() *storage.CounterRecord {
	s := c.set
	r := &storage.CounterRecord{WorkspaceID: s.ws, PolicyID: s.policyID, Group: c.group, Type: s.typ, Unit: s.unit,
		BucketSeconds: s.bucket / int64(time.Second), LastBucket: c.last}
	for j := range r.Buckets {
		r.Buckets[j] = c.buckets[ring(c.last-nBuckets+1+int64(j))]
	}
	return r
}

// restore starts the counter from a saved record, unless the record was written for another type or unit of
// the policy. Buckets that left the window while the gateway was down are dropped by the advance.
func (c *counter) restore(r *storage.CounterRecord, nanos int64) {
	s := c.set
	if r.Type != s.typ || r.Unit != s.unit || r.BucketSeconds*int64(time.Second) != s.bucket {
		return
	}
	c.last = r.LastBucket
	for j, v := range r.Buckets {
		if v > 0 && !math.IsInf(v, 1) {
			c.buckets[ring(r.LastBucket-nBuckets+1+int64(j))] = v
			c.total += v
		}
	}
	c.advance(nanos / s.bucket)
}
