package ratelimit

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/gateway/storage"
)

// benv is a store, a clock, a budget enforcer and one workspace.
type benv struct {
	t      testing.TB
	s      *storage.Store
	clk    *clock
	b      *Budgets
	ws     string
	alerts atomic.Int64
	refuse atomic.Int64
	logs   *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newBenv(t testing.TB, s *storage.Store, clk *clock) *benv {
	if s == nil {
		s = openStore(t, "")
	}
	if clk == nil {
		clk = newClock()
	}
	e := &benv{t: t, s: s, clk: clk, ws: "ws-1", logs: &syncBuffer{}}
	e.b = e.open()
	return e
}

// open starts an enforcer over the env's store whose flusher stays out of the way; closed when the test ends.
func (e *benv) open() *Budgets {
	b := NewBudgets(e.s, BudgetOptions{Now: e.clk.Now, FlushInterval: time.Hour,
		Logger:     slog.New(slog.NewTextHandler(e.logs, nil)),
		OnAlert:    func(string) { e.alerts.Add(1) },
		OnExceeded: func(string) { e.refuse.Add(1) }})
	e.t.Cleanup(func() { b.Close() })
	return b
}

func (e *benv) policy(typ string, limit float64, mod ...func(*storage.UsageLimitPolicy)) *storage.UsageLimitPolicy {
	e.t.Helper()
	p := &storage.UsageLimitPolicy{ID: storage.NewUUID(), WorkspaceID: e.ws, Type: typ, CreditLimit: limit, Status: "active",
		Conditions: []storage.PolicyMatch{}, GroupBy: []storage.PolicyGroup{}}
	for _, m := range mod {
		m(p)
	}
	e.put(p)
	return p
}

func (e *benv) put(p *storage.UsageLimitPolicy) {
	e.t.Helper()
	if _, err := e.s.UsageLimits.Put(p.WorkspaceID, p.ID, p); err != nil {
		e.t.Fatalf("UsageLimits.Put: %v", err)
	}
}

func resetEvery(r string) func(*storage.UsageLimitPolicy) {
	return func(p *storage.UsageLimitPolicy) { p.PeriodicReset = &r }
}

func alertAt(v float64) func(*storage.UsageLimitPolicy) {
	return func(p *storage.UsageLimitPolicy) { p.AlertThreshold = &v }
}

func budgetGroupBy(k string) func(*storage.UsageLimitPolicy) {
	return func(p *storage.UsageLimitPolicy) { p.GroupBy = append(p.GroupBy, storage.PolicyGroup{Key: k}) }
}

// tokensBody is a request whose reservation is len(body) + 10 tokens.
const tokensBody = `{"model":"m","max_tokens":10}`

func (e *benv) attrs(apiKey, body string) *Attrs {
	return &Attrs{WorkspaceID: e.ws, APIKey: apiKey, Body: bodyOf(body)}
}

func (e *benv) reserve(a *Attrs) *Hold {
	e.t.Helper()
	h, ex := e.b.Reserve(a)
	if ex != nil {
		e.t.Fatalf("refused at %v: %v", e.clk.Now(), ex)
	}
	return h
}

func (e *benv) refused(a *Attrs) *BudgetExceeded {
	e.t.Helper()
	h, ex := e.b.Reserve(a)
	if ex == nil {
		h.Settle(nil)
		e.t.Fatalf("admitted at %v, want refused", e.clk.Now())
	}
	return ex
}

// spendTokens reserves and settles n tokens.
func (e *benv) spendTokens(a *Attrs, n int64) {
	e.t.Helper()
	e.reserve(a).Settle(&Spend{InputTokens: n})
}

func TestBudgetTokensReserveAndSettle(t *testing.T) {
	e := newBenv(t, nil, nil)
	reservation := float64(len(tokensBody) + 10)
	p := e.policy("tokens", 3*reservation)
	a := e.attrs("k", tokensBody)

	h1, h2, h3 := e.reserve(a), e.reserve(a), e.reserve(a)
	ex := e.refused(a) // three reservations fill the limit
	if ex.PolicyID != p.ID || ex.Limit != 3*reservation || !strings.Contains(ex.Error(), p.ID) {
		t.Fatalf("refusal %+v / %q", ex, ex.Error())
	}
	h1.Settle(nil) // a failed request releases its reservation
	h1.Settle(&Spend{InputTokens: 1000})
	h4 := e.reserve(a)
	h2.Settle(&Spend{InputTokens: 3, OutputTokens: 2})
	h3.Settle(&Spend{InputTokens: 5})
	h4.Settle(&Spend{OutputTokens: 1})
	if u := e.b.Usage(p); u.Current != 11 || u.Exhausted || u.Periodic {
		t.Fatalf("usage %+v, want 11 and not exhausted", u)
	}
	if got := e.refuse.Load(); got != 1 {
		t.Fatalf("OnExceeded called %d times, want 1", got)
	}
}

func TestBudgetReservationBounds(t *testing.T) {
	tests := []struct {
		name, body string
		tokens     float64
	}{
		{"max_tokens", `{"model":"x","max_tokens":7}`, 7},
		{"the largest output field", `{"model":"x","max_completion_tokens":9,"max_tokens":3}`, 9},
		{"responses max_output_tokens", `{"model":"x","max_output_tokens":5}`, 5},
		{"the catalogue's MaxOutputTokens", `{"model":"gpt-4o"}`, 16384},
		{"the default", `{"model":"not-in-the-catalogue"}`, DefaultReserveOutputTokens},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := estimate(bodyOf(tc.body))
			if want := float64(len(tc.body)) + tc.tokens; r.tokens != want {
				t.Fatalf("tokens %v, want %v", r.tokens, want)
			}
		})
	}
	// gpt-4o at the dearest listed price: openai's 2.5 / 10 USD per million.
	body := `{"model":"gpt-4o","max_tokens":1000}`
	r := estimate(bodyOf(body))
	if want := (float64(len(body))*2.5 + 1000*10) / 1e6; !r.priced || r.cost != want {
		t.Fatalf("cost %v priced %v, want %v", r.cost, r.priced, want)
	}
}

