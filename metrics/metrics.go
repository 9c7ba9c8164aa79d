package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MaxSeries bounds the request series (endpoint, provider, model, status code, cache status) kept: past it, a
// new series is counted under the model "other", so that callers naming endless models cannot grow the
// registry without bound.
const MaxSeries = 4096

// OtherModel is the model label of requests past MaxSeries.
const OtherModel = "other"

// Metrics holds the gateway's metrics in a registry of its own. The zero value is not usable: call New.
// It is safe for concurrent use.
type Metrics struct {
	reg    *prometheus.Registry
	budget budgetMetrics // budget.go

	logDrops prometheus.Counter // logs.go
	tools    *toolMetrics       // tools.go

	pluginLoad *pluginLoadMetrics // pluginload.go

	redis     redisMetrics // redis.go; registered once used
	redisOnce sync.Once

	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	upstream    *prometheus.HistogramVec
	overhead    *prometheus.HistogramVec
	ttft        *prometheus.HistogramVec
	tokens      *prometheus.CounterVec
	cost        *prometheus.CounterVec
	retries     prometheus.Counter
	fallbacks   prometheus.Counter
	rateLimited prometheus.Counter

	verdicts    labelled[verdictKey, prometheus.Counter]
	pluginCalls labelled[string, prometheus.Observer]
	circuits    labelled[string, prometheus.Gauge]

	mu     sync.RWMutex
	series map[seriesKey]*series
}

// seriesKey names one request series.
type seriesKey struct {
	endpoint, provider, model, cache string
	status                           int
}

// series holds a request series' label children, created once.
type series struct {
	requests      prometheus.Counter
	duration      prometheus.Observer
	upstream      prometheus.Observer
	overhead      prometheus.Observer
	ttft          prometheus.Observer
	input, output prometheus.Counter // tokens; nil until the series first reports usage
	cost          prometheus.Counter
	usageOnce     sync.Once
	provider      string // the series' labels, for its usage children
	model         string
}

// Buckets of the latency histograms: whole requests run from milliseconds (a cache hit) to minutes (a long
// generation); the gateway's own time is microseconds to milliseconds.
var (
	requestBuckets  = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}
	overheadBuckets = []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1}
	pluginBuckets   = []float64{.00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .05, .1, .5, 1}
)

// New builds the metrics and registers them, with the Go runtime and process collectors, in a new registry.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_requests_total", Help: "Inference requests answered, by endpoint, provider, model, status code and cache status.",
		}, []string{"endpoint", "provider", "model", "status_code", "cache_status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gateway_request_duration_seconds", Help: "Whole inference request duration, from the request's arrival to its answer's end.",
			Buckets: requestBuckets,
		}, []string{"endpoint", "provider"}),
		upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gateway_upstream_duration_seconds", Help: "Time spent waiting on providers per request: every attempt, retries and fallbacks included, to the answer's end (a stream's last event).",
			Buckets: requestBuckets,
		}, []string{"provider"}),
		overhead: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gateway_overhead_duration_seconds", Help: "The gateway's own time per request: the whole request less the time spent waiting on providers.",
			Buckets: overheadBuckets,
		}, []string{"endpoint"}),
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gateway_time_to_first_token_seconds", Help: "Streamed requests: from the request's arrival to the first event sent to the caller.",
			Buckets: requestBuckets,
		}, []string{"provider"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_tokens_total", Help: "Tokens of answers from providers (cache hits excluded), by kind input or output; streams without reported usage are estimated.",
		}, []string{"provider", "model", "kind"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_cost_usd_total", Help: "Cost in USD of answers from providers, priced from the model catalogue (models without a price are not counted).",
		}, []string{"provider", "model"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_retries_total", Help: "Retries made, on every target a request called.",
		}),
		fallbacks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_fallbacks_total", Help: "Targets a fallback strategy moved past (failed or skipped) to try the next one.",
		}),
		rateLimited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_rate_limited_total", Help: "Requests refused by the gateway's rate-limit policies.",
		}),
		series: make(map[seriesKey]*series),
	}
	verdicts := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_guardrail_verdicts_total", Help: "Guardrail check results on hooks, by check and verdict (pass, fail, deny, error).",
	}, []string{"check", "verdict"})
	m.verdicts.init(func(k verdictKey) prometheus.Counter { return verdicts.WithLabelValues(k.check, k.verdict) },
		func(k verdictKey) verdictKey { return verdictKey{OtherLabel, k.verdict} })
	pluginCalls := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "gateway_plugin_call_duration_seconds", Help: "Duration of wasm plugin calls (checks, conditions), by plugin.", Buckets: pluginBuckets,
	}, []string{"plugin"})
	m.pluginCalls.init(func(k string) prometheus.Observer { return pluginCalls.WithLabelValues(k) }, func(string) string { return OtherLabel })
	circuits := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gateway_circuit_open", Help: "1 while a target's circuit breaker is open (or probing), 0 once it closed again; target is \"<provider> <option path>\".",
	}, []string{"target"})
	m.circuits.init(func(k string) prometheus.Gauge { return circuits.WithLabelValues(k) }, func(string) string { return OtherLabel })
	m.reg.MustRegister(m.requests, m.duration, m.upstream, m.overhead, m.ttft, m.tokens, m.cost, m.retries, m.fallbacks,
		m.rateLimited, verdicts, pluginCalls, circuits,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.budget = newBudgetMetrics(m.reg)
	m.logDrops = newLogDrops(m.reg)
	m.tools = newToolMetrics(m.reg)
	m.pluginLoad = newPluginLoadMetrics(m.reg)
	m.redis = newRedisMetrics(m.reg)
	return m
}

