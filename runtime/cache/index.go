package cache

import (
	"cmp"
	"errors"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgw/gateway/storage"
)

// Defaults of IndexOptions.
const (
	// DefaultThreshold is a conservative cosine similarity for a semantic hit: near-paraphrases of one
	// question score above it with common embedding models, different questions on one topic mostly below. A
	// wrong hit is worse than a miss.
	DefaultThreshold float32 = 0.95
	// DefaultGraphThreshold is the partition size up to which Search scans every vector; above it a partition
	// gets an HNSW graph.
	DefaultGraphThreshold  = 2000
	DefaultMaxPerPartition = 50_000
	DefaultMaxEntries      = 50_000
	DefaultMaxPartitions   = 4096
	// DefaultRefreshAfter is the usual IndexOptions.RefreshAfter over a store replicas share.
	DefaultRefreshAfter = 5 * time.Second
)

// purgeEvery is how often Add drops the expired entries of the partition it writes to.
const purgeEvery = time.Minute

// VectorStore keeps the semantic index across restarts; *storage.CacheStore satisfies it.
type VectorStore interface {
	PutVector(ws string, p [storage.CachePartitionSize]byte, v *storage.CachedVector) error
	DeleteVector(ws string, p [storage.CachePartitionSize]byte, key [storage.CacheKeySize]byte) error
	ListVectors(ws string, p [storage.CachePartitionSize]byte, now time.Time) ([]storage.CachedVector, error)
}

var _ VectorStore = (*storage.CacheStore)(nil)

// IndexOptions configure NewIndex. Zero values take the defaults.
type IndexOptions struct {
	// GraphThreshold: a partition (of one vector dimension) holding more entries than this is searched through
	// an HNSW graph instead of a full scan; it goes back to scanning below half of it. Default 2000.
	GraphThreshold int
	// MaxPerPartition bounds the entries of one partition; adding beyond it evicts the oldest (from memory and
	// from the VectorStore). Default 50,000.
	MaxPerPartition int
	// MaxEntries bounds the entries held in memory over all partitions; beyond it, the least recently used
	// partitions are unloaded (they stay in the VectorStore and load again on their next use). Default 50,000.
	// MaxPerPartition is capped at MaxEntries.
	MaxEntries int
	// MaxPartitions bounds the partitions held in memory, unloaded the same way. Default 4096.
	MaxPartitions int
	// RefreshAfter, when positive, makes a search that misses reload its partition from the VectorStore if the
	// partition was last loaded longer ago than this, and search again: other replicas add vectors to a shared
	// store (--postgres) that this index would otherwise never see. Reloads only add entries, at most one per
	// partition per period, without blocking searches meanwhile. 0: a partition is loaded once (one process owns
	// the store).
	RefreshAfter time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger receives load and persistence failures. Default: discarded.
	Logger *slog.Logger
}

// Index is the semantic cache's vector index: per (workspace, partition), a set of unit vectors, each with the
// exact Key of a cached answer and an expiry. Search finds the nearest unexpired vector by cosine similarity.
//
// A partition is scanned (a dot product per entry) while it holds up to GraphThreshold entries and searched
// through an HNSW graph (hnsw.go; cosine distance) above that; the switch is automatic, both ways. A graph is
// insert-only: a removed entry stays as an unreachable node until the graph is rebuilt, which happens when a
// quarter of its nodes are gone. Builds run on a goroutine of their own while searches go on with the previous
// method; an insert into an existing graph runs inside Add and holds the partition's lock for about a
// millisecond. Vectors of different lengths (an embedding model changed) live side by side and are never
// compared.
//
// Memory is bounded: an entry costs 4×dimension bytes for its vector and about 700 bytes of bookkeeping and
// graph links, and removed entries awaiting a rebuild add at most a quarter, so with the defaults (at most
// 50,000 entries in memory) 1536-dimension vectors take at most about 430 MB and 256-dimension ones about
// 110 MB. Within a partition the oldest entry goes first; over all partitions, the least recently used
// partition is unloaded.
//
// On its first use, a partition is loaded from the VectorStore (unexpired entries, newest first up to
// MaxPerPartition), so semantic hits survive a restart; Add writes through to it. An Index is safe for
// concurrent use: searches of one partition run in parallel, an Add excludes them for a moment.
type Index struct {
	store VectorStore
	opts  IndexOptions
	log   *slog.Logger

	mu    sync.Mutex // guards parts
	parts map[partID]*part

	total  atomic.Int64  // entries in loaded partitions
	ticks  atomic.Uint64 // the LRU clock
	nextID atomic.Uint64
	builds sync.WaitGroup // graph builds in flight, for tests
}

