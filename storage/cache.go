package storage

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/klauspost/compress/zstd"
)

// Tables of the response cache (key layout also in keys.go):
//
//	cache/<workspace-id>/<key-hex>                     CachedAnswer: the 32-byte exact-match key of runtime/cache
//	semcache/<workspace-id>/<partition-hex>/<key-hex>  CachedVector: a semantic-cache embedding, by its 16-byte
//	                                                   partition and the exact key of the answer it points at
//
// Unlike the other tables, their values are binary (cacheValueVersion), not JSON, and they are written with
// pebble.NoSync: see CacheStore.
const (
	tableCache    = "cache"
	tableSemCache = "semcache"
)

// CacheKeySize and CachePartitionSize are the sizes of the cache's exact-match keys and semantic partitions.
const (
	CacheKeySize       = 32
	CachePartitionSize = 16
)

// MaxCachedBody is the largest answer body Put accepts. It is also the decoder's memory limit, so a corrupt
// value cannot make Get allocate without bound.
const MaxCachedBody = 64 << 20

// sweepBatch bounds the entries one Sweep call examines.
const sweepBatch = 10_000

// cacheValueVersion is the first byte of every cache value. Both kinds start with the version and then the
// expiry (8 bytes, big-endian Unix nanoseconds), so Sweep reads the expiry of either without decoding the rest:
//
//	answer: version, expires, created (8 bytes), uvarint status, uvarint len + content type, zstd frame of the body
//	vector: version, expires, created (8 bytes), uvarint dimension, dimension × float32 little-endian
const cacheValueVersion = 1

const cacheHeaderSize = 1 + 8 + 8

// CachedAnswer is a stored provider answer. ExpiresAt is required: an answer never lives for ever.
type CachedAnswer struct {
	Status      int
	ContentType string
	Body        []byte
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// CachedVector is a stored semantic-cache entry: the embedding of a request's query text and the exact-match
// key of the answer it leads to. It is kept so that the semantic index can be rebuilt after a restart.
type CachedVector struct {
	Key       [CacheKeySize]byte
	Vector    []float32
	CreatedAt time.Time
	ExpiresAt time.Time
}

// CacheRemote is a store of answers shared by every replica (runtime/redisstate over Redis). Keys are the
// engine's keys (cache/<workspace-id>/<key-hex>), values the engine's encoding; an answer is kept for ttl. Each
// call is bounded by the remote itself. An error is a miss or a dropped write for the caller: the cache never
// fails a request.
type CacheRemote interface {
	Get(key string) (value []byte, ok bool, err error)
	Set(key string, value []byte, ttl time.Duration) error
	Delete(key string) error
}

// DefaultRemoteHotLife is how long a replica serves an answer from its memory before asking the remote again
// (UseRemote): an answer another replica replaced (a force-refresh) or deleted is served at most this much
// longer here, while a popular answer costs a remote round trip and a decode once per this period, not on
// every hit.
const DefaultRemoteHotLife = 2 * time.Second

// UseRemote moves the answers to r: Get, Put and Delete of answers go to it, and this replica keeps a decoded
// answer in memory for at most hotLife (0: never; DefaultRemoteHotLife is the usual choice) since another
// replica may replace it. Vectors stay in the engine (shared when the engine is). Call it before the store
// serves requests.
func (c *CacheStore) UseRemote(r CacheRemote, hotLife time.Duration) {
	c.remote = r
	c.hot.clear()
	c.hot.life, c.hot.off = hotLife, hotLife <= 0
}

// CacheStore holds the response cache of runtime/cache: answers by exact-match key, and the vectors of the
// semantic index. It is safe for concurrent use.
//
// A cache can be rebuilt from the providers, so its writes use pebble.NoSync: they return once pebble has them
// in its memtable and write-ahead log buffer, without waiting for the disk. A crash may lose the last cache
// writes, which only costs a few misses; it never loses user data, whose writes stay synced. Answer bodies are
// compressed with zstd (one shared encoder and decoder, whose EncodeAll and DecodeAll are safe for concurrent
// use). An expired entry reads as a miss; Sweep deletes expired entries, bounded work per call.
//
// With a remote (UseRemote: Redis, when replicas run), answers live there instead, in the same encoding and under
// the same key, and the engine keeps only the semantic vectors.
type CacheStore struct {
	s *Store

	codecOnce sync.Once
	enc       *zstd.Encoder
	dec       *zstd.Decoder

	hot hotAnswers // the answers used last, decoded (cache_hot.go)

	// remote holds the answers instead of the engine when set (UseRemote): shared by every replica.
	remote CacheRemote

	sweepMu    sync.Mutex
	sweepTable int    // index into sweepTables of the table being swept
	sweepFrom  []byte // the key the next Sweep starts at; nil: the start of sweepTables[sweepTable]
}

var sweepTables = [...]string{tableCache, tableSemCache}

// codec builds the zstd encoder and decoder on first use, so a gateway without caching never pays for them.
func (c *CacheStore) codec() (*zstd.Encoder, *zstd.Decoder) {
	c.codecOnce.Do(func() {
		var err error
		// SpeedFastest: cached answers are JSON, which compresses well even at the fastest level, and Put runs
		// while a caller waits. The options are constants, so an error here is a bug.
		if c.enc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithLowerEncoderMem(true)); err != nil {
			panic("storage: zstd encoder: " + err.Error())
		}
		if c.dec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(MaxCachedBody)); err != nil {
			panic("storage: zstd decoder: " + err.Error())
		}
	})
	return c.enc, c.dec
}

