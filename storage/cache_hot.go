package storage

import (
	"container/list"
	"sync"
	"time"
)

// hotAnswers keeps the answers read or written last, decoded, in front of pebble: a hit on a hot answer costs a
// map read instead of a pebble read (its block decompressed again once evicted from pebble's block cache, which
// the request log's writes keep churning) and a zstd decode of the body, about 9 µs a hit under load. It is
// bounded by the bytes of the bodies it holds; an answer larger than hotMaxAnswer is never kept. Entries carry
// their expiry and read as misses once expired, like stored ones. Bodies are shared: callers must not modify
// a CachedAnswer's Body (none does: answers are sent, replayed or judged, never changed in place).
//
// With a remote (CacheStore.UseRemote) another replica may replace or delete an answer this one holds, so an
// entry is then kept for at most life after it was read or written (off: none is kept).
type hotAnswers struct {
	life time.Duration // 0: until the answer expires; set before use
	off  bool

	mu      sync.Mutex
	entries map[hotKey]*list.Element // → *hotEntry
	order   list.List                // front: most recently used
	bytes   int
}

type hotKey struct {
	ws  string
	key [CacheKeySize]byte
}

type hotEntry struct {
	k    hotKey
	a    CachedAnswer
	kept time.Time // when life bounds the entry; monotonic, whatever clock the callers pin
}

const (
	hotMaxBytes  = 32 << 20
	hotMaxAnswer = 1 << 20
)

// get returns a copy of the answer under k (sharing its body), or nil.
func (h *hotAnswers) get(ws string, key *[CacheKeySize]byte) *CachedAnswer {
	h.mu.Lock()
	defer h.mu.Unlock()
	el, ok := h.entries[hotKey{ws, *key}]
	if !ok {
		return nil
	}
	e := el.Value.(*hotEntry)
	if h.life > 0 && time.Since(e.kept) >= h.life {
		h.remove(el)
		return nil
	}
	h.order.MoveToFront(el)
	a := e.a
	return &a
}

// put keeps a (a copy of the struct; the body is shared) under k, evicting the least recently used answers past
// the bound.
func (h *hotAnswers) put(ws string, key *[CacheKeySize]byte, a *CachedAnswer) {
	if h.off {
		return
	}
	k := hotKey{ws, *key}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.entries == nil {
		h.entries = make(map[hotKey]*list.Element)
	}
	if el, ok := h.entries[k]; ok {
		h.remove(el)
	}
	if len(a.Body) > hotMaxAnswer {
		return
	}
	e := &hotEntry{k: k, a: *a}
	if h.life > 0 {
		e.kept = time.Now()
	}
	h.entries[k] = h.order.PushFront(e)
	h.bytes += len(a.Body)
	for h.bytes > hotMaxBytes {
		h.remove(h.order.Back())
	}
}

// drop forgets the answer under k.
func (h *hotAnswers) drop(ws string, key *[CacheKeySize]byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if el, ok := h.entries[hotKey{ws, *key}]; ok {
		h.remove(el)
	}
}

// clear forgets every answer (a workspace's cache was deleted wholesale).
func (h *hotAnswers) clear() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.entries, h.bytes = nil, 0
	h.order.Init()
}

func (h *hotAnswers) remove(el *list.Element) {
	e := el.Value.(*hotEntry)
	delete(h.entries, e.k)
	h.bytes -= len(e.a.Body)
	h.order.Remove(el)
}
