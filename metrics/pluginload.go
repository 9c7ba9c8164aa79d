package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Buckets of a plugin's cold start: a Go guest compiles in seconds (tenths of a second from the compilation
// cache), and an instance initialises in 10–20 ms (a guest is stopped after 5 s).
var (
	compileBuckets     = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	instantiateBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}
)

type compileKey struct{ plugin, cache string }

// pluginLoadMetrics are gateway_plugin_compile_seconds and gateway_plugin_instantiate_seconds. Plugin IDs are
// users' to choose: past MaxSeries the rest count under OtherLabel.
type pluginLoadMetrics struct {
	compile     labelled[compileKey, prometheus.Observer]
	instantiate labelled[string, prometheus.Observer]
}

func newPluginLoadMetrics(reg *prometheus.Registry) *pluginLoadMetrics {
	compile := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "gateway_plugin_compile_seconds", Help: "Compile time of each wasm plugin version loaded, by plugin and cache (hit: the code came from the compilation cache; miss: compiled; unknown: no cache folder).",
		Buckets: compileBuckets,
	}, []string{"plugin", "cache"})
	instantiate := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "gateway_plugin_instantiate_seconds", Help: "Time to make a new instance of a wasm plugin, its initialisation included, by plugin.",
		Buckets: instantiateBuckets,
	}, []string{"plugin"})
	reg.MustRegister(compile, instantiate)
	p := &pluginLoadMetrics{}
	p.compile.init(func(k compileKey) prometheus.Observer { return compile.WithLabelValues(k.plugin, k.cache) },
		func(k compileKey) compileKey { return compileKey{OtherLabel, k.cache} })
	p.instantiate.init(func(k string) prometheus.Observer { return instantiate.WithLabelValues(k) }, func(string) string { return OtherLabel })
	return p
}

// PluginCompiled records the compile time of a plugin version that loaded; cache is "hit", "miss" or
// "unknown" (plugins.CacheUse).
func (m *Metrics) PluginCompiled(plugin string, d time.Duration, cache string) {
	switch cache {
	case "hit", "miss":
	default:
		cache = "unknown"
	}
	m.pluginLoad.compile.get(compileKey{plugin, cache}).Observe(d.Seconds())
}

// PluginInstantiated records the time a new instance of a plugin took to make.
func (m *Metrics) PluginInstantiated(plugin string, d time.Duration) {
	m.pluginLoad.instantiate.get(plugin).Observe(d.Seconds())
}