type partID struct {
	ws string
	p  PartitionKey
}

// part is one partition in memory. Its fields are guarded by mu, except lastUse.
type part struct {
	id      partID
	mu      sync.RWMutex
	loaded  atomic.Bool
	evicted bool // unloaded from the Index: a writer must fetch the partition again
	lastUse atomic.Uint64

	sets      []*vecSet // one per vector length; usually one
	byKey     map[Key]*entry
	fifo      []*entry // insertion order; removed entries are skipped when reached
	live      int
	lastPurge time.Time

	loadedAt   time.Time // the last load or refresh from the store (IndexOptions.RefreshAfter)
	refreshing bool
}

// vecSet holds the entries of one vector length.
type vecSet struct {
	dim      int
	live     []*entry // unordered; entry.slot is the position
	byID     map[uint64]*entry
	graph    *graph // nil while the set is scanned
	dead     int    // graph nodes whose entry is gone
	building bool
}

type entry struct {
	id      uint64
	key     Key
	vec     []float32 // unit length; never modified, so a graph build may read it without the lock
	created int64     // Unix nanoseconds
	expires int64
	set     *vecSet
	slot    int
	dead    bool
}

// NewIndex returns an empty index over store (nil: memory only, lost on restart).
//
//	semantic := cache.NewIndex(store.Cache, cache.IndexOptions{Logger: log})
func NewIndex(store VectorStore, opts IndexOptions) *Index {
	if cs, ok := store.(*storage.CacheStore); ok && cs == nil {
		store = nil // a nil *CacheStore in the interface is no store, not a store to call
	}
	if opts.GraphThreshold <= 0 {
		opts.GraphThreshold = DefaultGraphThreshold
	}
	if opts.MaxPerPartition <= 0 {
		opts.MaxPerPartition = DefaultMaxPerPartition
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultMaxEntries
	}
	opts.MaxPerPartition = min(opts.MaxPerPartition, opts.MaxEntries)
	if opts.MaxPartitions <= 0 {
		opts.MaxPartitions = DefaultMaxPartitions
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Index{store: store, opts: opts, log: log, parts: map[partID]*part{}}
}

// ErrBadVector is returned by Add for an empty vector, a zero vector, or one holding NaN or an infinity.
var ErrBadVector = errors.New("cache: vector cannot be normalised")

// Search returns the exact key of the unexpired entry of the partition nearest to vec, with its cosine
// similarity, when that similarity is at least threshold. On a miss, score is the best similarity seen
// (useful to tune the threshold). A vector of another length than the partition's entries, or one that
// cannot be normalised, misses.
func (x *Index) Search(ws string, p PartitionKey, vec []float32, threshold float32) (key Key, score float32, ok bool) {
	q := normalize(vec)
	if q == nil {
		return Key{}, 0, false
	}
	pt := x.partition(ws, p)
	key, score, ok = x.search(pt, q, threshold)
	if !ok && x.refresh(pt) {
		key, score, ok = x.search(pt, q, threshold)
	}
	return key, score, ok
}

func (x *Index) search(pt *part, q []float32, threshold float32) (key Key, score float32, ok bool) {
	now := x.opts.Now().UnixNano()
	pt.mu.RLock()
	defer pt.mu.RUnlock()
	s := pt.set(len(q))
	if s == nil {
		return Key{}, 0, false
	}
	best, bestScore := (*entry)(nil), float32(math.Inf(-1))
	consider := func(e *entry) {
		if e == nil || e.expires <= now {
			return
		}
		if d := dot(q, e.vec); d > bestScore {
			best, bestScore = e, d
		}
	}
	if s.graph != nil {
		for _, c := range s.graph.search(q, 10) {
			consider(s.byID[s.graph.nodes[c.node].id])
		}
	} else {
		for _, e := range s.live {
			consider(e)
		}
	}
	if best == nil {
		return Key{}, 0, false
	}
	if bestScore < threshold {
		return Key{}, bestScore, false
	}
	return best.key, bestScore, true
}

// refresh adds to a partition the entries the store has and it lacks (other replicas' Adds) when it was last
// loaded more than RefreshAfter ago. It reports whether it added any. One refresh of a partition runs at a time,
// and the store is read without the partition's lock, so searches go on meanwhile.
func (x *Index) refresh(pt *part) bool {
	if x.opts.RefreshAfter <= 0 || x.store == nil {
		return false
	}
	now := x.opts.Now()
	pt.mu.Lock()
	due := !pt.refreshing && !pt.evicted && now.Sub(pt.loadedAt) >= x.opts.RefreshAfter
	if due {
		pt.refreshing, pt.loadedAt = true, now
	}
	pt.mu.Unlock()
	if !due {
		return false
	}
	vs, err := x.store.ListVectors(pt.id.ws, [16]byte(pt.id.p), now)
	if err != nil {
		x.log.Warn("semantic cache: refresh partition", "workspace", pt.id.ws, "partition", pt.id.p.String(), "error", err)
	}
	added := x.merge(pt, vs)
	if added > 0 {
		x.enforceBudget()
	}
	return added > 0
}

// merge adds the listed entries a partition lacks, or holds older versions of, and ends its refresh.
func (x *Index) merge(pt *part, vs []storage.CachedVector) (added int) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	pt.refreshing = false
	if pt.evicted {
		return 0
	}
	for _, v := range vs {
		if e := pt.byKey[v.Key]; e != nil && e.created >= v.CreatedAt.UnixNano() {
			continue
		} else if e != nil {
			x.remove(pt, e) // replaced on another replica (a force-refresh)
		}
		if q := normalize(v.Vector); q != nil {
			x.insert(pt, v.Key, q, v.CreatedAt.UnixNano(), v.ExpiresAt.UnixNano())
			added++
		}
	}
	for pt.live > x.opts.MaxPerPartition {
		x.evictOldest(pt)
	}
	x.maintain(pt)
	return added
}

