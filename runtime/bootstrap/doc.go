// Package bootstrap reads, validates and applies the bootstrap file given with --bootstrap (GATEWAY_BOOTSTRAP):
// workspaces, api_keys, providers, configs, prompts, rate_limit_policies, usage_limit_policies, guardrails and
// plugins, in the JSON shape of DESIGN.md's contract.
//
// Validation reports every problem at once, each with the JSON path of the entry and field that is wrong
// (providers[0].custom_host: ...); unknown sections and unknown fields are errors. Apply is idempotent: an
// entry equal to what is stored writes nothing, a changed one updates its record, and entries the file does not
// name are left alone. An entry without "workspace" belongs to workspace "default", which is created if missing.
//
// Writes: workspaces, providers and configs are written to the store; the entries of the resources the control
// plane owns (api_keys, rate_limit_policies, usage_limit_policies, prompts, guardrails, plugins) go through its Upsert operations
// (control.Plane, through the Plane interface declared here: ApplyThrough takes cmd's, Apply and ApplyWith make
// one over the store without a wasm engine), which own their validation, serialised writes and cache
// invalidation. bootstrap imports control, never the reverse. Plugins are applied before guardrails, whose
// plugin checks need their plugin stored. Nothing is written until the whole file is valid.
//
// Each section is checked by the validator that owns its shape: configs by runtime/config, hooks and guardrails
// (saved, and inside configs) by guardrails, including that a plugin check names a plugin defined in the file or
// already stored; policies by ratelimit (ReadPolicy) and prompt templates by prompt (ReadTemplate), read with
// runtime/jsoncheck, the rules the admin API's bodies are checked with too; a stored provider's identifier and
// fields by the providers registry, each field checked as the adapter that declares it says (the checks a config
// gets), and whether it may go without api_key by the named provider's descriptor (its credential fields, or
// keyless). Plugin modules are loaded into the wasm engine through Options.LoadPlugin before anything is
// written: a module that does not load fails the file at its entry and is never stored, so it cannot replace a
// stored module that works; the plane then installs it, which finds it loaded.
package bootstrap