// cacheKey is cache/<workspace-id>/<key-hex>.
func cacheKey(ws string, k *[CacheKeySize]byte) []byte {
	b := make([]byte, 0, len(tableCache)+2+len(ws)+2*CacheKeySize)
	b = append(append(append(b, tableCache...), '/'), ws...)
	return hex.AppendEncode(append(b, '/'), k[:])
}

// semPrefix is semcache/<workspace-id>/<partition-hex>/.
func semPrefix(ws string, p *[CachePartitionSize]byte, extra int) []byte {
	b := make([]byte, 0, len(tableSemCache)+3+len(ws)+2*CachePartitionSize+extra)
	b = append(append(append(b, tableSemCache...), '/'), ws...)
	return append(hex.AppendEncode(append(b, '/'), p[:]), '/')
}

// semKey is semcache/<workspace-id>/<partition-hex>/<key-hex>.
func semKey(ws string, p *[CachePartitionSize]byte, k *[CacheKeySize]byte) []byte {
	return hex.AppendEncode(semPrefix(ws, p, 2*CacheKeySize), k[:])
}

func appendCacheHeader(b []byte, created, expires time.Time) []byte {
	b = append(b, cacheValueVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(expires.UnixNano()))
	return binary.BigEndian.AppendUint64(b, uint64(created.UnixNano()))
}

var errBadCacheValue = errors.New("malformed cache value")

// cacheHeader reads the version and times every cache value starts with.
func cacheHeader(v []byte) (created, expires time.Time, rest []byte, err error) {
	if len(v) < cacheHeaderSize || v[0] != cacheValueVersion {
		return time.Time{}, time.Time{}, nil, errBadCacheValue
	}
	expires = time.Unix(0, int64(binary.BigEndian.Uint64(v[1:9])))
	created = time.Unix(0, int64(binary.BigEndian.Uint64(v[9:17])))
	return created, expires, v[cacheHeaderSize:], nil
}

// Get returns the answer stored under key, or ok=false when there is none or it has expired at now. A value
// that does not decode is reported as an error, as is a remote that failed; callers treat that as a miss too.
func (c *CacheStore) Get(ws string, key [CacheKeySize]byte, now time.Time) (*CachedAnswer, bool, error) {
	if !ValidID(ws) {
		return nil, false, nil
	}
	if a := c.hot.get(ws, &key); a != nil {
		if !now.Before(a.ExpiresAt) {
			return nil, false, nil
		}
		return a, true, nil
	}
	k := cacheKey(ws, &key)
	var v []byte
	if c.remote != nil {
		var ok bool
		var err error
		if v, ok, err = c.remote.Get(string(k)); err != nil {
			return nil, false, fmt.Errorf("storage: get %s from the shared cache: %w", k, err)
		} else if !ok {
			return nil, false, nil
		}
	} else {
		var closer io.Closer
		var err error
		v, closer, err = c.s.db.Get(k)
		if errors.Is(err, pebble.ErrNotFound) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("storage: get %s: %w", k, err)
		}
		defer closer.Close()
	}
	a, err := c.decodeAnswer(v, now)
	if err != nil || a == nil {
		if err != nil {
			err = fmt.Errorf("storage: decode %s: %w", k, err)
		}
		return nil, false, err
	}
	c.hot.put(ws, &key, a)
	return a, true, nil
}

