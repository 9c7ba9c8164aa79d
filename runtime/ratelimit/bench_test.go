package ratelimit

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/llmgw/gateway/storage"
)

// benchEnv is the common case: one workspace with two active policies, a workspace-wide requests limit and a
// tokens limit grouped by api_key, both far from their limits, requests from a handful of keys.
func benchEnv(tb testing.TB) (*Limiter, []*Attrs) {
	s := openStore(tb, "")
	l := newLimiter(tb, s, nil)
	ws := storage.NewUUID()
	for _, p := range []*storage.RateLimitPolicy{
		{ID: storage.NewUUID(), WorkspaceID: ws, Type: "requests", Unit: "rpm", Value: 1e15, Status: "active"},
		{ID: storage.NewUUID(), WorkspaceID: ws, Type: "tokens", Unit: "rpd", Value: 1e15, Status: "active",
			GroupBy: []storage.PolicyGroup{{Key: "api_key"}}},
	} {
		if _, err := s.Policies.Put(ws, p.ID, p); err != nil {
			tb.Fatal(err)
		}
	}
	var reqs []*Attrs
	for i := range 64 {
		a := &Attrs{WorkspaceID: ws, APIKey: fmt.Sprint("key-", i), Provider: "openai",
			Body: bodyOf(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)}
		reqs = append(reqs, a)
		adm, ex := l.Admit(a) // warm up: the counters exist
		if ex != nil {
			tb.Fatal(ex)
		}
		l.AddTokens(&adm, 10)
	}
	return l, reqs
}

func TestAdmitAllocs(t *testing.T) {
	l, reqs := benchEnv(t)
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		adm, ex := l.Admit(reqs[i%len(reqs)])
		if ex != nil {
			t.Fatal(ex)
		}
		l.AddTokens(&adm, 12)
		i++
	})
	if allocs != 0 {
		t.Errorf("Admit + AddTokens allocate %v times per request, want 0", allocs)
	}

	// A condition on the model reads the body without allocating either.
	ws := reqs[0].WorkspaceID
	p := &storage.RateLimitPolicy{ID: storage.NewUUID(), WorkspaceID: ws, Type: "requests", Unit: "rpm", Value: 1e15,
		Status: "active", Conditions: []storage.PolicyMatch{{Key: "model", Value: "gpt-4o"}},
		GroupBy: []storage.PolicyGroup{{Key: "model"}}}
	if _, err := l.store.Policies.Put(ws, p.ID, p); err != nil {
		t.Fatal(err)
	}
	l.Admit(reqs[0])
	allocs = testing.AllocsPerRun(1000, func() {
		if _, ex := l.Admit(reqs[i%len(reqs)]); ex != nil {
			t.Fatal(ex)
		}
		i++
	})
	if allocs != 0 {
		t.Errorf("Admit with a model condition allocates %v times per request, want 0", allocs)
	}
}

func BenchmarkAdmit(b *testing.B) {
	l, reqs := benchEnv(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		l.Admit(reqs[i%len(reqs)])
		i++
	}
}

// BenchmarkAdmitAddTokens is a whole request's work: Admit, then AddTokens after the answer.
func BenchmarkAdmitAddTokens(b *testing.B) {
	l, reqs := benchEnv(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		adm, _ := l.Admit(reqs[i%len(reqs)])
		l.AddTokens(&adm, 12)
		i++
	}
}

// BenchmarkAdmitParallel runs whole requests from every core. The workspace-wide policy has one counter, whose
// mutex every request takes: this measures that contention.
func BenchmarkAdmitParallel(b *testing.B) {
	l, reqs := benchEnv(b)
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(1))
		for pb.Next() {
			adm, _ := l.Admit(reqs[i%len(reqs)])
			l.AddTokens(&adm, 12)
			i++
		}
	})
}