func TestBudgetCostUnpricedModel(t *testing.T) {
	e := newBenv(t, nil, nil)
	p := e.policy("cost", 0.01)
	a := e.attrs("k", `{"model":"unpriced-model"}`)
	for range 3 {
		e.reserve(a).Settle(&Spend{InputTokens: 10, OutputTokens: 10}) // no price known: 0 USD
	}
	if u := e.b.Usage(p); u.Current != 0 {
		t.Fatalf("usage %+v, want 0", u)
	}
	if n := strings.Count(e.logs.String(), "no price for the model"); n != 1 {
		t.Fatalf("unpriced warnings: %d, want 1 per model:\n%s", n, e.logs.String())
	}
	e.reserve(a).Settle(&Spend{CostUSD: 0.02, CostKnown: true})
	if u := e.b.Usage(p); u.Current != 0.02 || !u.Exhausted {
		t.Fatalf("usage %+v, want 0.02 exhausted", u)
	}
	e.refused(a)
}

func TestBudgetPeriodicReset(t *testing.T) {
	tests := []struct {
		name, reset   string
		before, after time.Time // the last instant of a period and the first of the next
	}{
		{"weekly resets on Monday 00:00 UTC", "weekly",
			time.Date(2024, 5, 5, 23, 59, 59, 0, time.UTC), time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC)},
		{"monthly resets on the 1st 00:00 UTC", "monthly",
			time.Date(2024, 2, 29, 23, 59, 59, 0, time.UTC), time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"monthly across a year", "monthly",
			time.Date(2024, 12, 31, 23, 0, 0, 0, time.UTC), time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			clk.Set(tc.before.Add(-time.Hour))
			e := newBenv(t, nil, clk)
			p := e.policy("tokens", 100, resetEvery(tc.reset), alertAt(50))
			a := e.attrs("k", tokensBody)

			e.spendTokens(a, 60)
			e.spendTokens(a, 10) // past the threshold again: no second alert in the period
			if got := e.alerts.Load(); got != 1 {
				t.Fatalf("alerts %d, want 1", got)
			}
			e.spendTokens(a, 40)
			clk.Set(tc.before)
			u := e.b.Usage(p)
			if u.Current != 110 || !u.Exhausted {
				t.Fatalf("usage %+v, want 110 exhausted", u)
			}
			if wantEnd := tc.after.Unix(); u.PeriodEnd != wantEnd || !u.Periodic {
				t.Fatalf("period end %d, want %d", u.PeriodEnd, wantEnd)
			}
			e.refused(a)

			clk.Set(tc.after)
			if u := e.b.Usage(p); u.Current != 0 || u.Exhausted || u.PeriodStart != tc.after.Unix() {
				t.Fatalf("usage after reset %+v", u)
			}
			e.spendTokens(a, 55)
			if got := e.alerts.Load(); got != 2 {
				t.Fatalf("alerts %d, want a second one in the new period", got)
			}
			if n := strings.Count(e.logs.String(), "alert threshold reached"); n != 2 {
				t.Fatalf("alert log lines %d, want 2", n)
			}
		})
	}
}

