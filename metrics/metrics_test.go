package metrics

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// value is a counter's value.
func value(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// count is how many series of name the registry holds.
func count(t *testing.T, m *Metrics, name string) int {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() == name {
			return len(mf.GetMetric())
		}
	}
	return 0
}

func TestObserveRequestDoesNotAllocate(t *testing.T) {
	m := New()
	r := &Request{Endpoint: "chat/completions", Provider: "openai", Model: "gpt-4o-mini", Status: 200, CacheStatus: "MISS",
		Duration: time.Millisecond, Upstream: 800 * time.Microsecond, FirstToken: 300 * time.Microsecond, Retries: 1, Fallbacks: 1,
		InputTokens: 5, OutputTokens: 2, UsageKnown: true, CostUSD: 1e-6, CostKnown: true}
	m.ObserveRequest(r) // creates the series
	if n := testing.AllocsPerRun(100, func() { m.ObserveRequest(r) }); n != 0 {
		t.Errorf("ObserveRequest allocates %v times per call", n)
	}
}

// TestObserveRequestHammer reports from many goroutines at once, new series and known ones, and checks the sums.
func TestObserveRequestHammer(t *testing.T) {
	m := New()
	const goroutines, each = 8, 500
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Go(func() {
			for i := 0; i < each; i++ {
				m.ObserveRequest(&Request{Endpoint: "chat/completions", Provider: "openai", Model: "m" + strconv.Itoa(i%10),
					Status: 200, Duration: time.Millisecond, Retries: 1, InputTokens: 3, OutputTokens: 1, UsageKnown: true})
			}
		})
	}
	wg.Wait()
	if got := value(t, m.retries); got != goroutines*each {
		t.Errorf("retries = %v, want %d", got, goroutines*each)
	}
	if got := count(t, m, "gateway_requests_total"); got != 10 {
		t.Errorf("%d request series, want 10", got)
	}
	if got := value(t, m.tokens.WithLabelValues("openai", "m3", "input")); got != 3*goroutines*each/10 {
		t.Errorf("input tokens of m3 = %v", got)
	}
}

func TestSeriesAreBounded(t *testing.T) {
	m := New()
	for i := 0; i < MaxSeries+10; i++ {
		m.ObserveRequest(&Request{Endpoint: "chat/completions", Provider: "p", Model: strconv.Itoa(i), Status: 200})
	}
	if got := count(t, m, "gateway_requests_total"); got != MaxSeries+1 {
		t.Errorf("%d series, want %d", got, MaxSeries+1)
	}
	if got := value(t, m.requests.WithLabelValues("chat/completions", "p", OtherModel, "200", "")); got != 10 {
		t.Errorf("other = %v, want 10", got)
	}
}

func TestHookPluginAndBreakerMetrics(t *testing.T) {
	m := New()
	m.GuardrailVerdict("default.regexMatch", "pass")
	m.GuardrailVerdict("default.regexMatch", "pass")
	m.GuardrailVerdict("pii.scan", "deny")
	m.PluginCall("pii", 3*time.Millisecond)
	m.CircuitChanged("openai config.targets[0]", true)
	m.CircuitChanged("openai config.targets[1]", true)
	m.CircuitChanged("openai config.targets[1]", false)
	if got := value(t, m.verdicts.get(verdictKey{"default.regexMatch", "pass"})); got != 2 {
		t.Errorf("pass verdicts = %v, want 2", got)
	}
	if got := count(t, m, "gateway_guardrail_verdicts_total"); got != 2 {
		t.Errorf("%d verdict series, want 2", got)
	}
	if got := count(t, m, "gateway_plugin_call_duration_seconds"); got != 1 {
		t.Errorf("%d plugin series, want 1", got)
	}
	var g dto.Metric
	m.circuits.get("openai config.targets[1]").Write(&g)
	if g.GetGauge().GetValue() != 0 {
		t.Errorf("a closed breaker reads %v", g.GetGauge().GetValue())
	}
	m.circuits.get("openai config.targets[0]").Write(&g)
	if g.GetGauge().GetValue() != 1 {
		t.Errorf("an open breaker reads %v", g.GetGauge().GetValue())
	}
	if n := testing.AllocsPerRun(100, func() { m.GuardrailVerdict("pii.scan", "deny"); m.PluginCall("pii", time.Millisecond) }); n != 0 {
		t.Errorf("known series allocate %v times per call", n)
	}
}

// TestUserLabelsAreBounded: checks, plugins and targets are named by users; past MaxSeries they count as other.
func TestUserLabelsAreBounded(t *testing.T) {
	m := New()
	for i := 0; i < MaxSeries+10; i++ {
		m.PluginCall("p"+strconv.Itoa(i), time.Millisecond)
		m.GuardrailVerdict("c"+strconv.Itoa(i), "pass")
	}
	if got := count(t, m, "gateway_plugin_call_duration_seconds"); got != MaxSeries+1 {
		t.Errorf("%d plugin series, want %d", got, MaxSeries+1)
	}
	if got := count(t, m, "gateway_guardrail_verdicts_total"); got != MaxSeries+1 {
		t.Errorf("%d verdict series, want %d", got, MaxSeries+1)
	}
}
