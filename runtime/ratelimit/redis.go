package ratelimit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// admitScript checks and counts one request against the shared counters of every policy it matched, in one
// round trip and atomically, so that replicas racing for the last unit cannot both take it.
//
// KEYS[i] is a counter: a hash whose fields are absolute bucket numbers (Unix time / bucket length, as the
// caller's clock reads it) and whose values are the counts. ARGV holds four values per key: the caller's current
// bucket, "r" for a requests policy (it needs room for one more) or "t" for tokens (it must be below the limit),
// the limit, and the key's expiry in milliseconds (a window and a bucket: nothing is left to count by then).
//
// As in a local counter, the window ends at the newest bucket, the caller's or a newer one written by a replica
// whose clock is ahead; buckets before it are removed. Only when every key fits are the requests keys counted,
// +1 in their newest bucket. The answer is one string per key: "1" or "0" (fits), the newest bucket, then
// bucket and count pairs, all separated by spaces; the counts are as Redis spells them.
var admitScript = redis.NewScript(fmt.Sprintf(`
local nb = %d
local n = #KEYS
local fits, tops, fields, counts = {}, {}, {}, {}
local all = true
for i = 1, n do
  local key, a = KEYS[i], 4 * (i - 1)
  local top, topField = tonumber(ARGV[a + 1]), ARGV[a + 1]
  local h = redis.call('HGETALL', key)
  for j = 1, #h, 2 do
    local b = tonumber(h[j])
    if b and b > top then top, topField = b, h[j] end
  end
  local f, c, dead, sum = {}, {}, {}, 0
  for j = 1, #h, 2 do
    local b = tonumber(h[j])
    if b == nil or b <= top - nb then
      dead[#dead + 1] = h[j]
    else
      f[#f + 1], c[#c + 1] = h[j], h[j + 1]
      sum = sum + (tonumber(h[j + 1]) or 0)
    end
  end
  if #dead > 0 then redis.call('HDEL', key, unpack(dead)) end
  local limit = tonumber(ARGV[a + 3])
  local fit
  if ARGV[a + 2] == 'r' then fit = sum + 1 <= limit else fit = sum < limit end
  if not fit then all = false end
  fits[i], tops[i], fields[i], counts[i] = fit, topField, f, c
end
local out = {}
for i = 1, n do
  local key, a = KEYS[i], 4 * (i - 1)
  local f, c = fields[i], counts[i]
  if all and ARGV[a + 2] == 'r' then
    local v = tostring(redis.call('HINCRBY', key, tops[i], 1))
    local found = false
    for j = 1, #f do
      if f[j] == tops[i] then c[j], found = v, true end
    end
    if not found then f[#f + 1], c[#c + 1] = tops[i], v end
  end
  redis.call('PEXPIRE', key, ARGV[a + 4])
  local parts = {fits[i] and '1' or '0', tops[i]}
  for j = 1, #f do
    parts[#parts + 1] = f[j]
    parts[#parts + 1] = c[j]
  end
  out[i] = table.concat(parts, ' ')
end
return out
`, nBuckets))

// groupHash names a group in shared keys: a fixed length whatever the group's values, and no separator in it.
func groupHash(group string) string {
	sum := sha256.Sum256([]byte(group))
	return hex.EncodeToString(sum[:16])
}

// keyTTL is how long a shared counter is kept after its last write: a window and a bucket, after which nothing
// in it would count.
func (s *counterSet) keyTTL() time.Duration { return s.window() + time.Duration(s.bucket) }

// kind is the script's spelling of the fits rule.
func (p *policy) kind() string {
	if p.tokens {
		return "t"
	}
	return "r"
}

