package metrics

import "github.com/prometheus/client_golang/prometheus"

// redisMetrics report the shared Redis of replicas (--redis): whether it answers, and the calls that failed.
type redisMetrics struct {
	up     prometheus.Gauge
	errors *prometheus.CounterVec
}

func newRedisMetrics(reg prometheus.Registerer) redisMetrics {
	r := redisMetrics{
		up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gateway_redis_up", Help: "1 while the shared Redis (--redis) answers, 0 while the replica falls back to local state; absent without --redis.",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_redis_errors_total", Help: "Calls to the shared Redis that failed, by operation (ratelimit, budget, cache, breaker, ...).",
		}, []string{"op"}),
	}
	return r
}

// RedisState sets gateway_redis_up, registering the gauge on first use (a gateway without --redis has none).
// Safe on a nil Metrics.
func (m *Metrics) RedisState(up bool) {
	if m == nil {
		return
	}
	m.redisOnce.Do(func() { m.reg.MustRegister(m.redis.up, m.redis.errors) })
	if up {
		m.redis.up.Set(1)
	} else {
		m.redis.up.Set(0)
	}
}

// RedisError counts a failed call to the shared Redis. Safe on a nil Metrics.
func (m *Metrics) RedisError(op string) {
	if m == nil {
		return
	}
	m.redisOnce.Do(func() { m.reg.MustRegister(m.redis.up, m.redis.errors) })
	m.redis.errors.WithLabelValues(op).Inc()
}