// Add records that the answer under key is the answer to the query whose embedding is vec, until expires. An
// entry of the partition with the same key is replaced. The vector is normalised, kept in memory and written
// to the VectorStore; an error means it could not be written there (it is in memory all the same).
func (x *Index) Add(ws string, p PartitionKey, vec []float32, key Key, expires time.Time) error {
	q := normalize(vec)
	if q == nil {
		return ErrBadVector
	}
	now := x.opts.Now()
	if !expires.After(now) {
		return nil
	}
	var err error
	if x.store != nil {
		err = x.store.PutVector(ws, p, &storage.CachedVector{Key: key, Vector: q, CreatedAt: now, ExpiresAt: expires})
	}
	var evicted []Key
	for {
		pt := x.partition(ws, p)
		pt.mu.Lock()
		if pt.evicted {
			pt.mu.Unlock()
			continue
		}
		if old := pt.byKey[key]; old != nil {
			x.remove(pt, old)
		}
		x.insert(pt, key, q, now.UnixNano(), expires.UnixNano())
		for pt.live > x.opts.MaxPerPartition {
			evicted = append(evicted, x.evictOldest(pt).key)
		}
		if now.Sub(pt.lastPurge) > purgeEvery {
			x.purge(pt, now.UnixNano())
		}
		x.maintain(pt)
		pt.mu.Unlock()
		break
	}
	for _, k := range evicted {
		if x.store != nil {
			if derr := x.store.DeleteVector(ws, p, k); derr != nil {
				x.log.Warn("semantic cache: delete evicted vector", "workspace", ws, "error", derr)
			}
		}
	}
	x.enforceBudget()
	return err
}

// Sweep drops the entries that have expired at now from memory, and partitions left empty. The VectorStore
// is swept by its owner (storage.CacheStore.Sweep). It returns how many entries it dropped.
func (x *Index) Sweep(now time.Time) int {
	x.mu.Lock()
	parts := make([]*part, 0, len(x.parts))
	for _, pt := range x.parts {
		parts = append(parts, pt)
	}
	x.mu.Unlock()
	dropped := 0
	for _, pt := range parts {
		pt.mu.Lock()
		before := pt.live
		x.purge(pt, now.UnixNano())
		dropped += before - pt.live
		x.maintain(pt)
		empty := pt.live == 0 && pt.loaded.Load() && !pt.evicted
		pt.mu.Unlock()
		if empty {
			x.unload(pt)
		}
	}
	return dropped
}

// Len returns the number of entries held in memory.
func (x *Index) Len() int { return int(x.total.Load()) }

// partition returns the loaded partition, loading it from the store on first use.
func (x *Index) partition(ws string, p PartitionKey) *part {
	id := partID{ws, p}
	x.mu.Lock()
	pt := x.parts[id]
	if pt == nil {
		pt = &part{id: id, byKey: map[Key]*entry{}}
		x.parts[id] = pt
	}
	n := len(x.parts)
	x.mu.Unlock()
	pt.lastUse.Store(x.ticks.Add(1))
	if !pt.loaded.Load() {
		x.load(pt)
	}
	// A load brings entries in without an Add: the budget is checked here too, or searches alone could grow
	// the index past MaxEntries.
	if n > x.opts.MaxPartitions || x.total.Load() > int64(x.opts.MaxEntries) {
		x.enforceBudget()
	}
	return pt
}