// admitShared decides the request with the counters in Redis: one script call for every matched policy. The
// answer fills scratch counters that the local rules (refusalOf, setHeaders) read exactly as they read local
// ones, and is merged into the local counters, which so hold the shared view for the flusher to save and for
// the fallback to start from. ok is false when Redis did not answer: the caller decides locally.
func (l *Limiter) admitShared(hits []hit[*policy, *counter], nanos int64) (adm Admission, ex *Exceeded, ok bool) {
	call := newAdmitCall(l.redis)
	defer admitCalls.Put(call)
	for i := range hits {
		h := &hits[i]
		h.c = h.p.set.get(l, h.key, nanos)
		s := h.c.set
		call.keys = append(call.keys, h.c.rkey)
		call.args = append(call.args, nanos/s.bucket, h.p.kind(), h.p.value, s.keyTTL().Milliseconds())
	}
	l.admits.run(l.redis, call)
	answer, err := call.answer, call.err
	if err == nil && len(answer) != len(hits) {
		err = fmt.Errorf("script answered %d counters for %d keys", len(answer), len(hits))
	}
	// The view goes to the heap whatever its backing (the hits that point into it may), so it takes no more
	// than the matched policies.
	view := make([]counter, len(hits))
	var unfitBuf [inlineHits]bool
	unfit := unfitBuf[:]
	if len(hits) > inlineHits {
		unfit = make([]bool, len(hits))
	}
	for i := 0; err == nil && i < len(hits); i++ {
		view[i].set = hits[i].c.set
		var fits bool
		fits, err = view[i].fill(answer[i])
		unfit[i] = !fits
	}
	if err != nil {
		l.redis.Failed("ratelimit.admit", err)
		return adm, nil, false
	}

	var viewHitsBuf [inlineHits]hit[*policy, *counter]
	viewHits := viewHitsBuf[:0]
	if len(hits) > inlineHits {
		viewHits = make([]hit[*policy, *counter], 0, len(hits))
	}
	for i := range hits {
		viewHits = append(viewHits, hit[*policy, *counter]{p: hits[i].p, key: hits[i].key, c: &view[i]})
	}
	for i := range hits {
		hits[i].c.merge(&view[i])
	}
	if i, after, refused := refusalOf(viewHits, nanos, unfit[:len(hits)]); refused {
		return adm, exceeded(hits[i].p, &view[i], nanos, after), true
	}
	for i := range hits {
		if hits[i].p.tokens {
			adm.addCounter(hits[i].c)
		}
	}
	adm.setHeaders(viewHits, nanos)
	return adm, nil, true
}

// fill sets the counter from one key's answer of admitScript and returns whether it fitted.
func (c *counter) fill(answer string) (fits bool, err error) {
	flag, rest, _ := strings.Cut(answer, " ")
	top, rest, _ := strings.Cut(rest, " ")
	last, err := strconv.ParseInt(top, 10, 64)
	if err != nil || (flag != "0" && flag != "1") {
		return false, fmt.Errorf("script answer %q: not a counter", answer)
	}
	c.last = last
	for rest != "" {
		var b, v string
		b, rest, _ = strings.Cut(rest, " ")
		v, rest, _ = strings.Cut(rest, " ")
		n, err1 := strconv.ParseInt(b, 10, 64)
		count, err2 := strconv.ParseFloat(v, 64)
		if err1 != nil || err2 != nil {
			return false, fmt.Errorf("script answer %q: bucket %q count %q", answer, b, v)
		}
		if n > last-nBuckets && n <= last && count > 0 && !math.IsInf(count, 1) {
			c.buckets[ring(n)] += count
			c.total += count
		}
	}
	return flag == "1", nil
}

// merge takes the shared view o of the counter into it, bucket by bucket keeping the larger count. Counts only
// grow within a bucket, so the larger is the newer, whatever order answers arrive in; counts this replica made
// while Redis was away and that Redis never saw stay.
func (c *counter) merge(o *counter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.evicted {
		return // its successor gets the next answer
	}
	c.advance(o.last) // now c.last >= o.last: the windows overlap from c's oldest bucket to o's newest
	for n := c.last - nBuckets + 1; n <= o.last; n++ {
		i := ring(n)
		if d := o.buckets[i] - c.buckets[i]; d > 0 {
			c.buckets[i] += d
			c.total += d
			c.dirty = true
		}
	}
}
