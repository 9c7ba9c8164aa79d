package netguard

import (
	"context"
	"net/netip"
	"sync"
	"time"
)

// CachingResolver remembers successful lookups for a while, so that a custom host given by name is not
// resolved on every request for the policy check. Only the check may use it: the dialer (Policy.DialContext)
// resolves afresh and checks the address it connects to, so a name that changes its answer (DNS rebinding)
// is still caught where it matters. Failures are not remembered. It is safe for concurrent use.
type CachingResolver struct {
	next Resolver
	ttl  time.Duration
	now  func() time.Time

	mu sync.RWMutex
	m  map[lookupKey]cachedLookup
}

type lookupKey struct{ network, host string }

type cachedLookup struct {
	addrs   []netip.Addr
	expires time.Time
}

// maxCachedLookups bounds the names a CachingResolver remembers; past it, the cache starts again empty.
const maxCachedLookups = 4096

// NewCachingResolver wraps next; answers are kept for ttl.
func NewCachingResolver(next Resolver, ttl time.Duration) *CachingResolver {
	return &CachingResolver{next: next, ttl: ttl, now: time.Now, m: map[lookupKey]cachedLookup{}}
}

// LookupNetIP answers from the cache, or asks the wrapped resolver and remembers a successful answer.
func (c *CachingResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	k := lookupKey{network, host}
	now := c.now()
	c.mu.RLock()
	e, ok := c.m[k]
	c.mu.RUnlock()
	if ok && now.Before(e.expires) {
		return e.addrs, nil
	}
	addrs, err := c.next.LookupNetIP(ctx, network, host)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.m) >= maxCachedLookups {
		c.m = map[lookupKey]cachedLookup{}
	}
	c.m[k] = cachedLookup{addrs: addrs, expires: now.Add(c.ttl)}
	c.mu.Unlock()
	return addrs, nil
}
