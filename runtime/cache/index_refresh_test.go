package cache

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/gateway/storage"
)

// countingStore counts the partition loads an index makes.
type countingStore struct {
	VectorStore
	lists atomic.Int64
}

func (s *countingStore) ListVectors(ws string, p [storage.CachePartitionSize]byte, now time.Time) ([]storage.CachedVector, error) {
	s.lists.Add(1)
	return s.VectorStore.ListVectors(ws, p, now)
}

// TestIndexRefreshSeesOtherReplicas: two indexes (two replicas) over one store: a vector replica A adds after
// replica B loaded the partition is found by B once RefreshAfter has passed since B's load, with one reload per
// period however many searches miss; without RefreshAfter B never sees it.
func TestIndexRefreshSeesOtherReplicas(t *testing.T) {
	clk := newClock()
	st := openStore(t)
	ws := storage.NewUUID()
	r := rand.New(rand.NewPCG(3, 4))
	v := randVec(r, 64)
	store := &countingStore{VectorStore: st.Cache}
	a := NewIndex(st.Cache, IndexOptions{Now: clk.Now})
	b := NewIndex(store, IndexOptions{Now: clk.Now, RefreshAfter: 5 * time.Second})
	once := NewIndex(st.Cache, IndexOptions{Now: clk.Now})

	if _, _, ok := b.Search(ws, testPart, v, DefaultThreshold); ok { // loads B's partition, empty
		t.Fatal("hit in an empty partition")
	}
	once.Search(ws, testPart, v, DefaultThreshold)
	if err := a.Add(ws, testPart, v, testKey(1), clk.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	loads := store.lists.Load()
	for range 3 {
		if _, _, ok := b.Search(ws, testPart, nearDup(r, v), DefaultThreshold); ok {
			t.Fatal("hit before RefreshAfter passed")
		}
	}
	if n := store.lists.Load() - loads; n != 0 {
		t.Fatalf("%d reloads within the period", n)
	}
	clk.Advance(5 * time.Second)
	for range 3 {
		if k, _, ok := b.Search(ws, testPart, nearDup(r, v), DefaultThreshold); !ok || k != testKey(1) {
			t.Fatal("replica B does not find replica A's vector after RefreshAfter")
		}
	}
	if n := store.lists.Load() - loads; n != 1 {
		t.Fatalf("%d reloads for one period, want 1", n)
	}
	if _, _, ok := once.Search(ws, testPart, nearDup(r, v), DefaultThreshold); ok {
		t.Fatal("an index without RefreshAfter reloaded its partition")
	}

	// A vector replaced on A (a force-refresh) replaces B's copy on the next refresh.
	w := randVec(r, 64)
	clk.Advance(time.Second)
	if err := a.Add(ws, testPart, w, testKey(1), clk.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(5 * time.Second)
	if k, _, ok := b.Search(ws, testPart, nearDup(r, w), DefaultThreshold); !ok || k != testKey(1) {
		t.Fatal("replica B does not find the replaced vector")
	}
	if b.Len() != 1 {
		t.Fatalf("replica B holds %d entries, want the replaced one only", b.Len())
	}
}

// BenchmarkIndexRefresh1000 is the cost of one refresh of a partition of 1,000 vectors of 1536 dimensions (the
// usual embedding model's) that already holds them all: the steady state, a store read and a lookup per entry.
// The embedded store stands in for PostgreSQL, whose round trip and transfer (about 6 MB) come on top.
func BenchmarkIndexRefresh1000(b *testing.B) {
	clk := newClock()
	st := openStore(b)
	ws := storage.NewUUID()
	r := rand.New(rand.NewPCG(5, 6))
	x := NewIndex(st.Cache, IndexOptions{Now: clk.Now, RefreshAfter: time.Second})
	for i := range 1000 {
		if err := x.Add(ws, testPart, randVec(r, 1536), testKey(i), clk.Now().Add(time.Hour)); err != nil {
			b.Fatal(err)
		}
	}
	pt := x.partition(ws, testPart)
	b.ReportAllocs()
	for b.Loop() {
		pt.mu.Lock()
		pt.loadedAt = time.Time{}
		pt.mu.Unlock()
		if x.refresh(pt) {
			b.Fatal("a refresh added entries the partition holds")
		}
	}
}
