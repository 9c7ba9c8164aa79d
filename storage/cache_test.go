package storage

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

func testCacheKey(s string) [CacheKeySize]byte { return sha256.Sum256([]byte(s)) }

func testPartition(s string) (p [CachePartitionSize]byte) {
	h := sha256.Sum256([]byte(s))
	copy(p[:], h[:])
	return p
}

func TestCachePutGet(t *testing.T) {
	clk := newFakeClock()
	s := openTest(t, nil, clk)
	ws := NewUUID()
	now := clk.Now()
	body := []byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("hello ", 300) + `"},"finish_reason":"stop"}]}`)
	tests := []struct {
		name string
		a    CachedAnswer
	}{
		{"json", CachedAnswer{Status: 200, ContentType: "application/json", Body: body, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}},
		{"empty body", CachedAnswer{Status: 204, ExpiresAt: now.Add(time.Minute)}},
		{"246", CachedAnswer{Status: 246, ContentType: "application/json; charset=utf-8", Body: []byte("{}"), ExpiresAt: now.Add(time.Minute)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := testCacheKey(tc.name)
			if err := s.Cache.Put(ws, k, &tc.a); err != nil {
				t.Fatal(err)
			}
			got, ok, err := s.Cache.Get(ws, k, now)
			if err != nil || !ok {
				t.Fatalf("Get = %v, %v", ok, err)
			}
			if got.Status != tc.a.Status || got.ContentType != tc.a.ContentType || !bytes.Equal(got.Body, tc.a.Body) {
				t.Fatalf("Get = %d %q %q, want %d %q %q", got.Status, got.ContentType, got.Body, tc.a.Status, tc.a.ContentType, tc.a.Body)
			}
			if !got.ExpiresAt.Equal(tc.a.ExpiresAt) {
				t.Fatalf("ExpiresAt = %v, want %v", got.ExpiresAt, tc.a.ExpiresAt)
			}
			if want := tc.a.CreatedAt; !want.IsZero() && !got.CreatedAt.Equal(want) || want.IsZero() && !got.CreatedAt.Equal(now) {
				t.Fatalf("CreatedAt = %v (want %v or the clock %v)", got.CreatedAt, want, now)
			}
			// Another workspace, another key: misses.
			if _, ok, err := s.Cache.Get(NewUUID(), k, now); ok || err != nil {
				t.Fatalf("other workspace: %v, %v", ok, err)
			}
			if _, ok, err := s.Cache.Get(ws, testCacheKey("other"), now); ok || err != nil {
				t.Fatalf("other key: %v, %v", ok, err)
			}
		})
	}
	// The body is compressed.
	raw, err := s.get(cacheKey(ws, new(testCacheKey("json"))))
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > len(body)/4 {
		t.Fatalf("stored %d bytes for a %d-byte body: not compressed", len(raw), len(body))
	}
}

