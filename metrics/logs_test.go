package metrics

import "testing"

func TestLogEntriesDropped(t *testing.T) {
	m := New()
	m.LogEntriesDropped(2)
	m.LogEntriesDropped(0)
	m.LogEntriesDropped(1)
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range families {
		if mf.GetName() == "gateway_log_entries_dropped_total" {
			found = true
			if got := mf.GetMetric()[0].GetCounter().GetValue(); got != 3 {
				t.Fatalf("gateway_log_entries_dropped_total = %v, want 3", got)
			}
		}
	}
	if !found {
		t.Fatal("gateway_log_entries_dropped_total is not registered")
	}
	var none *Metrics
	none.LogEntriesDropped(1) // no panic
}
