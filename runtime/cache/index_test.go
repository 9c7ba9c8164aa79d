package cache

import (
	"crypto/sha256"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/gateway/storage"
)

func testKey(i int) Key { return sha256.Sum256(fmt.Append(nil, "entry", i)) }

var testPart = PartitionKey{1, 2, 3}

// randVec returns a random vector with normally distributed components.
func randVec(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// nearDup returns v plus a little noise: cosine similarity about 0.995 to v.
func nearDup(r *rand.Rand, v []float32) []float32 {
	n := normalize(v)
	out := make([]float32, len(n))
	for i := range n {
		out[i] = n[i] + float32(r.NormFloat64())*0.1/float32(math.Sqrt(float64(len(n))))
	}
	return out
}

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newClock() *testClock { return &testClock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)} }

func openStore(t testing.TB) *storage.Store {
	t.Helper()
	s, err := storage.Open("db", storage.Options{MasterKey: make([]byte, storage.MasterKeySize), InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func (x *Index) waitBuilds() { x.builds.Wait() }

// graphOf returns the graph of the partition's set of dimension dim, and whether the set exists.
func (x *Index) graphOf(ws string, p PartitionKey, dim int) (graph bool, live int) {
	x.mu.Lock()
	pt := x.parts[partID{ws, p}]
	x.mu.Unlock()
	if pt == nil {
		return false, 0
	}
	pt.mu.RLock()
	defer pt.mu.RUnlock()
	s := pt.set(dim)
	if s == nil {
		return false, 0
	}
	return s.graph != nil, len(s.live)
}

func TestIndexSearch(t *testing.T) {
	clk := newClock()
	x := NewIndex(nil, IndexOptions{Now: clk.Now})
	r := rand.New(rand.NewPCG(1, 2))
	exp := clk.Now().Add(time.Hour)
	vecs := make([][]float32, 100)
	for i := range vecs {
		vecs[i] = randVec(r, 64)
		if err := x.Add("ws", testPart, vecs[i], testKey(i), exp); err != nil {
			t.Fatal(err)
		}
	}
	for _, i := range []int{0, 42, 99} {
		k, score, ok := x.Search("ws", testPart, nearDup(r, vecs[i]), DefaultThreshold)
		if !ok || k != testKey(i) || score < 0.98 {
			t.Fatalf("Search near %d = %v %v %v", i, k == testKey(i), score, ok)
		}
		// Unnormalised input is normalised.
		scaled := make([]float32, len(vecs[i]))
		for j, f := range vecs[i] {
			scaled[j] = f * 7
		}
		if k, score, ok := x.Search("ws", testPart, scaled, 0.999); !ok || k != testKey(i) || score > 1.0001 {
			t.Fatalf("scaled search: %v %v", score, ok)
		}
	}
	// Unrelated vectors miss and report the best score.
	if _, score, ok := x.Search("ws", testPart, randVec(r, 64), DefaultThreshold); ok || score > 0.6 || score == 0 {
		t.Fatalf("random vector: score %v, ok %v", score, ok)
	}
	// Other workspaces, partitions and dimensions miss.
	if _, _, ok := x.Search("ws2", testPart, vecs[0], 0.5); ok {
		t.Fatal("hit in another workspace")
	}
	if _, _, ok := x.Search("ws", PartitionKey{9}, vecs[0], 0.5); ok {
		t.Fatal("hit in another partition")
	}
	if _, _, ok := x.Search("ws", testPart, vecs[0][:32], 0.1); ok {
		t.Fatal("hit with another dimension")
	}
	// Bad vectors.
	for _, v := range [][]float32{nil, {}, {0, 0}, {float32(math.NaN()), 1}, {float32(math.Inf(1)), 1}} {
		if _, _, ok := x.Search("ws", testPart, v, 0); ok {
			t.Fatalf("Search(%v) hit", v)
		}
		if err := x.Add("ws", testPart, v, testKey(1000), exp); err == nil {
			t.Fatalf("Add(%v) succeeded", v)
		}
	}
	// Expired entries miss, and Sweep drops them.
	clk.Advance(2 * time.Hour)
	if _, _, ok := x.Search("ws", testPart, vecs[0], 0.5); ok {
		t.Fatal("hit on an expired entry")
	}
	if n := x.Sweep(clk.Now()); n != 100 || x.Len() != 0 {
		t.Fatalf("Sweep dropped %d, %d left", n, x.Len())
	}
	// An Add that has already expired is ignored.
	if err := x.Add("ws", testPart, vecs[0], testKey(0), clk.Now()); err != nil || x.Len() != 0 {
		t.Fatalf("expired Add: %v, len %d", err, x.Len())
	}
}

func TestIndexReplaceKey(t *testing.T) {
	clk := newClock()
	x := NewIndex(nil, IndexOptions{Now: clk.Now})
	exp := clk.Now().Add(time.Hour)
	x.Add("ws", testPart, []float32{1, 0, 0}, testKey(1), exp)
	x.Add("ws", testPart, []float32{0, 1, 0}, testKey(1), exp) // the same answer, re-embedded
	if x.Len() != 1 {
		t.Fatalf("Len = %d, want 1", x.Len())
	}
	if _, _, ok := x.Search("ws", testPart, []float32{1, 0, 0}, 0.9); ok {
		t.Fatal("the replaced vector still hits")
	}
	if k, _, ok := x.Search("ws", testPart, []float32{0, 1, 0}, 0.9); !ok || k != testKey(1) {
		t.Fatal("the new vector misses")
	}
}

// TestIndexDimensions: vectors of different lengths in one partition (an embedding model changed) live side
// by side and are never compared.
func TestIndexDimensions(t *testing.T) {
	x := NewIndex(nil, IndexOptions{})
	exp := time.Now().Add(time.Hour)
	x.Add("ws", testPart, []float32{1, 0, 0}, testKey(3), exp)
	x.Add("ws", testPart, []float32{1, 0, 0, 0}, testKey(4), exp)
	x.Add("ws", testPart, []float32{1, 0}, testKey(2), exp)
	for dim, want := range map[int]Key{2: testKey(2), 3: testKey(3), 4: testKey(4)} {
		v := make([]float32, dim)
		v[0] = 1
		if k, _, ok := x.Search("ws", testPart, v, 0.99); !ok || k != want {
			t.Fatalf("dimension %d: %v", dim, ok)
		}
	}
	if _, _, ok := x.Search("ws", testPart, []float32{1, 0, 0, 0, 0}, 0); ok {
		t.Fatal("dimension 5 hit")
	}
}

// TestIndexGraph adds 2500 random vectors: the partition switches to an HNSW graph, which finds a known
// near-duplicate; removing most entries switches back to scanning.
func TestIndexGraph(t *testing.T) {
	clk := newClock()
	x := NewIndex(nil, IndexOptions{Now: clk.Now})
	r := rand.New(rand.NewPCG(3, 4))
	const dim, n = 64, 2500
	exp := clk.Now().Add(time.Hour)
	vecs := make([][]float32, n)
	for i := range vecs {
		vecs[i] = randVec(r, dim)
		x.Add("ws", testPart, vecs[i], testKey(i), exp)
		if i == DefaultGraphThreshold-1 {
			x.waitBuilds()
			if graph, _ := x.graphOf("ws", testPart, dim); graph {
				t.Fatal("graph at the threshold")
			}
		}
	}
	x.waitBuilds()
	if graph, live := x.graphOf("ws", testPart, dim); !graph || live != n {
		t.Fatalf("graph %v, %d entries", graph, live)
	}
	misses := 0
	for _, i := range []int{0, 1, 777, 1999, 2000, 2345, 2499} {
		k, score, ok := x.Search("ws", testPart, nearDup(r, vecs[i]), DefaultThreshold)
		if !ok || k != testKey(i) {
			misses++
			t.Logf("near-duplicate of %d: ok %v score %v", i, ok, score)
		}
	}
	if misses > 0 {
		t.Fatalf("%d near-duplicates missed through the graph", misses)
	}
	// Entries that expire drop out; below half the threshold the partition is scanned again.
	clk.Advance(30 * time.Minute)
	exp2 := clk.Now().Add(time.Hour)
	for i := range 200 {
		x.Add("ws", testPart, vecs[i], testKey(i), exp2) // re-added: replaced, the old node is dead
	}
	clk.Advance(45 * time.Minute) // the first 2500 expire, the 200 re-added do not
	x.Sweep(clk.Now())
	x.waitBuilds()
	if graph, live := x.graphOf("ws", testPart, dim); graph || live != 200 {
		t.Fatalf("after expiry: graph %v, %d entries", graph, live)
	}
	if k, _, ok := x.Search("ws", testPart, nearDup(r, vecs[150]), DefaultThreshold); !ok || k != testKey(150) {
		t.Fatal("a scanned partition misses")
	}
}

// TestIndexRebuild: a graph whose nodes are mostly replaced is rebuilt, and Search keeps finding entries
// throughout.
func TestIndexRebuild(t *testing.T) {
	x := NewIndex(nil, IndexOptions{GraphThreshold: 100})
	r := rand.New(rand.NewPCG(5, 6))
	exp := time.Now().Add(time.Hour)
	vecs := make([][]float32, 300)
	for i := range vecs {
		vecs[i] = randVec(r, 16)
		x.Add("ws", testPart, vecs[i], testKey(i), exp)
	}
	x.waitBuilds()
	for round := range 3 {
		for i := range vecs {
			vecs[i] = randVec(r, 16)
			x.Add("ws", testPart, vecs[i], testKey(i), exp)
			if i%50 == 0 {
				if k, _, ok := x.Search("ws", testPart, vecs[i], 0.99); !ok || k != testKey(i) {
					t.Fatalf("round %d: entry %d missed", round, i)
				}
			}
		}
	}
	x.waitBuilds()
	x.mu.Lock()
	pt := x.parts[partID{"ws", testPart}]
	x.mu.Unlock()
	pt.mu.RLock()
	s := pt.set(16)
	dead, nodes := s.dead, s.graph.Len()
	pt.mu.RUnlock()
	if dead > len(vecs)/4+1 || nodes > len(vecs)*5/4+1 {
		t.Fatalf("graph has %d nodes, %d dead, for %d entries: not rebuilt", nodes, dead, len(vecs))
	}
	for i := range vecs {
		if k, _, ok := x.Search("ws", testPart, vecs[i], 0.99); !ok || k != testKey(i) {
			t.Fatalf("entry %d missed after the rebuilds", i)
		}
	}
}

// TestIndexRestart: a new Index over the same store finds what the first one added.
func TestIndexRestart(t *testing.T) {
	clk := newClock()
	st := openStore(t)
	ws := storage.NewUUID()
	x := NewIndex(st.Cache, IndexOptions{Now: clk.Now})
	r := rand.New(rand.NewPCG(7, 8))
	v, short := randVec(r, 32), randVec(r, 32)
	if err := x.Add(ws, testPart, v, testKey(1), clk.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := x.Add(ws, testPart, short, testKey(2), clk.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	y := NewIndex(st.Cache, IndexOptions{Now: clk.Now})
	if k, _, ok := y.Search(ws, testPart, nearDup(r, v), DefaultThreshold); !ok || k != testKey(1) {
		t.Fatal("no hit after a restart")
	}
	if _, _, ok := y.Search(ws, testPart, short, 0.99); ok || y.Len() != 1 {
		t.Fatalf("expired entry loaded (len %d)", y.Len())
	}
}

// TestIndexPartitionBound: at most MaxPerPartition entries; the oldest go, from the store too.
func TestIndexPartitionBound(t *testing.T) {
	clk := newClock()
	st := openStore(t)
	ws := storage.NewUUID()
	x := NewIndex(st.Cache, IndexOptions{MaxPerPartition: 5, Now: clk.Now})
	r := rand.New(rand.NewPCG(9, 10))
	vecs := make([][]float32, 8)
	for i := range vecs {
		clk.Advance(time.Second)
		vecs[i] = randVec(r, 16)
		x.Add(ws, testPart, vecs[i], testKey(i), clk.Now().Add(time.Hour))
	}
	if x.Len() != 5 {
		t.Fatalf("Len = %d, want 5", x.Len())
	}
	for i := range vecs {
		_, _, ok := x.Search(ws, testPart, vecs[i], 0.99)
		if ok != (i >= 3) {
			t.Fatalf("entry %d: hit %v", i, ok)
		}
	}
	if stored, _ := st.Cache.ListVectors(ws, testPart, clk.Now()); len(stored) != 5 {
		t.Fatalf("%d vectors stored, want 5", len(stored))
	}
	// A store holding more than the bound (written by a gateway with a larger one) loads the newest.
	y := NewIndex(st.Cache, IndexOptions{MaxPerPartition: 2, Now: clk.Now})
	for i := range vecs {
		if _, _, ok := y.Search(ws, testPart, vecs[i], 0.99); ok != (i >= 6) {
			t.Fatalf("after load with bound 2, entry %d: hit %v", i, ok)
		}
	}
}

// TestIndexMemoryBound: beyond MaxEntries or MaxPartitions, the least recently used partitions are unloaded;
// they come back from the store on their next use.
func TestIndexMemoryBound(t *testing.T) {
	clk := newClock()
	st := openStore(t)
	ws := storage.NewUUID()
	x := NewIndex(st.Cache, IndexOptions{MaxEntries: 20, MaxPartitions: 8, Now: clk.Now})
	r := rand.New(rand.NewPCG(11, 12))
	vecs := map[int][]float32{}
	exp := clk.Now().Add(time.Hour)
	for p := range 10 {
		for i := range 4 {
			v := randVec(r, 8)
			vecs[p*10+i] = v
			x.Add(ws, PartitionKey{byte(p)}, v, testKey(p*10+i), exp)
		}
		if x.Len() > 20 {
			t.Fatalf("after partition %d: %d entries in memory", p, x.Len())
		}
	}
	x.mu.Lock()
	parts := len(x.parts)
	_, newest := x.parts[partID{ws, PartitionKey{9}}]
	_, oldest := x.parts[partID{ws, PartitionKey{0}}]
	x.mu.Unlock()
	if parts > 8 || !newest || oldest {
		t.Fatalf("%d partitions, newest loaded %v, oldest loaded %v", parts, newest, oldest)
	}
	for p := range 10 {
		for i := range 4 {
			if k, _, ok := x.Search(ws, PartitionKey{byte(p)}, vecs[p*10+i], 0.99); !ok || k != testKey(p*10+i) {
				t.Fatalf("partition %d entry %d: miss", p, i)
			}
		}
	}
	// Searches of many empty partitions are bounded too.
	for p := range 100 {
		x.Search(ws, PartitionKey{0xff, byte(p)}, vecs[0], 0.99)
	}
	x.mu.Lock()
	parts = len(x.parts)
	x.mu.Unlock()
	if parts > 8 {
		t.Fatalf("%d partitions after searching empty ones", parts)
	}
}

// TestIndexHammer runs Add, Search and Sweep at once over few partitions with a small graph threshold, so
// that graph builds race with everything else; run it with -race.
func TestIndexHammer(t *testing.T) {
	clk := newClock()
	st := openStore(t)
	ws := storage.NewUUID()
	x := NewIndex(st.Cache, IndexOptions{GraphThreshold: 40, MaxPerPartition: 150, MaxEntries: 400, MaxPartitions: 3, Now: clk.Now})
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 99))
			for i := range 400 {
				p := PartitionKey{byte(r.IntN(4))}
				dim := 8
				if r.IntN(10) == 0 {
					dim = 12
				}
				v := randVec(r, dim)
				switch {
				case g%3 == 0 && i%100 == 0:
					clk.Advance(time.Minute)
					x.Sweep(clk.Now())
				case g%2 == 0:
					if err := x.Add(ws, p, v, testKey(r.IntN(300)), clk.Now().Add(time.Duration(r.IntN(20))*time.Minute)); err != nil {
						t.Error(err)
						return
					}
				default:
					x.Search(ws, p, v, 0.5)
				}
			}
		}()
	}
	wg.Wait()
	x.waitBuilds()
	if x.Len() > 400 {
		t.Fatalf("%d entries in memory", x.Len())
	}
	// The count of entries matches the partitions.
	x.mu.Lock()
	defer x.mu.Unlock()
	total := 0
	for _, pt := range x.parts {
		pt.mu.RLock()
		n := 0
		for _, s := range pt.sets {
			n += len(s.live)
		}
		if n != pt.live || len(pt.byKey) != pt.live {
			t.Errorf("partition counts %d live, %d in sets, %d keys", pt.live, n, len(pt.byKey))
		}
		total += pt.live
		pt.mu.RUnlock()
	}
	if int64(total) != x.total.Load() {
		t.Fatalf("total %d, partitions hold %d", x.total.Load(), total)
	}
}

func benchmarkSearch(b *testing.B, n int, clustered bool) {
	x := NewIndex(nil, IndexOptions{})
	r := rand.New(rand.NewPCG(1, 1))
	const dim = 256
	exp := time.Now().Add(time.Hour)
	centres := make([][]float32, 50)
	for i := range centres {
		centres[i] = normalize(randVec(r, dim))
	}
	vecs := make([][]float32, n)
	for i := range vecs {
		vecs[i] = randVec(r, dim)
		if clustered { // cosine similarity about 0.7 to the centre
			c := centres[r.IntN(len(centres))]
			for j := range vecs[i] {
				vecs[i][j] = c[j] + vecs[i][j]/float32(math.Sqrt(dim))
			}
		}
		x.Add("ws", testPart, vecs[i], testKey(i), exp)
	}
	x.waitBuilds()
	queries := make([][]float32, 64)
	for i := range queries {
		queries[i] = nearDup(r, vecs[r.IntN(n)])
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		x.Search("ws", testPart, queries[i%len(queries)], DefaultThreshold)
		i++
	}
}

// BenchmarkIndexSearch1000 scans (below the graph threshold); 5000 goes through the HNSW graph. The vectors
// are random, the worst case for a graph (no neighbourhoods to follow); the Clustered variant is closer to
// real embeddings, which gather by topic.
func BenchmarkIndexSearch1000(b *testing.B)          { benchmarkSearch(b, 1000, false) }
func BenchmarkIndexSearch5000(b *testing.B)          { benchmarkSearch(b, 5000, false) }
func BenchmarkIndexSearch5000Clustered(b *testing.B) { benchmarkSearch(b, 5000, true) }

// TestHNSWRecall compares the graph with an exhaustive search: the nearest neighbour of a near-duplicate
// query, and of a query at the default threshold's similarity, must always be found (that is what the
// semantic cache looks for); that of a random query often.
func TestHNSWRecall(t *testing.T) {
	for _, dim := range []int{16, 256} {
		t.Run(fmt.Sprint(dim), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(dim), 1))
			g := newHNSW(1)
			n, queries := 3000, 300
			if raceEnabled {
				n, queries = 1000, 60
			}
			vecs := make([][]float32, n)
			for i := range vecs {
				vecs[i] = normalize(randVec(r, dim))
				g.insert(uint64(i), vecs[i])
			}
			nearest := func(q []float32) uint64 {
				best, bi := float32(-2), 0
				for i, v := range vecs {
					if d := dot(q, v); d > best {
						best, bi = d, i
					}
				}
				return uint64(bi)
			}
			dupHits, edgeHits, randHits := 0, 0, 0
			for range queries {
				q := normalize(nearDup(r, vecs[r.IntN(n)]))
				if res := g.search(q, 1); len(res) == 1 && g.nodes[res[0].node].id == nearest(q) {
					dupHits++
				}
				// A paraphrase at the default threshold: cosine similarity about 0.95.
				i := r.IntN(n)
				q = make([]float32, dim)
				for j := range q {
					q[j] = vecs[i][j] + float32(r.NormFloat64()*0.33/math.Sqrt(float64(dim)))
				}
				q = normalize(q)
				if res := g.search(q, 1); len(res) == 1 && g.nodes[res[0].node].id == nearest(q) {
					edgeHits++
				}
				q = normalize(randVec(r, dim))
				if res := g.search(q, 10); len(res) > 0 && g.nodes[res[0].node].id == nearest(q) {
					randHits++
				}
			}
			t.Logf("dimension %d: near-duplicate recall %d/%d, at-threshold recall %d/%d, random-query recall@1 %d/%d",
				dim, dupHits, queries, edgeHits, queries, randHits, queries)
			if dupHits < queries || edgeHits < queries {
				t.Fatalf("near-duplicate recall %d/%d, at-threshold recall %d/%d", dupHits, queries, edgeHits, queries)
			}
			// The nearest of random points is far below any threshold, so it does not matter to the cache;
			// finding it often still shows the graph is navigable.
			if minRand := queries / 2; randHits < minRand {
				t.Fatalf("random-query recall %d/%d, want at least %d", randHits, queries, minRand)
			}
		})
	}
}

func TestIndexNilStore(t *testing.T) {
	var cs *storage.CacheStore
	x := NewIndex(cs, IndexOptions{})
	if err := x.Add("ws", testPart, []float32{1, 2}, testKey(1), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := x.Search("ws", testPart, []float32{1, 2}, 0.99); !ok {
		t.Fatal("miss")
	}
}
