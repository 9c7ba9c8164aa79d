package runtime

import (
	"crypto/rand"
	"github.com/llmgw/gateway/runtime/gwerr"
	"log/slog"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime/ratelimit"
	"github.com/llmgw/gateway/runtime/schema"
	"github.com/llmgw/gateway/storage"
)

// budgetEngine is an engine over an in-memory store that enforces budgets, and a request of workspace "ws-1".
func budgetEngine(tb testing.TB) (*Engine, *storage.Store, *Request) {
	tb.Helper()
	master := make([]byte, storage.MasterKeySize)
	rand.Read(master)
	st, err := storage.Open("mem", storage.Options{MasterKey: master, InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	b := ratelimit.NewBudgets(st, ratelimit.BudgetOptions{FlushInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	tb.Cleanup(func() { b.Close() })
	e := New(st, Options{Budgets: b, Logger: slog.New(slog.DiscardHandler)})
	req := &Request{Key: &storage.APIKey{ID: "key-1", WorkspaceID: "ws-1"},
		Body: schema.NewBody([]byte(`{"model":"gpt-4o","max_tokens":10,"messages":[]}`))}
	return e, st, req
}

func TestReserveBudgetSettle(t *testing.T) {
	e, st, req := budgetEngine(t)
	pol := &storage.UsageLimitPolicy{ID: "p1", WorkspaceID: "ws-1", Type: "tokens", CreditLimit: 100, Status: "active"}
	if _, err := st.UsageLimits.Put("ws-1", "p1", pol); err != nil {
		t.Fatal(err)
	}
	hold, refused := e.reserveBudget(req)
	if refused != nil || hold == nil {
		t.Fatalf("reserve: %v", refused)
	}
	hold.settle(&Response{Usage: Usage{InputTokens: 60, OutputTokens: 40, Known: true}})
	hold.settle(&Response{Usage: Usage{InputTokens: 60, Known: true}}) // once only
	if u := e.BudgetUsage(pol); u.Current != 100 || !u.Exhausted {
		t.Fatalf("usage %+v", u)
	}
	_, refused = e.reserveBudget(req)
	if refused == nil || refused.Status != 429 || refused.Code != gwerr.CodeBudgetExceeded {
		t.Fatalf("refusal %+v", refused)
	}
	var none *budgetHold
	none.settle(nil)
}

func TestReserveBudgetNoPolicyAllocs(t *testing.T) {
	e, _, req := budgetEngine(t)
	e.reserveBudget(req)
	if n := testing.AllocsPerRun(1000, func() {
		h, _ := e.reserveBudget(req)
		h.settle(nil)
	}); n != 0 {
		t.Fatalf("reserveBudget without policies allocates %v times", n)
	}
}

// BenchmarkReserveBudgetNoPolicy is the cost budgets add to a request of a workspace without usage-limit
// policies: about an atomic load, nothing allocated.
func BenchmarkReserveBudgetNoPolicy(b *testing.B) {
	e, _, req := budgetEngine(b)
	b.ReportAllocs()
	for b.Loop() {
		h, _ := e.reserveBudget(req)
		h.settle(nil)
	}
}
