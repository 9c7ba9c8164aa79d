package routes

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"

	"github.com/llmgw/gateway/metrics"
	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/ratelimit"
)

// observe reports one inference request once its answer is sent (for a stream, once the stream ends): to the
// metrics, and as one info line in the log. resp is nil when the engine failed; status is what the caller got;
// st holds a stream's own timings (zero for a whole answer). It does not touch the fiber context, which a stream
// outlives. Its cost is part of BenchmarkChatCompletionGateway.
func (s *Server) observe(ctx context.Context, start time.Time, req *runtime.Request, resp *runtime.Response, status int, rateLimited bool, st streamTimes) metrics.Request {
	r := metrics.Request{Endpoint: endpointLabel(req), Model: req.Body.Model(), Status: status,
		Duration: time.Since(start), RateLimited: rateLimited}
	var target string
	if resp != nil {
		r.Provider, r.CacheStatus, r.Retries, r.Fallbacks, target = resp.Provider, resp.CacheStatus, resp.Retries, resp.Fallbacks, resp.OptionPath
		r.Upstream = resp.Upstream + st.relayed
		if st.firstEvent > 0 {
			r.FirstToken = st.firstEvent
		}
		if u := resp.Usage; u.Known {
			r.InputTokens, r.OutputTokens, r.UsageKnown, r.CostUSD, r.CostKnown = u.InputTokens, u.OutputTokens, true, u.CostUSD, u.CostKnown
		}
	}
	s.storeLog(start, req, resp, status, &r)
	s.metrics.ObserveRequest(&r)
	if !s.log.Enabled(ctx, slog.LevelInfo) {
		return r
	}
	var workspace string
	if req.Key != nil {
		workspace = req.Key.WorkspaceID
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "request",
		slog.String("trace_id", req.TraceID),
		slog.String("workspace_id", workspace),
		slog.String("endpoint", r.Endpoint),
		slog.String("provider", r.Provider),
		slog.String("model", r.Model),
		slog.Int("status", status),
		slog.Float64("latency_ms", float64(r.Duration.Microseconds())/1000),
		slog.Float64("upstream_ms", float64(r.Upstream.Microseconds())/1000),
		slog.String("target", target),
		slog.String("cache_status", r.CacheStatus),
		slog.Int("retries", r.Retries),
		slog.Int64("input_tokens", r.InputTokens),
		slog.Int64("output_tokens", r.OutputTokens))
	return r
}

// streamTimes are a streamed answer's own timings: relayed is the time its events took to arrive and be sent
// (the provider's time as much as the gateway's: it counts as upstream), firstEvent the time from the request's
// arrival to its first event sent.
type streamTimes struct {
	relayed, firstEvent time.Duration
}

// endpointLabel is the endpoint's path without its slash ("chat/completions"); it does not allocate.
func endpointLabel(req *runtime.Request) string {
	p := req.Endpoint.Path()
	if len(p) > 0 {
		p = p[1:]
	}
	return p
}

// refusedByRateLimit says whether err is a refusal by the gateway's own rate-limit policies (not a provider's 429).
func refusedByRateLimit(err error) bool {
	var ex *ratelimit.Exceeded
	return errors.As(err, &ex)
}

// serveMetrics serves GET /metrics on the main listener to organisation admin keys (the key is checked by
// authenticate first: 401 without one).
func (s *Server) serveMetrics() fiber.Handler {
	h := adaptor.HTTPHandler(s.metrics.Handler())
	return func(c *fiber.Ctx) error {
		if _, err := requireOrgAdmin(c); err != nil {
			return err
		}
		return h(c)
	}
}
