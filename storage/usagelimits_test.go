package storage

import (
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestBudgetStore(t *testing.T) {
	s := openTest(t, vfs.NewMem(), nil)
	recs := []*BudgetRecord{
		{WorkspaceID: "ws", PolicyID: "p1", Group: "", Type: "cost", Spend: 1.5},
		{WorkspaceID: "ws", PolicyID: "p2", Group: "api_key=a", Type: "tokens", Reset: "monthly", PeriodStart: 1700000000, Spend: 10, Alerted: true},
		{WorkspaceID: "ws", PolicyID: "p2", Group: "api_key=b", Type: "tokens", Reset: "monthly", PeriodStart: 1700000000, Spend: 3},
	}
	if err := s.BudgetSpend.SaveBatch(recs, nil); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.BudgetSpend.Load("ws", "p2", "api_key=a")
	if err != nil || !ok || got.Spend != 10 || !got.Alerted || got.Reset != "monthly" || got.PeriodStart != 1700000000 || got.PolicyID != "p2" {
		t.Fatalf("Load = %+v %v %v", got, ok, err)
	}
	if _, ok, _ := s.BudgetSpend.Load("ws", "p2", "api_key=c"); ok {
		t.Fatal("a group never saved was found")
	}
	if list, err := s.BudgetSpend.List("ws", "p2", 0); err != nil || len(list) != 2 {
		t.Fatalf("List = %v %v", list, err)
	}
	if list, _ := s.BudgetSpend.List("ws", "p2", 1); len(list) != 1 {
		t.Fatalf("List with a limit of 1 = %d records", len(list))
	}
	if ids, err := s.BudgetSpend.PolicyIDs("ws"); err != nil || len(ids) != 2 || ids[0] != "p1" || ids[1] != "p2" {
		t.Fatalf("PolicyIDs = %v %v", ids, err)
	}
	if err := s.BudgetSpend.DeletePolicy("ws", "p2"); err != nil {
		t.Fatal(err)
	}
	if ids, _ := s.BudgetSpend.PolicyIDs("ws"); len(ids) != 1 || ids[0] != "p1" {
		t.Fatalf("PolicyIDs after delete = %v", ids)
	}
	if err := s.BudgetSpend.SaveBatch(nil, []CounterKey{{WorkspaceID: "ws", PolicyID: "p1"}}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.BudgetSpend.Load("ws", "p1", ""); ok {
		t.Fatal("a dropped group is still saved")
	}
	if err := s.BudgetSpend.SaveBatch([]*BudgetRecord{{WorkspaceID: "bad/id", PolicyID: "p"}}, nil); err == nil {
		t.Fatal("an invalid workspace id was saved")
	}
}

func TestUsageLimitsDocStore(t *testing.T) {
	s := openTest(t, vfs.NewMem(), nil)
	limit := 5.0
	p := &UsageLimitPolicy{ID: "u1", WorkspaceID: "ws", Type: "cost", CreditLimit: 10, AlertThreshold: &limit, Status: "active"}
	gen := s.UsageLimits.Generation()
	if _, err := s.UsageLimits.Put("ws", "u1", p); err != nil {
		t.Fatal(err)
	}
	if s.UsageLimits.Generation() == gen {
		t.Fatal("a write did not change the generation")
	}
	got, err := s.UsageLimits.Get("ws", "u1")
	if err != nil || got.CreditLimit != 10 || *got.AlertThreshold != 5 || got.PeriodicReset != nil || got.CreatedAt.IsZero() {
		t.Fatalf("Get = %+v %v", got, err)
	}
}
