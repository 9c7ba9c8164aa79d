package metrics

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPluginLoadMetrics: compile and instantiate times are histograms by plugin (compile also by cache use,
// an unexpected value counted as unknown), served on the metrics endpoint, bounded like the other user labels,
// and a known series does not allocate.
func TestPluginLoadMetrics(t *testing.T) {
	m := New()
	m.PluginCompiled("pii", 2*time.Second, "miss")
	m.PluginCompiled("pii", 200*time.Millisecond, "hit")
	m.PluginCompiled("router", time.Millisecond, "bogus")
	m.PluginInstantiated("pii", 15*time.Millisecond)
	m.PluginInstantiated("pii", 12*time.Millisecond)

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`gateway_plugin_compile_seconds_count{cache="miss",plugin="pii"} 1`,
		`gateway_plugin_compile_seconds_count{cache="hit",plugin="pii"} 1`,
		`gateway_plugin_compile_seconds_count{cache="unknown",plugin="router"} 1`,
		`gateway_plugin_instantiate_seconds_count{plugin="pii"} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the metrics lack %s", want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { m.PluginCompiled("pii", time.Second, "hit"); m.PluginInstantiated("pii", time.Millisecond) }); n != 0 {
		t.Errorf("known series allocate %v times per report", n)
	}

	for i := 0; i < MaxSeries+10; i++ {
		m.PluginCompiled("p"+strconv.Itoa(i), time.Millisecond, "hit")
		m.PluginInstantiated("p"+strconv.Itoa(i), time.Millisecond)
	}
	if got := count(t, m, "gateway_plugin_instantiate_seconds"); got != MaxSeries+1 {
		t.Errorf("%d instantiate series, want %d", got, MaxSeries+1)
	}
	if got := count(t, m, "gateway_plugin_compile_seconds"); got != MaxSeries+1 {
		t.Errorf("%d compile series, want %d", got, MaxSeries+1)
	}
}
