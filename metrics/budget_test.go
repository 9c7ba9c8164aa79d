package metrics

import "testing"

func TestBudgetCounters(t *testing.T) {
	m := New()
	m.BudgetAlert()
	m.BudgetExceeded()
	m.BudgetExceeded()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			if c := metric.GetCounter(); c != nil {
				got[f.GetName()] += c.GetValue()
			}
		}
	}
	if got["gateway_budget_alerts_total"] != 1 || got["gateway_budget_exceeded_total"] != 2 {
		t.Errorf("alerts %v, exceeded %v; want 1 and 2", got["gateway_budget_alerts_total"], got["gateway_budget_exceeded_total"])
	}
	var none *Metrics
	none.BudgetAlert()
	none.BudgetExceeded()
}
