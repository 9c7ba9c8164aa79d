package cache

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// HNSW parameters (Malkov and Yashunin, "Efficient and robust approximate nearest neighbor search using
// Hierarchical Navigable Small World graphs", 2016). 16 links a node on the upper layers and 32 on the bottom
// one, the usual choice for embeddings; efConstruction and efSearch trade build and search time for recall.
const (
	hnswM              = 16
	hnswM0             = 2 * hnswM
	hnswEfConstruction = 64
	hnswEfSearch       = 32
)

// hnswML is the level multiplier 1/ln(M): each layer holds about 1/M of the nodes of the one below.
var hnswML = 1 / math.Log(hnswM)

// graph is an insert-only HNSW graph over unit vectors with cosine distance (1 - dot product). The index
// never deletes from a graph: a removed entry stays as a node, still useful to navigate, until the graph is
// rebuilt without it (see Index). Concurrent searches are safe; an insert excludes everything else (the
// caller's lock), except a graph under construction, which belongs to one goroutine.
//
// It is the gateway's own rather than github.com/coder/hnsw, whose only published version (v0.6.1) finds a
// known near-duplicate among 2,500 vectors about half the time (its heap's Max is wrong and its search stops
// at the first step that does not improve the best result; fixed upstream, unreleased) and can panic after a
// Delete.
type graph struct {
	nodes    []hnswNode
	entry    int32 // the node search starts from, on the top layer
	maxLevel int
	rng      *rand.Rand
}

type hnswNode struct {
	id    uint64
	vec   []float32
	links [][]int32   // links[level]: neighbours on that layer
	dists [][]float32 // dists[level][i]: the distance to links[level][i], so pruning computes none
}

// candidate is a node and its distance to the query.
type candidate struct {
	dist float32
	node int32
}

