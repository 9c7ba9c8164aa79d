package ratelimit

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime/schema"
	"github.com/llmgw/gateway/storage"
)

// t0 is aligned to every bucket length (1 s, 1 min, 24 min), so that windows in tests start on a boundary.
var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// clock is a controllable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: t0} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func testMasterKey() []byte {
	k := make([]byte, storage.MasterKeySize)
	for i := range k {
		k[i] = byte(i) * 7
	}
	return k
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// openStore opens a store in dir, or in memory when dir is "", and closes it when the test ends.
func openStore(t testing.TB, dir string) *storage.Store {
	t.Helper()
	opts := storage.Options{MasterKey: testMasterKey(), Logger: quietLogger()}
	if dir == "" {
		dir, opts.InMemory = "db", true
	}
	s, err := storage.Open(dir, opts)
	if err != nil {
		t.Fatalf("storage.Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newLimiter returns a limiter on clk whose flusher stays out of the way (tests call flush themselves); it is
// closed when the test ends.
func newLimiter(t testing.TB, s *storage.Store, clk *clock) *Limiter {
	t.Helper()
	opts := Options{FlushInterval: time.Hour, Logger: quietLogger()}
	if clk != nil {
		opts.Now = clk.Now
	}
	l := New(s, opts)
	t.Cleanup(func() { l.Close() })
	return l
}

// env is a store, a clock, a limiter and one workspace.
type env struct {
	t   testing.TB
	s   *storage.Store
	clk *clock
	l   *Limiter
	ws  string
}

func newEnv(t testing.TB) *env {
	s := openStore(t, "")
	clk := newClock()
	return &env{t: t, s: s, clk: clk, l: newLimiter(t, s, clk), ws: storage.NewUUID()}
}

// policy puts an active policy and returns it; mod changes it before it is stored.
func (e *env) policy(typ, unit string, value float64, mod ...func(*storage.RateLimitPolicy)) *storage.RateLimitPolicy {
	e.t.Helper()
	p := &storage.RateLimitPolicy{ID: storage.NewUUID(), WorkspaceID: e.ws, OrganisationID: storage.NewUUID(),
		Type: typ, Unit: unit, Value: value, Status: "active",
		Conditions: []storage.PolicyMatch{}, GroupBy: []storage.PolicyGroup{}}
	for _, m := range mod {
		m(p)
	}
	e.put(p)
	return p
}

func (e *env) put(p *storage.RateLimitPolicy) {
	e.t.Helper()
	if _, err := e.s.Policies.Put(p.WorkspaceID, p.ID, p); err != nil {
		e.t.Fatalf("Policies.Put: %v", err)
	}
}

func groupBy(keys ...string) func(*storage.RateLimitPolicy) {
	return func(p *storage.RateLimitPolicy) {
		for _, k := range keys {
			p.GroupBy = append(p.GroupBy, storage.PolicyGroup{Key: k})
		}
	}
}

func where(key, value string) func(*storage.RateLimitPolicy) {
	return func(p *storage.RateLimitPolicy) {
		p.Conditions = append(p.Conditions, storage.PolicyMatch{Key: key, Value: value})
	}
}

// req returns the attributes of a request of the env's workspace with the given API key ID.
func (e *env) req(apiKey string) *Attrs {
	return &Attrs{WorkspaceID: e.ws, APIKey: apiKey, Provider: "openai", Body: bodyOf(`{"model":"gpt-4o","messages":[]}`)}
}

// admit expects a to be admitted.
func (e *env) admit(a *Attrs) Admission {
	e.t.Helper()
	adm, ex := e.l.Admit(a)
	if ex != nil {
		e.t.Fatalf("refused at +%v: %v", e.clk.Now().Sub(t0), ex)
	}
	return adm
}

// refuse expects a to be refused.
func (e *env) refuse(a *Attrs) *Exceeded {
	e.t.Helper()
	adm, ex := e.l.Admit(a)
	if ex == nil {
		_, rem, _, _ := adm.Headers()
		e.t.Fatalf("admitted at +%v (remaining %v), want refused", e.clk.Now().Sub(t0), rem)
	}
	return ex
}

func (e *env) flush() {
	e.t.Helper()
	if err := e.l.flush(); err != nil {
		e.t.Fatalf("flush: %v", err)
	}
}

// counters returns the number of counters in memory of the policy in the env's workspace.
func (e *env) counters(policyID string) int {
	s := e.l.workspaces.current(e.ws)
	if s == nil {
		return 0
	}
	for _, p := range s.policies {
		if p.id == policyID {
			n := 0
			p.set.m.Range(func(_, _ any) bool { n++; return true })
			return n
		}
	}
	return 0
}

func bodyOf(raw string) *schema.Body {
	b := schema.NewBody([]byte(raw))
	return &b
}
