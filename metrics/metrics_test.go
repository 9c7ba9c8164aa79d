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
		Duration: time.Millisecond, Retries: 1, InputTokens: 5, OutputTokens: 2, UsageKnown: true}
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