// load fills a partition from the store: the unexpired entries, newest first up to MaxPerPartition (older
// ones are deleted from the store).
func (x *Index) load(pt *part) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if pt.loaded.Load() || pt.evicted {
		return
	}
	defer pt.loaded.Store(true)
	if x.store == nil {
		return
	}
	now := x.opts.Now()
	vs, err := x.store.ListVectors(pt.id.ws, [16]byte(pt.id.p), now)
	if err != nil {
		// The partition starts empty; its stored entries come back on its next load.
		x.log.Warn("semantic cache: load partition", "workspace", pt.id.ws, "partition", pt.id.p.String(), "error", err)
		return
	}
	slices.SortFunc(vs, func(a, b storage.CachedVector) int { return a.CreatedAt.Compare(b.CreatedAt) })
	if over := len(vs) - x.opts.MaxPerPartition; over > 0 {
		for _, v := range vs[:over] {
			if err := x.store.DeleteVector(pt.id.ws, [16]byte(pt.id.p), v.Key); err != nil {
				x.log.Warn("semantic cache: delete old vector", "workspace", pt.id.ws, "error", err)
			}
		}
		vs = vs[over:]
	}
	for _, v := range vs {
		if q := normalize(v.Vector); q != nil && pt.byKey[v.Key] == nil {
			x.insert(pt, v.Key, q, v.CreatedAt.UnixNano(), v.ExpiresAt.UnixNano())
		}
	}
	pt.lastPurge, pt.loadedAt = now, now
	x.maintain(pt)
}

// set returns the partition's set of vectors of length dim, or nil.
func (pt *part) set(dim int) *vecSet {
	for _, s := range pt.sets {
		if s.dim == dim {
			return s
		}
	}
	return nil
}

// insert adds an entry; the caller holds pt.mu.
func (x *Index) insert(pt *part, key Key, q []float32, created, expires int64) {
	s := pt.set(len(q))
	if s == nil {
		s = &vecSet{dim: len(q), byID: map[uint64]*entry{}}
		pt.sets = append(pt.sets, s)
	}
	// IDs are taken under the lock, so a graph build knows the entries added after its snapshot: larger IDs.
	e := &entry{id: x.nextID.Add(1), key: key, vec: q, created: created, expires: expires, set: s, slot: len(s.live)}
	s.live = append(s.live, e)
	s.byID[e.id] = e
	if s.graph != nil {
		s.graph.insert(e.id, e.vec)
	}
	pt.byKey[key] = e
	pt.fifo = append(pt.fifo, e)
	pt.live++
	if !pt.evicted {
		x.total.Add(1)
	}
}

// remove drops an entry; the caller holds pt.mu. Its graph node stays until the next rebuild, unreachable
// through byID.
func (x *Index) remove(pt *part, e *entry) {
	s := e.set
	last := s.live[len(s.live)-1]
	s.live[e.slot], last.slot = last, e.slot
	s.live[len(s.live)-1] = nil
	s.live = s.live[:len(s.live)-1]
	delete(s.byID, e.id)
	if s.graph != nil {
		s.dead++
	}
	if pt.byKey[e.key] == e {
		delete(pt.byKey, e.key)
	}
	e.dead = true
	pt.live--
	if !pt.evicted {
		x.total.Add(-1)
	}
	if len(s.live) == 0 && !s.building {
		pt.sets = slices.DeleteFunc(pt.sets, func(o *vecSet) bool { return o == s })
	}
	// The fifo keeps dead entries until they reach its head; compact it when they dominate.
	if len(pt.fifo) > 64 && len(pt.fifo) > 2*pt.live {
		pt.fifo = slices.DeleteFunc(pt.fifo, func(e *entry) bool { return e.dead })
	}
}

// evictOldest removes and returns the partition's oldest live entry; the caller holds pt.mu and pt.live > 0.
func (x *Index) evictOldest(pt *part) *entry {
	for {
		e := pt.fifo[0]
		pt.fifo[0] = nil
		pt.fifo = pt.fifo[1:]
		if !e.dead {
			x.remove(pt, e)
			return e
		}
	}
}