func TestPeriodBounds(t *testing.T) {
	// Wednesday 2024-05-01 12:00 UTC; in another zone the same instant.
	at := time.Date(2024, 5, 1, 14, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	s, end, ok := PeriodBounds("weekly", at)
	if !ok || time.Unix(s, 0).UTC() != time.Date(2024, 4, 29, 0, 0, 0, 0, time.UTC) || end-s != 7*86400 {
		t.Fatalf("weekly %v %v", time.Unix(s, 0).UTC(), time.Unix(end, 0).UTC())
	}
	s, end, _ = PeriodBounds("monthly", at)
	if time.Unix(s, 0).UTC() != time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC) || time.Unix(end, 0).UTC() != time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC) {
		t.Fatalf("monthly %v %v", time.Unix(s, 0).UTC(), time.Unix(end, 0).UTC())
	}
	if _, _, ok := PeriodBounds("", at); ok {
		t.Fatal("no reset has no period")
	}
}

func TestBudgetGroupBy(t *testing.T) {
	e := newBenv(t, nil, nil)
	p := e.policy("tokens", 100, budgetGroupBy("api_key"))
	e.spendTokens(e.attrs("a", tokensBody), 100)
	e.spendTokens(e.attrs("b", tokensBody), 30)
	e.refused(e.attrs("a", tokensBody))
	e.reserve(e.attrs("b", tokensBody)).Settle(nil)
	u := e.b.Usage(p)
	if u.Current != 130 || u.Exhausted || len(u.Groups) != 2 {
		t.Fatalf("usage %+v", u)
	}
	if g := u.Groups[0]; g.Group["api_key"] != "a" || g.Usage != 100 || !g.Exhausted {
		t.Fatalf("largest group %+v", g)
	}
	if g := u.Groups[1]; g.Group["api_key"] != "b" || g.Usage != 30 || g.Exhausted {
		t.Fatalf("second group %+v", g)
	}
}

func TestBudgetConditionsAndAllOrNothing(t *testing.T) {
	e := newBenv(t, nil, nil)
	wide := e.policy("tokens", 1000)
	narrow := e.policy("tokens", 50, func(p *storage.UsageLimitPolicy) {
		p.Conditions = append(p.Conditions, storage.PolicyMatch{Key: "metadata.team", Value: "x"})
	})
	x := e.attrs("k", tokensBody)
	x.Metadata = map[string]string{"team": "x"}
	e.spendTokens(x, 50)
	e.refused(x) // narrow is exhausted: wide must not hold anything for the refused request
	e.spendTokens(e.attrs("k", tokensBody), 5)
	if u := e.b.Usage(wide); u.Current != 55 {
		t.Fatalf("wide %+v", u)
	}
	if u := e.b.Usage(narrow); u.Current != 50 || !u.Exhausted {
		t.Fatalf("narrow %+v", u)
	}
	// reservations left: none, so the wide policy admits up to its limit
	for _, p := range e.b.workspaces.current(e.ws).policies {
		p.set.m.Range(func(_, s any) bool {
			if r := s.(*spend).reserved; r != 0 {
				t.Errorf("policy %s holds %v reserved", p.sel.id, r)
			}
			return true
		})
	}
}

func TestBudgetPolicyChangeAppliesAtOnce(t *testing.T) {
	e := newBenv(t, nil, nil)
	p := e.policy("tokens", 100)
	a := e.attrs("k", tokensBody)
	e.spendTokens(a, 100)
	e.refused(a)
	p.CreditLimit = 200 // same type, reset and group_by: the spend stays, the new limit applies
	e.put(p)
	e.spendTokens(a, 50)
	if u := e.b.Usage(p); u.Current != 150 {
		t.Fatalf("usage %+v", u)
	}
	p.Status = "archived"
	e.put(p)
	e.reserve(a).Settle(&Spend{InputTokens: 1000})
	p.Status = "active"
	p.CreditLimit = 150
	e.put(p)
	e.refused(a)
	if err := e.s.UsageLimits.Delete(e.ws, p.ID); err != nil {
		t.Fatal(err)
	}
	if h := e.reserve(a); h != nil {
		t.Fatalf("a deleted policy still holds: %+v", h)
	}
	if err := e.b.flush(); err != nil {
		t.Fatal(err)
	}
	if recs, _ := e.s.BudgetSpend.List(e.ws, p.ID, 0); len(recs) != 0 {
		t.Fatalf("deleted policy's spend still saved: %d records", len(recs))
	}
}

func TestBudgetSpendSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	clk := newClock()
	s := openStore(t, dir)
	e := newBenv(t, s, clk)
	grouped := e.policy("tokens", 100, budgetGroupBy("api_key"), resetEvery("monthly"), alertAt(10))
	whole := e.policy("tokens", 1000)
	e.spendTokens(e.attrs("a", tokensBody), 100)
	e.spendTokens(e.attrs("b", tokensBody), 7)
	held := e.reserve(e.attrs("b", tokensBody)) // never settled: reservations are not saved
	_ = held
	if err := e.b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := openStore(t, dir)
	e2 := &benv{t: t, s: s2, clk: clk, ws: e.ws, logs: &syncBuffer{}}
	e2.b = e2.open()
	if u := e2.b.Usage(whole); u.Current != 107 {
		t.Fatalf("whole after restart %+v", u)
	}
	e2.refused(e2.attrs("a", tokensBody))
	e2.spendTokens(e2.attrs("b", tokensBody), 2)
	if got := e2.alerts.Load(); got != 0 {
		t.Fatalf("group a alerted before the restart, b is at 9 of its threshold 10: alerts %d, want 0", got)
	}
	e2.spendTokens(e2.attrs("b", tokensBody), 1)
	if got := e2.alerts.Load(); got != 1 {
		t.Fatalf("alerts %d, want 1", got)
	}
	u := e2.b.Usage(grouped)
	if u.Current != 110 || len(u.Groups) != 2 {
		t.Fatalf("grouped after restart %+v", u)
	}
	e2.spendTokens(e2.attrs("c", tokensBody), 1) // nothing of b's unsettled reservation was kept
	if u := e2.b.Usage(whole); u.Current != 111 {
		t.Fatalf("whole %+v", u)
	}
}

func TestBudgetFlusherRuns(t *testing.T) {
	s := openStore(t, "")
	b := NewBudgets(s, BudgetOptions{FlushInterval: 10 * time.Millisecond, Logger: quietLogger()})
	defer b.Close()
	p := &storage.UsageLimitPolicy{ID: storage.NewUUID(), WorkspaceID: "ws-1", Type: "tokens", CreditLimit: 10, Status: "active"}
	if _, err := s.UsageLimits.Put(p.WorkspaceID, p.ID, p); err != nil {
		t.Fatal(err)
	}
	h, _ := b.Reserve(&Attrs{WorkspaceID: "ws-1", Body: bodyOf(tokensBody)})
	h.Settle(&Spend{InputTokens: 4})
	deadline := time.Now().Add(5 * time.Second)
	for {
		recs, err := s.BudgetSpend.List("ws-1", p.ID, 0)
		if err == nil && len(recs) == 1 && recs[0].Spend == 4 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("spend not saved by the flusher: %v %v", recs, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestBudgetHammer: many goroutines reserve and settle against one limit; the spend never passes the limit by
// more than one request's reservation, and every reservation is released.
func TestBudgetHammer(t *testing.T) {
	e := newBenv(t, nil, nil)
	reservation := float64(len(tokensBody) + 10)
	limit := 50 * reservation
	p := e.policy("tokens", limit)
	var wg sync.WaitGroup
	var admitted atomic.Int64
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				h, ex := e.b.Reserve(e.attrs("k", tokensBody))
				if ex != nil {
					continue
				}
				admitted.Add(1)
				h.Settle(&Spend{InputTokens: int64(reservation)}) // the whole reservation used
			}
		}()
	}
	wg.Wait()
	u := e.b.Usage(p)
	if u.Current > limit+reservation || u.Current < limit {
		t.Fatalf("spend %v, want in [%v, %v]", u.Current, limit, limit+reservation)
	}
	if float64(admitted.Load())*reservation != u.Current {
		t.Fatalf("admitted %d, spend %v", admitted.Load(), u.Current)
	}
}

func TestBudgetNilAndEmpty(t *testing.T) {
	var b *Budgets
	if h, ex := b.Reserve(&Attrs{WorkspaceID: "w"}); h != nil || ex != nil {
		t.Fatal("a nil Budgets admits everything")
	}
	var h *Hold
	h.Settle(nil)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	e := newBenv(t, nil, nil)
	if h, ex := e.b.Reserve(e.attrs("k", tokensBody)); h != nil || ex != nil {
		t.Fatal("no policy: nothing held")
	}
}

func TestReserveNoPolicyAllocs(t *testing.T) {
	e := newBenv(t, nil, nil)
	a := e.attrs("k", tokensBody)
	e.b.Reserve(a)
	if n := testing.AllocsPerRun(1000, func() { e.b.Reserve(a) }); n != 0 {
		t.Fatalf("Reserve without policies allocates %v times", n)
	}
}

func BenchmarkReserveNoPolicy(b *testing.B) {
	e := newBenv(b, nil, nil)
	a := e.attrs("k", tokensBody)
	b.ReportAllocs()
	for b.Loop() {
		e.b.Reserve(a)
	}
}

func BenchmarkReserveSettle(b *testing.B) {
	e := newBenv(b, nil, nil)
	e.policy("tokens", 1e18, budgetGroupBy("api_key"))
	a := e.attrs("k", tokensBody)
	b.ReportAllocs()
	for b.Loop() {
		h, _ := e.b.Reserve(a)
		h.Settle(&Spend{InputTokens: 1})
	}
}
