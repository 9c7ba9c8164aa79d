// Package runtime is the request engine: config schema and validation, strategy execution (single, loadbalance,
// fallback, conditional, nested), retries, timeouts, circuit breakers, caching, rate-limit enforcement and batch
// execution. It is filled by the routing-engine issue and those after it.
//
// Its subpackages so far: gwerr (the one error type), providers (provider identifiers; adapters below it) and
// bootstrap (the bootstrap file). runtime may import its own subpackages, guardrails and storage; never routes or
// cmd.
package runtime
