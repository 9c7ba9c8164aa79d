package metrics

import "github.com/prometheus/client_golang/prometheus"

// newLogDrops is the counter of request log entries the log writer (package reqlog) dropped: its queue was
// full, or a write failed. A full log store never slows or fails a request, so this is where it shows.
func newLogDrops(reg prometheus.Registerer) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gateway_log_entries_dropped_total", Help: "Request log entries dropped instead of stored: the log writer's queue was full, or a write failed.",
	})
	reg.MustRegister(c)
	return c
}

// LogEntriesDropped counts n request log entries dropped. Safe on a nil Metrics; it does not allocate.
func (m *Metrics) LogEntriesDropped(n int) {
	if m != nil && n > 0 {
		m.logDrops.Add(float64(n))
	}
}
