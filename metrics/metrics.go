package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/llmgw/gateway/runtime/catalog"
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
	reg *prometheus.Registry

	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	tokens      *prometheus.CounterVec
	cost        *prometheus.CounterVec
	retries     prometheus.Counter
	rateLimited prometheus.Counter

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
	input, output prometheus.Counter // tokens; nil until the series first reports usage
	cost          prometheus.Counter // nil when the catalogue has no price for the model
	inPrice       float64            // USD per million tokens
	outPrice      float64
	usageOnce     sync.Once
	provider      string // the series' labels, for its usage children
	model         string
}

// New builds the metrics and registers them, with the Go runtime and process collectors, in a new registry.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_requests_total", Help: "Inference requests answered, by endpoint, provider, model, status code and cache status.",
		}, []string{"endpoint", "provider", "model", "status_code", "cache_status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gateway_request_duration_seconds", Help: "Whole inference request duration, from the request's arrival to its answer's end.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"endpoint", "provider"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_tokens_total", Help: "Tokens of non-streamed answers from providers (cache hits excluded), by kind input or output.",
		}, []string{"provider", "model", "kind"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_cost_usd_total", Help: "Cost in USD of non-streamed answers, priced from the model catalogue (models without a price are not counted).",
		}, []string{"provider", "model"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_retries_total", Help: "Retries made on the targets that answered.",
		}),
		rateLimited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_rate_limited_total", Help: "Requests refused by the gateway's rate-limit policies.",
		}),
		series: make(map[seriesKey]*series),
	}
	m.reg.MustRegister(m.requests, m.duration, m.tokens, m.cost, m.retries, m.rateLimited,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
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
	Retries     int
	RateLimited bool // refused by the gateway's rate-limit policies
	// Usage of a non-streamed answer from the provider; UsageKnown is false when the answer had none (streams,
	// cache hits, failures).
	InputTokens, OutputTokens int64
	UsageKnown                bool
}

// ObserveRequest counts one request. It does not allocate once the request's series exists.
func (m *Metrics) ObserveRequest(r *Request) {
	s := m.lookup(seriesKey{endpoint: r.Endpoint, provider: r.Provider, model: r.Model, cache: r.CacheStatus, status: r.Status})
	s.requests.Inc()
	s.duration.Observe(r.Duration.Seconds())
	if r.Retries > 0 {
		m.retries.Add(float64(r.Retries))
	}
	if r.RateLimited {
		m.rateLimited.Inc()
	}
	if r.UsageKnown {
		s.usageOnce.Do(func() { m.usageChildren(s) })
		s.input.Add(float64(r.InputTokens))
		s.output.Add(float64(r.OutputTokens))
		if s.cost != nil {
			s.cost.Add((float64(r.InputTokens)*s.inPrice + float64(r.OutputTokens)*s.outPrice) / 1e6)
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
	if p, ok := catalog.Lookup(provider, model); ok && (p.InputPerMTok > 0 || p.OutputPerMTok > 0) {
		s.inPrice, s.outPrice = p.InputPerMTok, p.OutputPerMTok
		s.cost = m.cost.WithLabelValues(provider, model)
	}
}

func clone(s string) string { return string(append([]byte(nil), s...)) }
