// Package metrics owns the gateway's Prometheus metrics: their names, labels and buckets, the registry that
// holds them (its own, never the global one), and the handler that serves them in the Prometheus text format.
//
// routes reports one inference request at a time with Metrics.ObserveRequest once its answer is sent (for a
// stream, once the stream ends). The label children of a request's series are created the first time the
// series is seen and kept in a map keyed by a small struct, so the common path builds no label strings and
// calls no WithLabelValues. Metrics is safe for concurrent use.
//
// The engine reports what an answer does not show (breakers, guardrail verdicts) through runtime.Observer, which
// Metrics implements, and plugins report their calls' durations (PluginCall). Labels that users name (checks,
// plugins, targets) are bounded like models: past MaxSeries values, new ones count as "other".
//
// Costs come priced on the request (runtime.Usage, priced by runtime/catalog): metrics does no pricing.
// metrics imports prometheus/client_golang only; it must not import routes, cmd, storage or fiber.
package metrics
