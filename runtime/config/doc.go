// Package config owns the routing config of SPEC.md ("Config object"): its schema, its validation at every
// level of targets, and its compilation into a Plan that the request engine executes without parsing again.
//
// Parse checks a config's JSON and returns a Config, or the first problem as a *gwerr.Error (400,
// CodeInvalidConfig) whose Param is the offending field's JSON path, such as targets[1].retry.attempts.
// Compile turns a Config into a Plan: a tree of Nodes with their paths (config.targets[1].targets[0]),
// DESIGN.md's inheritance resolved, weights defaulted, conditional queries compiled and their targets resolved
// to child indexes. Load does both. PlanCache memoises Load by the SHA-256 of the config text, errors included,
// so a config sent on every request in x-gateway-config is compiled once.
//
// Provider-specific fields are not this package's either: each adapter declares its fields, their kinds and
// checks, and the key sets that complete a target without api_key in its runtime/providers descriptor, and
// Parse asks the registry, so a config accepts exactly the fields of the adapters linked into the binary. The
// JSON readers the checks are made of live in runtime/jsonfield, which adapters import too.
//
// The shape of hooks and guardrail objects is not this package's: guardrails owns it (ValidateHook and
// ValidateGuardrail: keys, types, where deny may stand, check ids and their parameters) and Parse calls it on
// each item, so that a config and a saved guardrail accept the same things. Only a saved guardrail's ID syntax
// (storage's) is checked here.
//
// The package decides what a config means, not what happens to a request: strategy execution, retries,
// circuit breakers, caching, hooks and guardrails belong to runtime and guardrails; whether a custom_host is a
// safe address belongs to runtime/netguard; stored providers, virtual keys, saved guardrails and prompts are
// resolved against storage at request time. It imports guardrails (hook and guardrail shapes),
// runtime/condition (queries), runtime/gwerr, runtime/jsonfield (field readers), runtime/netguard (to redact a
// custom_host it quotes), runtime/providers (the registry: identifiers, provider fields, key sets) and storage
// (ID syntax only); never an adapter, runtime itself, routes or cmd.
//
// Config, Plan and Node values are immutable once returned and safe to share between goroutines.
//
//	plan, err := config.Load([]byte(`{"strategy": {"mode": "fallback"},
//		"targets": [{"provider": "@primary"}, {"virtual_key": "backup"}]}`))
//	// plan.Root.Children[1].Path == "config.targets[1]"
package config