func newHNSW(seed uint64) *graph {
	return &graph{entry: -1, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (g *graph) Len() int { return len(g.nodes) }

func distance(a, b []float32) float32 { return 1 - dot(a, b) }

// insert adds a node for entry id with the unit vector vec, which must have the graph's length.
func (g *graph) insert(id uint64, vec []float32) {
	level := int(-math.Log(1-g.rng.Float64()) * hnswML)
	n := int32(len(g.nodes))
	g.nodes = append(g.nodes, hnswNode{id: id, vec: vec, links: make([][]int32, level+1), dists: make([][]float32, level+1)})
	if g.entry < 0 {
		g.entry, g.maxLevel = n, level
		return
	}
	s := getScratch(len(g.nodes))
	defer putScratch(s)
	ep := g.entry
	for l := g.maxLevel; l > level; l-- {
		ep = g.greedy(vec, ep, l)
	}
	for l := min(level, g.maxLevel); l >= 0; l-- {
		found := g.searchLayer(s, vec, ep, hnswEfConstruction, l)
		maxLinks := hnswM
		if l == 0 {
			maxLinks = hnswM0
		}
		ep = found[0].node
		neighbours := g.selectNeighbours(found, hnswM)
		links, dists := make([]int32, len(neighbours), maxLinks+1), make([]float32, len(neighbours), maxLinks+1)
		for i, c := range neighbours {
			links[i], dists[i] = c.node, c.dist
			g.link(c.node, n, c.dist, l, maxLinks)
		}
		g.nodes[n].links[l], g.nodes[n].dists[l] = links, dists
	}
	if level > g.maxLevel {
		g.entry, g.maxLevel = n, level
	}
}

// link adds to, at distance d, to from's neighbours on layer l; beyond maxLinks the farthest goes. (The
// paper's diversity heuristic is applied to a new node's own links, not here: with stored distances pruning
// costs no distance computation, which keeps inserts cheap, and recall stays at 100 % for near-duplicates.)
func (g *graph) link(from, to int32, d float32, l, maxLinks int) {
	nd := &g.nodes[from]
	links, dists := append(nd.links[l], to), append(nd.dists[l], d)
	if len(links) > maxLinks {
		far := 0
		for i, x := range dists {
			if x > dists[far] {
				far = i
			}
		}
		last := len(links) - 1
		links[far], dists[far] = links[last], dists[last]
		links, dists = links[:last], dists[:last]
	}
	nd.links[l], nd.dists[l] = links, dists
}

func cmpCandidates(a, b candidate) int {
	switch {
	case a.dist < b.dist:
		return -1
	case a.dist > b.dist:
		return 1
	}
	return int(a.node - b.node)
}

// selectNeighbours picks up to m of the candidates (sorted nearest first) with the paper's heuristic: a
// candidate is kept only when it is nearer to the base than to any neighbour kept so far, so that links spread
// in every direction instead of all pointing into one cluster. The list is filled up with the nearest of the
// pruned ones when the heuristic keeps fewer than m, which keeps small graphs well connected.
func (g *graph) selectNeighbours(cands []candidate, m int) []candidate {
	out := make([]candidate, 0, m)
	var pruned []candidate
	for _, c := range cands {
		if len(out) == m {
			break
		}
		keep := true
		for _, o := range out {
			if distance(g.nodes[c.node].vec, g.nodes[o.node].vec) < c.dist {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, c)
		} else {
			pruned = append(pruned, c)
		}
	}
	for _, p := range pruned {
		if len(out) == m {
			break
		}
		out = append(out, p)
	}
	return out
}

// greedy walks layer l from ep to the node nearest to q it can reach by always moving closer.
func (g *graph) greedy(q []float32, ep int32, l int) int32 {
	best := distance(q, g.nodes[ep].vec)
	for changed := true; changed; {
		changed = false
		for _, nb := range g.nodes[ep].links[l] {
			if d := distance(q, g.nodes[nb].vec); d < best {
				best, ep, changed = d, nb, true
			}
		}
	}
	return ep
}

// search returns up to k nodes nearest to q, nearest first.
func (g *graph) search(q []float32, k int) []candidate {
	if g.entry < 0 {
		return nil
	}
	s := getScratch(len(g.nodes))
	defer putScratch(s)
	ep := g.entry
	for l := g.maxLevel; l > 0; l-- {
		ep = g.greedy(q, ep, l)
	}
	found := g.searchLayer(s, q, ep, max(hnswEfSearch, k), 0)
	return slices.Clone(found[:min(k, len(found))])
}

// searchLayer is the paper's beam search on layer l: it returns the ef nodes nearest to q it finds from ep,
// nearest first, in s.result (valid until s is reused).
func (g *graph) searchLayer(s *scratch, q []float32, ep int32, ef, l int) []candidate {
	s.visit()
	s.seen[ep] = s.gen
	d := distance(q, g.nodes[ep].vec)
	s.cands = append(s.cands[:0], candidate{d, ep})   // a min-heap: what to expand next
	s.result = append(s.result[:0], candidate{d, ep}) // a max-heap: the ef best so far
	for len(s.cands) > 0 {
		c := popMin(&s.cands)
		if c.dist > s.result[0].dist && len(s.result) >= ef {
			break // nothing left to expand can improve the result
		}
		for _, nb := range g.nodes[c.node].links[l] {
			if s.seen[nb] == s.gen {
				continue
			}
			s.seen[nb] = s.gen
			d := distance(q, g.nodes[nb].vec)
			if len(s.result) < ef || d < s.result[0].dist {
				pushMin(&s.cands, candidate{d, nb})
				pushMax(&s.result, candidate{d, nb})
				if len(s.result) > ef {
					popMax(&s.result)
				}
			}
		}
	}
	slices.SortFunc(s.result, cmpCandidates)
	return s.result
}

// scratch is the per-search state, pooled: which nodes were seen (by generation, so it is not cleared), and
// the two heaps.
type scratch struct {
	seen   []uint32
	gen    uint32
	cands  []candidate
	result []candidate
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func getScratch(n int) *scratch {
	s := scratchPool.Get().(*scratch)
	if len(s.seen) < n {
		s.seen = make([]uint32, n+n/4)
		s.gen = 0
	}
	return s
}

func putScratch(s *scratch) { scratchPool.Put(s) }

// visit starts a new search: a new generation marks nodes seen.
func (s *scratch) visit() {
	s.gen++
	if s.gen == 0 {
		clear(s.seen)
		s.gen = 1
	}
}

func pushMin(h *[]candidate, c candidate) {
	*h = append(*h, c)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p].dist <= a[i].dist {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func popMin(h *[]candidate) candidate {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(a) && a[l].dist < a[m].dist {
			m = l
		}
		if r < len(a) && a[r].dist < a[m].dist {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

func pushMax(h *[]candidate, c candidate) {
	*h = append(*h, c)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p].dist >= a[i].dist {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func popMax(h *[]candidate) candidate {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(a) && a[l].dist > a[m].dist {
			m = l
		}
		if r < len(a) && a[r].dist > a[m].dist {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}