// decodeAnswer reads an answer's value; nil when it has expired at now.
func (c *CacheStore) decodeAnswer(v []byte, now time.Time) (*CachedAnswer, error) {
	created, expires, rest, err := cacheHeader(v)
	if err != nil {
		return nil, err
	}
	if !now.Before(expires) {
		return nil, nil
	}
	status, n := binary.Uvarint(rest)
	if n <= 0 || status > math.MaxInt32 {
		return nil, errBadCacheValue
	}
	rest = rest[n:]
	ctLen, n := binary.Uvarint(rest)
	if n <= 0 || ctLen > uint64(len(rest)-n) {
		return nil, errBadCacheValue
	}
	rest = rest[n:]
	ct := string(rest[:ctLen])
	_, dec := c.codec()
	body, err := dec.DecodeAll(rest[ctLen:], nil)
	if err != nil {
		return nil, err
	}
	return &CachedAnswer{Status: int(status), ContentType: ct, Body: body, CreatedAt: created, ExpiresAt: expires}, nil
}

// Put stores a (replacing any earlier answer under key), without waiting for the disk. a.CreatedAt defaults
// to the store's clock.
func (c *CacheStore) Put(ws string, key [CacheKeySize]byte, a *CachedAnswer) error {
	if err := CheckID("workspace id", ws); err != nil {
		return err
	}
	if a.ExpiresAt.IsZero() {
		return errors.New("storage: cached answer without expiry")
	}
	if len(a.Body) > MaxCachedBody {
		return fmt.Errorf("storage: cached answer of %d bytes exceeds %d", len(a.Body), MaxCachedBody)
	}
	if a.Status < 0 || a.Status > math.MaxInt32 {
		return fmt.Errorf("storage: cached answer with status %d", a.Status)
	}
	created := a.CreatedAt
	if created.IsZero() {
		created = c.s.now()
	}
	enc, _ := c.codec()
	v := make([]byte, 0, cacheHeaderSize+2*binary.MaxVarintLen64+len(a.ContentType)+len(a.Body)/3+64)
	v = appendCacheHeader(v, created, a.ExpiresAt)
	v = binary.AppendUvarint(v, uint64(a.Status))
	v = append(binary.AppendUvarint(v, uint64(len(a.ContentType))), a.ContentType...)
	v = enc.EncodeAll(a.Body, v)
	k := cacheKey(ws, &key)
	if c.remote != nil {
		// The remote's clock is its own: it gets the answer's remaining life, from the store's clock.
		ttl := a.ExpiresAt.Sub(c.s.now())
		if ttl < time.Millisecond { // Redis's least expiry; an answer expiring sooner is not worth the trip
			c.hot.drop(ws, &key)
			return nil
		}
		if err := c.remote.Set(string(k), v, ttl); err != nil {
			c.hot.drop(ws, &key)
			return fmt.Errorf("storage: put %s in the shared cache: %w", k, err)
		}
	} else if err := c.s.db.Set(k, v, pebble.NoSync); err != nil {
		c.hot.drop(ws, &key)
		return fmt.Errorf("storage: put %s: %w", k, err)
	}
	stored := *a
	stored.CreatedAt = created
	c.hot.put(ws, &key, &stored)
	return nil
}

// Delete removes the answer under key, if any.
func (c *CacheStore) Delete(ws string, key [CacheKeySize]byte) error {
	if !ValidID(ws) {
		return nil
	}
	c.hot.drop(ws, &key)
	if c.remote != nil {
		return c.remote.Delete(string(cacheKey(ws, &key)))
	}
	return c.s.db.Delete(cacheKey(ws, &key), pebble.NoSync)
}

