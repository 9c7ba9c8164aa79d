// Package runtime is the request engine. Engine.Do takes an inference request (the caller's body and parsed
// gateway headers), picks its compiled config (x-gateway-config inline or saved, or one target made of the
// headers), walks the strategy tree (single, fallback, loadbalance, conditional, nested) and calls providers
// through their adapters, with retries (full-jitter backoff from 250 ms to 8 s, Retry-After when asked),
// per-attempt timeouts (408), and circuit breakers kept per target across requests (a target is named once per
// request by its provider's descriptor, Descriptor.Identify: the breaker keys on its identity, the cache on its
// address, the same sum without the API key). Upstream answers come back with the provider's status and body; the
// engine's own failures are *gwerr.Error.
//
// The caller's body goes upstream byte for byte unless override_params, metadata._user or a mutator hook
// (hooks.go: requestBody) change it. Streamed
// answers are returned open; closing the Response closes the upstream call. Provider calls run on the
// request's goroutine with a pooled net/http transport whose dialer enforces the custom-host policy.
//
// Around the strategy walk: Do first asks the rate limiter (ratelimit) to admit the request — a refusal is a
// 429 before any routing — and afterwards reports the answer's usage to tokens policies (for a stream, when it
// closes) and adds x-ratelimit-* headers. Each target whose config enables the cache looks its answer up after
// the before-request hooks (so a transformed request is what is keyed) and before its circuit breaker: a hit
// skips the provider, and output guardrails still judge it; a miss stores the provider's own 2xx answer
// (streams assembled by cache.NewRecorder) before the after-request hooks run. Semantic mode embeds the last
// user message with the workspace's embeddings target and searches cache.Index. Cache failures are logged and
// count as misses: the cache never fails a request.
//
// Every request is bounded (Options): its upstream calls, retries included, stop at MaxUpstreamAttempts (the
// caller gets the last answer), RequestDeadline ends a request still without an answer with 408, a Retry-After
// wait is begun only when it ends within the time left, and cancelling the request's context (routes does when
// the caller hangs up) stops everything. Before any of that, Do compiles the checks of every hooked target of the
// plan (cached), so that an unknown check id anywhere in a config is a 400 even on a target never reached.
//
// Reading order: a request goes down the files in this order, each step in one file. engine.go (Options, New,
// and Do, which calls the steps in turn); plan.go (the compiled config, and its checks compiled up front);
// admit.go (rate-limit admission); strategy.go (single, fallback, loadbalance, conditional, and $plugin
// conditions asked under the request's context); leaf.go (one target: prompt, provider resolution and the
// target's identity, body patches, then the steps below in order); hooks.go and hookstream.go (compiled check
// sets, before- and after-request hooks and guardrails, on whole and streamed answers); toolhooks.go (an MCP
// tool call's side, for routes: the config's before_tool_call and after_tool_call compiled and run, the call's
// fields as checks read them, its admission by the policies that match tool calls); cachestep.go and
// embed.go (lookup, store, semantic embedding); breaker.go (circuit breakers: asked before the call, told its
// outcome after); attempt.go (calls with retries, per-attempt timeouts, transport errors) and responses_step.go
// (a responses request sent natively, or translated to chat completions and back by runtime/responses, per
// attempt); messages_step.go (an Anthropic Messages request sent natively to the adapters that serve it for
// its model, or translated to chat completions and back by runtime/internal/anthropicmsg, per attempt; a token
// count forwarded or estimated); media_step.go (OpenAI's media endpoints: a provider that does not serve one, uploads sent as they
// are, raw audio answers); management.go (a stored provider resolved for runtime/upstream's management calls); usage.go (tokens
// counted for rate limits, x-ratelimit-* figures); streamusage.go (usage asked of every streamed chat completion,
// its chunk hidden from a caller that did not ask); models.go (GET /v1/models: a target's provider list, or the
// catalogue's). state.go, at the bottom, holds what the steps share:
// Request and Response, the request's state (which keeps no context: ctx is passed down), and outcome.
//
// The caller's body reaches the engine read once, as a schema.Body (Request.Body): the limiter takes its model,
// conditions and checks its decoded params, translating adapters its decoded chat request (providers.Call.Chat),
// each worked out at most once per request.
//
// Subpackages: schema (OpenAI's wire shapes, the body view, the chunk encoder), config (config schema,
// validation, compilation, plan cache), condition (conditional-routing queries), netguard (custom-host
// policy), providers (adapter contract, the registry of provider descriptors, adapters below it), jsonfield
// (the JSON field readers of validation), gwerr (the error type), bootstrap (the bootstrap file), ratelimit
// (policy enforcement and counters) and cache (cache keys, stream recording and replay, the semantic index).
// runtime may import its subpackages, guardrails, storage and tracing (tracing.go: the attempt spans and the
// trace context sent upstream); never routes or cmd.
package runtime
