// Package runtime is the request engine. Engine.Do takes an inference request (the caller's body and parsed
// gateway headers), picks its compiled config (x-gateway-config inline or saved, or one target made of the
// headers), walks the strategy tree (single, fallback, loadbalance, conditional, nested) and calls providers
// through their adapters, with retries (full-jitter backoff from 250 ms to 8 s, Retry-After when asked),
// per-attempt timeouts (408), and circuit breakers kept per target across requests. Upstream answers come back
// with the provider's status and body; the engine's own failures are *gwerr.Error.
//
// The caller's body goes upstream byte for byte unless override_params or metadata._user change it. Streamed
// answers are returned open; closing the Response closes the upstream call. Provider calls run on the
// request's goroutine with a pooled net/http transport whose dialer enforces the custom-host policy.
//
// Subpackages: config (schema, validation, compilation, plan cache), condition (conditional-routing queries),
// netguard (custom-host policy), providers (adapter contract, identifiers, adapters below it), gwerr (the error
// type) and bootstrap (the bootstrap file). runtime may import its subpackages, guardrails and storage; never
// routes or cmd. Hooks, guardrails, caching and rate limits join the pipeline in later issues.
package runtime