// PutVector stores a semantic-cache entry of partition p, replacing any under the same key. v.CreatedAt
// defaults to the store's clock; v.ExpiresAt is required.
func (c *CacheStore) PutVector(ws string, p [CachePartitionSize]byte, v *CachedVector) error {
	if err := CheckID("workspace id", ws); err != nil {
		return err
	}
	if v.ExpiresAt.IsZero() {
		return errors.New("storage: cached vector without expiry")
	}
	created := v.CreatedAt
	if created.IsZero() {
		created = c.s.now()
	}
	b := make([]byte, 0, cacheHeaderSize+binary.MaxVarintLen64+4*len(v.Vector))
	b = appendCacheHeader(b, created, v.ExpiresAt)
	b = binary.AppendUvarint(b, uint64(len(v.Vector)))
	for _, f := range v.Vector {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	k := semKey(ws, &p, &v.Key)
	if err := c.s.db.Set(k, b, pebble.NoSync); err != nil {
		return fmt.Errorf("storage: put %s: %w", k, err)
	}
	return nil
}

// DeleteVector removes the semantic-cache entry of partition p under key, if any.
func (c *CacheStore) DeleteVector(ws string, p [CachePartitionSize]byte, key [CacheKeySize]byte) error {
	if !ValidID(ws) {
		return nil
	}
	return c.s.db.Delete(semKey(ws, &p, &key), pebble.NoSync)
}

// ListVectors returns the semantic-cache entries of partition p that have not expired at now, in key order.
// Entries that do not decode are skipped (Sweep deletes them).
func (c *CacheStore) ListVectors(ws string, p [CachePartitionSize]byte, now time.Time) ([]CachedVector, error) {
	if !ValidID(ws) {
		return nil, nil
	}
	pre := semPrefix(ws, &p, 0)
	var out []CachedVector
	err := c.s.scan(pre, func(k, v []byte) error {
		var cv CachedVector
		if !decodeVector(k[len(pre):], v, &cv) || !now.Before(cv.ExpiresAt) {
			return nil
		}
		out = append(out, cv)
		return nil
	})
	return out, err
}

func decodeVector(keyHex, v []byte, cv *CachedVector) bool {
	if len(keyHex) != 2*CacheKeySize {
		return false
	}
	if _, err := hex.Decode(cv.Key[:], keyHex); err != nil {
		return false
	}
	created, expires, rest, err := cacheHeader(v)
	if err != nil {
		return false
	}
	dim, n := binary.Uvarint(rest)
	if n <= 0 || dim == 0 || dim > uint64(len(rest)-n)/4 || uint64(len(rest)-n) != 4*dim {
		return false
	}
	rest = rest[n:]
	cv.Vector = make([]float32, dim)
	for i := range cv.Vector {
		cv.Vector[i] = math.Float32frombits(binary.LittleEndian.Uint32(rest[4*i:]))
	}
	cv.CreatedAt, cv.ExpiresAt = created, expires
	return true
}

// Sweep deletes cache entries (answers and vectors) that have expired at now, and any that do not decode. One
// call examines at most 10,000 entries, continuing where the previous call stopped and wrapping around at the
// end, so it is cheap enough to call every minute from a ticker; it stops early once it has been over every
// entry. It returns how many entries it deleted.
func (c *CacheStore) Sweep(now time.Time) (deleted int, err error) {
	c.sweepMu.Lock()
	defer c.sweepMu.Unlock()
	budget := sweepBatch
	for wrapped := 0; budget > 0 && wrapped < len(sweepTables); {
		lo := prefix(sweepTables[c.sweepTable])
		hi := prefixEnd(lo)
		if c.sweepFrom != nil {
			lo = c.sweepFrom
		}
		n, d, next, err := c.sweepRange(lo, hi, budget, now)
		deleted += d
		if err != nil {
			return deleted, err
		}
		budget -= n
		c.sweepFrom = next
		if next == nil {
			c.sweepTable = (c.sweepTable + 1) % len(sweepTables)
			wrapped++
		}
	}
	return deleted, nil
}

// sweepRange examines up to budget entries in [lo, hi) and deletes the expired ones. next is the first key it
// did not examine, or nil when it reached hi.
func (c *CacheStore) sweepRange(lo, hi []byte, budget int, now time.Time) (examined, deleted int, next []byte, err error) {
	it, err := c.s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, 0, nil, fmt.Errorf("storage: sweep cache: %w", err)
	}
	b := c.s.db.NewBatch()
	defer b.Close()
	nowNano := now.UnixNano()
	for it.First(); it.Valid(); it.Next() {
		if examined == budget {
			next = append([]byte(nil), it.Key()...)
			break
		}
		examined++
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return examined, 0, nil, fmt.Errorf("storage: sweep cache: %w", err)
		}
		if len(v) < cacheHeaderSize || v[0] != cacheValueVersion || int64(binary.BigEndian.Uint64(v[1:9])) <= nowNano {
			if err := b.Delete(it.Key(), nil); err != nil {
				it.Close()
				return examined, 0, nil, err
			}
			deleted++
		}
	}
	if err := it.Close(); err != nil {
		return examined, 0, nil, fmt.Errorf("storage: sweep cache: %w", err)
	}
	if deleted > 0 {
		if err := b.Commit(pebble.NoSync); err != nil {
			return examined, 0, nil, fmt.Errorf("storage: sweep cache: %w", err)
		}
	}
	return examined, deleted, next, nil
}
