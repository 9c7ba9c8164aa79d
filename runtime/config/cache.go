package config

import (
	"crypto/sha256"
	"sync"
	"sync/atomic"
	"unsafe"
)

// DefaultCacheSize is the number of configs a PlanCache made with NewPlanCache(0) holds.
const DefaultCacheSize = 1024

// PlanCache remembers the outcome of Load for config texts seen before: the compiled *Plan, or the validation
// error, keyed by the SHA-256 of the text. A config sent in the x-gateway-config header on every request is
// parsed and compiled once. A PlanCache is safe for concurrent use; a hit takes a read lock and allocates nothing.
//
// It holds at most its size of entries. When full, it evicts with the CLOCK algorithm (second chance): an
// entry read since the hand last passed it survives one more pass, so configs in steady use stay and one-off
// ones go first.
//
// The plan and error it returns are shared by every caller of the same text and must not be modified.
//
//	plans := config.NewPlanCache(1024)
//	plan, err := plans.Load([]byte(header))
type PlanCache struct {
	mu    sync.RWMutex
	size  int
	byKey map[[sha256.Size]byte]*cacheEntry
	ring  []*cacheEntry // the clock: entries in insertion slots
	hand  int
}

type cacheEntry struct {
	key  [sha256.Size]byte
	plan *Plan
	err  error
	used atomic.Bool // read since the clock hand last passed
}

// NewPlanCache returns a PlanCache that holds at most size configs (DefaultCacheSize when size <= 0).
func NewPlanCache(size int) *PlanCache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	return &PlanCache{size: size, byKey: make(map[[sha256.Size]byte]*cacheEntry, size), ring: make([]*cacheEntry, 0, size)}
}

// Load returns the Plan of the config text raw, or its validation error, as package-level Load does,
// compiling it only when this text is not cached. Concurrent first loads of one text may both compile;
// they then return the same cached result.
func (c *PlanCache) Load(raw []byte) (*Plan, error) {
	key := sha256.Sum256(raw)
	if e := c.hit(key); e != nil {
		return e.plan, e.err
	}
	plan, err := load(raw, key)

	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byKey[key]; e != nil { // another caller got here first: share its result
		return e.plan, e.err
	}
	e := &cacheEntry{key: key, plan: plan, err: err}
	if len(c.ring) < c.size {
		c.ring = append(c.ring, e)
	} else {
		c.evictAndPlace(e)
	}
	c.byKey[key] = e
	return plan, err
}

// LoadString is Load for a config held in a string (a header): a hit makes no copy of the text.
func (c *PlanCache) LoadString(raw string) (*Plan, error) {
	key := sha256.Sum256(unsafe.Slice(unsafe.StringData(raw), len(raw))) // read only: the string is not changed
	if e := c.hit(key); e != nil {
		return e.plan, e.err
	}
	return c.Load([]byte(raw))
}

// hit returns the cached entry of key, marked as used, or nil.
func (c *PlanCache) hit(key [sha256.Size]byte) *cacheEntry {
	c.mu.RLock()
	e := c.byKey[key]
	c.mu.RUnlock()
	if e != nil && !e.used.Load() { // avoid writing the shared cache line on every hit
		e.used.Store(true)
	}
	return e
}

// evictAndPlace replaces the first entry at or after the hand that was not used since the hand last passed,
// clearing the used marks it passes over. Hits mark entries without the write lock, so after two turns of the
// clock it evicts where the hand stands, whatever the mark.
func (c *PlanCache) evictAndPlace(e *cacheEntry) {
	for turns := 0; ; turns++ {
		old := c.ring[c.hand]
		if old.used.Load() && turns < 2*len(c.ring) {
			old.used.Store(false)
			c.hand = (c.hand + 1) % len(c.ring)
			continue
		}
		delete(c.byKey, old.key)
		c.ring[c.hand] = e
		c.hand = (c.hand + 1) % len(c.ring)
		return
	}
}

// Len returns the number of cached configs.
func (c *PlanCache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.byKey)
}