func TestCacheExpiry(t *testing.T) {
	clk := newFakeClock()
	s := openTest(t, nil, clk)
	ws := NewUUID()
	k := testCacheKey("k")
	exp := clk.Now().Add(time.Minute)
	if err := s.Cache.Put(ws, k, &CachedAnswer{Status: 200, Body: []byte("x"), ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Cache.Get(ws, k, exp.Add(-time.Nanosecond)); !ok {
		t.Fatal("miss before expiry")
	}
	if _, ok, err := s.Cache.Get(ws, k, exp); ok || err != nil {
		t.Fatalf("at expiry: %v, %v; want a miss", ok, err)
	}
	// Force refresh: a new Put replaces the answer.
	if err := s.Cache.Put(ws, k, &CachedAnswer{Status: 200, Body: []byte("y"), ExpiresAt: exp.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if a, ok, _ := s.Cache.Get(ws, k, exp); !ok || string(a.Body) != "y" {
		t.Fatalf("after refresh: %v %v", a, ok)
	}
	if err := s.Cache.Delete(ws, k); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Cache.Get(ws, k, exp); ok {
		t.Fatal("hit after Delete")
	}
}

func TestCachePutRefuses(t *testing.T) {
	s := openTest(t, nil, nil)
	k := testCacheKey("k")
	exp := time.Now().Add(time.Hour)
	tests := []struct {
		name string
		ws   string
		a    CachedAnswer
	}{
		{"bad workspace", "a/b", CachedAnswer{Status: 200, ExpiresAt: exp}},
		{"no expiry", NewUUID(), CachedAnswer{Status: 200}},
		{"negative status", NewUUID(), CachedAnswer{Status: -1, ExpiresAt: exp}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.Cache.Put(tc.ws, k, &tc.a); err == nil {
				t.Fatal("Put succeeded")
			}
		})
	}
	if _, ok, err := s.Cache.Get("a/b", k, exp); ok || err != nil {
		t.Fatalf("Get with a bad workspace = %v, %v", ok, err)
	}
}

func TestCacheCorruptValue(t *testing.T) {
	s := openTest(t, nil, nil)
	ws := NewUUID()
	k := testCacheKey("k")
	for _, v := range [][]byte{nil, {9}, append(appendCacheHeader(nil, time.Now(), time.Now().Add(time.Hour)), 200, 1, 2, 'a', 'b', 'n', 'o', 't', 'z')} {
		if err := s.db.Set(cacheKey(ws, &k), v, pebble.NoSync); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.Cache.Get(ws, k, time.Now()); ok || err == nil {
			t.Fatalf("Get of %q = %v, %v; want an error", v, ok, err)
		}
	}
	// Sweep deletes what does not decode.
	if err := s.db.Set(cacheKey(ws, &k), []byte{9}, pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Cache.Sweep(time.Now()); n != 1 || err != nil {
		t.Fatalf("Sweep = %d, %v", n, err)
	}
}

func TestCacheVectors(t *testing.T) {
	clk := newFakeClock()
	s := openTest(t, nil, clk)
	ws := NewUUID()
	p, q := testPartition("p"), testPartition("q")
	now := clk.Now()
	vecs := []CachedVector{
		{Key: testCacheKey("a"), Vector: []float32{1, 0, 0}, ExpiresAt: now.Add(time.Hour)},
		{Key: testCacheKey("b"), Vector: []float32{0, 1, 0, 0}, CreatedAt: now.Add(-time.Minute), ExpiresAt: now.Add(2 * time.Hour)},
		{Key: testCacheKey("c"), Vector: []float32{0, 0, 1}, ExpiresAt: now.Add(time.Second)},
	}
	for i := range vecs {
		if err := s.Cache.PutVector(ws, p, &vecs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Cache.PutVector(ws, q, &CachedVector{Key: testCacheKey("d"), Vector: []float32{1}, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Cache.ListVectors(ws, p, now.Add(time.Second)) // c has expired
	if err != nil {
		t.Fatal(err)
	}
	want := map[[CacheKeySize]byte]CachedVector{vecs[0].Key: vecs[0], vecs[1].Key: vecs[1]}
	if len(got) != len(want) {
		t.Fatalf("ListVectors = %d entries, want %d", len(got), len(want))
	}
	for _, g := range got {
		w, ok := want[g.Key]
		if !ok || fmt.Sprint(g.Vector) != fmt.Sprint(w.Vector) || !g.ExpiresAt.Equal(w.ExpiresAt) {
			t.Fatalf("ListVectors gave %+v, want %+v", g, w)
		}
		if wc := w.CreatedAt; wc.IsZero() && !g.CreatedAt.Equal(now) || !wc.IsZero() && !g.CreatedAt.Equal(wc) {
			t.Fatalf("CreatedAt = %v", g.CreatedAt)
		}
	}
	if err := s.Cache.DeleteVector(ws, p, vecs[0].Key); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Cache.ListVectors(ws, p, now); len(got) != 2 {
		t.Fatalf("after DeleteVector: %d entries, want 2", len(got))
	}
	if got, _ := s.Cache.ListVectors(ws, q, now); len(got) != 1 {
		t.Fatalf("partition q: %d entries, want 1", len(got))
	}
	if got, err := s.Cache.ListVectors("a/b", q, now); got != nil || err != nil {
		t.Fatalf("bad workspace: %v, %v", got, err)
	}
	// A corrupt entry is skipped.
	if err := s.db.Set(semKey(ws, &q, new(testCacheKey("e"))), []byte{cacheValueVersion, 1}, pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Cache.ListVectors(ws, q, now); len(got) != 1 || err != nil {
		t.Fatalf("with a corrupt entry: %d, %v", len(got), err)
	}
}

func TestCacheSweep(t *testing.T) {
	clk := newFakeClock()
	s := openTest(t, nil, clk)
	ws := NewUUID()
	p := testPartition("p")
	now := clk.Now()
	const n = sweepBatch + 500 // more than one call examines
	live := 0
	for i := range n {
		exp := now.Add(time.Minute)
		if i%3 == 0 {
			exp = now.Add(time.Hour)
			live++
		}
		k := testCacheKey(fmt.Sprint(i))
		if err := s.Cache.Put(ws, k, &CachedAnswer{Status: 200, Body: []byte("x"), ExpiresAt: exp}); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			if err := s.Cache.PutVector(ws, p, &CachedVector{Key: k, Vector: []float32{1, 2}, ExpiresAt: exp}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Nothing has expired yet.
	if d, err := s.Cache.Sweep(now); d != 0 || err != nil {
		t.Fatalf("early Sweep = %d, %v", d, err)
	}
	later := now.Add(2 * time.Minute)
	first, err := s.Cache.Sweep(later)
	if err != nil {
		t.Fatal(err)
	}
	if first == 0 || first >= n-live {
		t.Fatalf("first Sweep deleted %d: want some but, bounded, not all %d", first, n-live)
	}
	total := first
	for range 5 {
		d, err := s.Cache.Sweep(later)
		if err != nil {
			t.Fatal(err)
		}
		total += d
	}
	vecs, vecLive := 0, 0
	for i := 0; i < n; i += 10 {
		vecs++
		if i%3 == 0 {
			vecLive++
		}
	}
	if want := (n - live) + (vecs - vecLive); total != want {
		t.Fatalf("Sweeps deleted %d, want %d", total, want)
	}
	count := 0
	if err := s.scan(prefix(tableCache), func(k, v []byte) error { count++; return nil }); err != nil {
		t.Fatal(err)
	}
	if count != live {
		t.Fatalf("%d answers left, want %d", count, live)
	}
	if got, _ := s.Cache.ListVectors(ws, p, now); len(got) != vecLive {
		t.Fatalf("%d vectors left, want %d", len(got), vecLive)
	}
}

func TestCacheSweepEmpty(t *testing.T) {
	s := openTest(t, nil, nil)
	for range 3 {
		if d, err := s.Cache.Sweep(time.Now()); d != 0 || err != nil {
			t.Fatalf("Sweep = %d, %v", d, err)
		}
	}
}

// TestCacheHammer runs Put, Get, Sweep and vector writes at once; run it with -race.
func TestCacheHammer(t *testing.T) {
	s := openTest(t, nil, nil)
	ws := NewUUID()
	p := testPartition("p")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				k := testCacheKey(fmt.Sprint(i % 50))
				now := time.Now()
				body := []byte(strings.Repeat(fmt.Sprint(i%50), 100))
				if g%2 == 0 {
					if err := s.Cache.Put(ws, k, &CachedAnswer{Status: 200, Body: body, ExpiresAt: now.Add(time.Duration(i%3) * time.Millisecond)}); err != nil {
						t.Error(err)
						return
					}
					if err := s.Cache.PutVector(ws, p, &CachedVector{Key: k, Vector: []float32{float32(i)}, ExpiresAt: now.Add(time.Hour)}); err != nil {
						t.Error(err)
						return
					}
				} else if a, ok, err := s.Cache.Get(ws, k, now); err != nil {
					t.Error(err)
					return
				} else if ok && !bytes.Equal(a.Body, body) {
					t.Errorf("Get %d = %q", i, a.Body)
					return
				}
				if i%50 == 0 {
					if _, err := s.Cache.Sweep(time.Now()); err != nil {
						t.Error(err)
						return
					}
					if _, err := s.Cache.ListVectors(ws, p, now); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

var sinkAnswer *CachedAnswer

// BenchmarkCacheGet reads a cached 2 KB chat answer: a pebble read (memtable) and a zstd decode.
func BenchmarkCacheGet(b *testing.B) {
	s := openTest(b, nil, nil)
	ws := NewUUID()
	k := testCacheKey("bench")
	content := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 40)
	body := []byte(`{"id":"chatcmpl-9x","object":"chat.completion","created":1715000000,"model":"gpt-4o-mini",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"` + content + `"},"logprobs":null,"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":12,"completion_tokens":400,"total_tokens":412}}`)
	if len(body) < 1900 || len(body) > 2100 {
		b.Fatalf("body is %d bytes, want about 2 KB", len(body))
	}
	now := time.Now()
	if err := s.Cache.Put(ws, k, &CachedAnswer{Status: 200, ContentType: "application/json", Body: body, ExpiresAt: now.Add(time.Hour)}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		a, ok, err := s.Cache.Get(ws, k, now)
		if !ok || err != nil {
			b.Fatal(ok, err)
		}
		sinkAnswer = a
	}
}

func BenchmarkCachePut(b *testing.B) {
	s := openTest(b, nil, nil)
	ws := NewUUID()
	k := testCacheKey("bench")
	body := bytes.Repeat([]byte(`{"content":"The quick brown fox jumps over the lazy dog."}`), 35)
	a := &CachedAnswer{Status: 200, ContentType: "application/json", Body: body, ExpiresAt: time.Now().Add(time.Hour)}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Cache.Put(ws, k, a); err != nil {
			b.Fatal(err)
		}
	}
}

// TestHotAnswers: the answers kept decoded in front of pebble read as stored ones do (expiry, replacement,
// deletion, a deleted workspace) and stay within their bound.
func TestHotAnswers(t *testing.T) {
	s := openTest(t, nil, nil)
	ws := "11111111-1111-1111-1111-111111111111"
	now := time.Unix(1_800_000_000, 0)
	var k1, k2 [CacheKeySize]byte
	k1[0], k2[0] = 1, 2
	put := func(k [CacheKeySize]byte, body string, expires time.Time) {
		t.Helper()
		if err := s.Cache.Put(ws, k, &CachedAnswer{Status: 200, ContentType: "application/json", Body: []byte(body), ExpiresAt: expires}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(k [CacheKeySize]byte, at time.Time) string {
		t.Helper()
		a, ok, err := s.Cache.Get(ws, k, at)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return ""
		}
		return string(a.Body)
	}
	put(k1, `{"a":1}`, now.Add(time.Minute))
	if got := get(k1, now); got != `{"a":1}` {
		t.Fatalf("hot read %q", got)
	}
	if got := get(k1, now.Add(2*time.Minute)); got != "" {
		t.Fatalf("an expired hot answer read %q", got)
	}
	put(k1, `{"a":2}`, now.Add(time.Minute))
	if got := get(k1, now); got != `{"a":2}` {
		t.Fatalf("a replaced answer read %q", got)
	}
	if err := s.Cache.Delete(ws, k1); err != nil {
		t.Fatal(err)
	}
	if got := get(k1, now); got != "" {
		t.Fatalf("a deleted answer read %q", got)
	}
	// Read from pebble once the hot set has forgotten it, and hot again afterwards.
	put(k2, `{"b":1}`, now.Add(time.Minute))
	s.Cache.hot.clear()
	if got := get(k2, now); got != `{"b":1}` {
		t.Fatalf("a cold read %q", got)
	}
	if s.Cache.hot.get(ws, &k2) == nil {
		t.Fatal("a cold read was not kept hot")
	}
	// The bound: bodies past hotMaxBytes evict the least recently used.
	big := strings.Repeat("x", hotMaxAnswer)
	for i := 0; i < hotMaxBytes/hotMaxAnswer+2; i++ {
		var k [CacheKeySize]byte
		k[1], k[2] = byte(i), 9
		s.Cache.hot.put(ws, &k, &CachedAnswer{Body: []byte(big), ExpiresAt: now.Add(time.Minute)})
	}
	if s.Cache.hot.bytes > hotMaxBytes {
		t.Fatalf("hot answers hold %d bytes, over the bound %d", s.Cache.hot.bytes, hotMaxBytes)
	}
	if s.Cache.hot.get(ws, &k2) != nil {
		t.Fatal("the least recently used answer was not evicted")
	}
}