// Registry is the registry holding the metrics, for tests and for registering more collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Request is what one inference request reports once its answer is sent.
type Request struct {
	Endpoint    string // "chat/completions", "completions", "embeddings", "responses"
	Provider    string // the canonical identifier of the provider that answered; empty when none did
	Model       string // the model the caller asked for
	Status      int    // the HTTP status the caller got
	CacheStatus string
	Duration    time.Duration // the whole request
	// Upstream is the time spent waiting on providers (0 when none was called); the rest of Duration is the
	// gateway's own.
	Upstream time.Duration
	// FirstToken is, for a stream, the time from the request's arrival to the first event sent; 0 otherwise.
	FirstToken  time.Duration
	Retries     int
	Fallbacks   int
	RateLimited bool // refused by the gateway's rate-limit policies
	// Usage of the answer from the provider; UsageKnown is false when it had none (cache hits, failures).
	InputTokens, OutputTokens int64
	UsageKnown                bool
	// CostUSD is the usage priced from the catalogue; CostKnown is false when the model has no price.
	CostUSD   float64
	CostKnown bool
}

// ObserveRequest counts one request. It does not allocate once the request's series exists.
func (m *Metrics) ObserveRequest(r *Request) {
	s := m.lookup(seriesKey{endpoint: r.Endpoint, provider: r.Provider, model: r.Model, cache: r.CacheStatus, status: r.Status})
	s.requests.Inc()
	s.duration.Observe(r.Duration.Seconds())
	if r.Upstream > 0 {
		s.upstream.Observe(r.Upstream.Seconds())
	}
	s.overhead.Observe(max(r.Duration-r.Upstream, 0).Seconds())
	if r.FirstToken > 0 {
		s.ttft.Observe(r.FirstToken.Seconds())
	}
	if r.Retries > 0 {
		m.retries.Add(float64(r.Retries))
	}
	if r.Fallbacks > 0 {
		m.fallbacks.Add(float64(r.Fallbacks))
	}
	if r.RateLimited {
		m.rateLimited.Inc()
	}
	if r.UsageKnown {
		s.usageOnce.Do(func() { m.usageChildren(s) })
		s.input.Add(float64(r.InputTokens))
		s.output.Add(float64(r.OutputTokens))
		if r.CostKnown {
			s.cost.Add(r.CostUSD)
		}
	}
}

func (m *Metrics) lookup(k seriesKey) *series {
	m.mu.RLock()
	s := m.series[k]
	full := len(m.series) >= MaxSeries
	m.mu.RUnlock()
	if s != nil {
		return s
	}
	if full {
		k.model = OtherModel
		m.mu.RLock()
		s = m.series[k]
		m.mu.RUnlock()
		if s != nil {
			return s
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s = m.series[k]; s != nil {
		return s
	}
	// The key's strings may share memory with a request's buffers: the map keeps copies.
	k = seriesKey{endpoint: clone(k.endpoint), provider: clone(k.provider), model: clone(k.model), cache: clone(k.cache), status: k.status}
	s = &series{
		requests: m.requests.WithLabelValues(k.endpoint, k.provider, k.model, strconv.Itoa(k.status), k.cache),
		duration: m.duration.WithLabelValues(k.endpoint, k.provider),
		upstream: m.upstream.WithLabelValues(k.provider),
		overhead: m.overhead.WithLabelValues(k.endpoint),
		ttft:     m.ttft.WithLabelValues(k.provider),
		provider: k.provider, model: k.model,
	}
	m.series[k] = s
	return s
}

// usageChildren creates a series' token and cost children, once, on its first answer with usage.
func (m *Metrics) usageChildren(s *series) {
	provider, model := s.provider, s.model
	s.input = m.tokens.WithLabelValues(provider, model, "input")
	s.output = m.tokens.WithLabelValues(provider, model, "output")
	s.cost = m.cost.WithLabelValues(provider, model)
}

// verdictKey names one guardrail verdict series.
type verdictKey struct{ check, verdict string }

// GuardrailVerdict counts one check's verdict on a hook (runtime.Observer).
func (m *Metrics) GuardrailVerdict(check, verdict string) {
	m.verdicts.get(verdictKey{check, verdict}).Inc()
}

// PluginCall records the duration of one wasm plugin call.
func (m *Metrics) PluginCall(plugin string, d time.Duration) {
	m.pluginCalls.get(plugin).Observe(d.Seconds())
}

// CircuitChanged sets a target's gateway_circuit_open (runtime.Observer).
func (m *Metrics) CircuitChanged(target string, open bool) {
	v := 0.0
	if open {
		v = 1
	}
	m.circuits.get(target).Set(v)
}

// OtherLabel stands for the label values past MaxSeries of a metric whose labels users name (checks, plugins,
// targets), so that they cannot grow the registry without bound.
const OtherLabel = "other"

// labelled keeps the label children of one metric by key, made once, at most MaxSeries of them; past that a new
// key is folded by other into a catch-all child.
type labelled[K comparable, C any] struct {
	mu       sync.RWMutex
	children map[K]C
	newChild func(K) C
	other    func(K) K
}

func (l *labelled[K, C]) init(newChild func(K) C, other func(K) K) {
	l.children, l.newChild, l.other = make(map[K]C), newChild, other
}

func (l *labelled[K, C]) get(k K) C {
	l.mu.RLock()
	c, ok := l.children[k]
	full := len(l.children) >= MaxSeries
	l.mu.RUnlock()
	if ok {
		return c
	}
	if full {
		k = l.other(k)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok = l.children[k]; ok {
		return c
	}
	c = l.newChild(k)
	l.children[k] = c
	return c
}

func clone(s string) string { return string(append([]byte(nil), s...)) }