// purge removes the entries expired at now; the caller holds pt.mu.
func (x *Index) purge(pt *part, now int64) {
	pt.lastPurge = time.Unix(0, now)
	for _, s := range slices.Clone(pt.sets) {
		for i := len(s.live) - 1; i >= 0; i-- {
			if i < len(s.live) && s.live[i].expires <= now {
				x.remove(pt, s.live[i])
			}
		}
	}
}

// maintain switches the partition's sets between scanning and a graph, and starts the graph builds that are
// due; the caller holds pt.mu.
func (x *Index) maintain(pt *part) {
	for _, s := range pt.sets {
		switch {
		case s.building:
		case s.graph == nil && len(s.live) > x.opts.GraphThreshold:
			x.build(pt, s)
		case s.graph != nil && len(s.live) <= x.opts.GraphThreshold/2:
			s.graph, s.dead = nil, 0
		case s.graph != nil && s.dead > len(s.live)/4:
			x.build(pt, s)
		}
	}
}

// build starts making a graph of the set's live entries on another goroutine; searches meanwhile use the
// set's current method, and Adds go on. When it is done, the entries added meanwhile join the new graph and it
// replaces the old one. The caller holds pt.mu.
func (x *Index) build(pt *part, s *vecSet) {
	s.building = true
	snapshot := slices.Clone(s.live)
	maxID := x.nextID.Load()
	x.builds.Add(1)
	go func() {
		defer x.builds.Done()
		g := newHNSW(maxID)
		for _, e := range snapshot {
			g.insert(e.id, e.vec)
		}
		pt.mu.Lock()
		defer pt.mu.Unlock()
		s.building = false
		if pt.evicted {
			return
		}
		if len(s.live) == 0 { // emptied meanwhile: remove kept it for us
			pt.sets = slices.DeleteFunc(pt.sets, func(o *vecSet) bool { return o == s })
			return
		}
		dead := 0
		for _, e := range snapshot {
			if e.dead {
				dead++
			}
		}
		for _, e := range s.live {
			if e.id > maxID {
				g.insert(e.id, e.vec)
			}
		}
		s.graph, s.dead = g, dead
		x.maintain(pt)
	}()
}

// enforceBudget unloads the least recently used partitions while the index holds more than MaxEntries entries
// or MaxPartitions partitions, down to 90 % of each so that the scan is not repeated on every call.
func (x *Index) enforceBudget() {
	x.mu.Lock()
	over := x.total.Load() > int64(x.opts.MaxEntries) || len(x.parts) > x.opts.MaxPartitions
	if !over {
		x.mu.Unlock()
		return
	}
	parts := make([]*part, 0, len(x.parts))
	for _, pt := range x.parts {
		parts = append(parts, pt)
	}
	x.mu.Unlock()
	slices.SortFunc(parts, func(a, b *part) int { return cmp.Compare(a.lastUse.Load(), b.lastUse.Load()) })
	entries, count := int64(x.opts.MaxEntries)*9/10, x.opts.MaxPartitions*9/10
	for i, pt := range parts {
		if i == len(parts)-1 || x.total.Load() <= entries && len(parts)-i <= count {
			break // keep at least the most recently used partition
		}
		x.unload(pt)
	}
}

// unload takes a partition out of memory; the VectorStore keeps its entries.
func (x *Index) unload(pt *part) {
	x.mu.Lock()
	if x.parts[pt.id] == pt {
		delete(x.parts, pt.id)
	}
	x.mu.Unlock()
	pt.mu.Lock()
	if !pt.evicted {
		pt.evicted = true
		x.total.Add(-int64(pt.live))
	}
	pt.mu.Unlock()
}

// normalize returns vec scaled to unit length, or nil when that is impossible.
func normalize(vec []float32) []float32 {
	var sum float64
	for _, f := range vec {
		sum += float64(f) * float64(f)
	}
	if len(vec) == 0 || sum == 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
		return nil
	}
	inv := 1 / math.Sqrt(sum)
	q := make([]float32, len(vec))
	for i, f := range vec {
		q[i] = float32(float64(f) * inv)
	}
	return q
}

// dot is the dot product of two vectors of one length: their cosine similarity when both are unit vectors.
// Eight accumulators and fixed-size windows (no bounds checks in the loop) make it about twice as fast as the
// plain loop; it is most of the cost of a search.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		x, y := a[i:i+8:i+8], b[i:i+8:i+8]
		s0 += x[0] * y[0]
		s1 += x[1] * y[1]
		s2 += x[2] * y[2]
		s3 += x[3] * y[3]
		s4 += x[4] * y[4]
		s5 += x[5] * y[5]
		s6 += x[6] * y[6]
		s7 += x[7] * y[7]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}
