package metrics

import "github.com/prometheus/client_golang/prometheus"

// budgetMetrics count the usage-limit policies' (budgets') events. The counters carry no labels: policy IDs
// are unbounded, and the log line of each alert names the policy.
type budgetMetrics struct {
	alerts   prometheus.Counter
	exceeded prometheus.Counter
}

func newBudgetMetrics(reg prometheus.Registerer) budgetMetrics {
	b := budgetMetrics{
		alerts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_budget_alerts_total", Help: "Times a budget group's spend reached its policy's alert_threshold (once per group and period).",
		}),
		exceeded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_budget_exceeded_total", Help: "Requests refused with budget_exceeded by the usage-limit policies.",
		}),
	}
	reg.MustRegister(b.alerts, b.exceeded)
	return b
}

// BudgetAlert counts an alert threshold reached. Safe on a nil Metrics.
func (m *Metrics) BudgetAlert() {
	if m != nil {
		m.budget.alerts.Inc()
	}
}

// BudgetExceeded counts a request refused by a budget. Safe on a nil Metrics.
func (m *Metrics) BudgetExceeded() {
	if m != nil {
		m.budget.exceeded.Inc()
	}
}
