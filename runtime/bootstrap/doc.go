// Package bootstrap reads, validates and applies the bootstrap file given with --bootstrap (GATEWAY_BOOTSTRAP):
// workspaces, api_keys, providers, configs, prompts, rate_limit_policies, guardrails and plugins, in the JSON
// shape of DESIGN.md's contract.
//
// Validation reports every problem at once, each with the JSON path of the entry and field that is wrong
// (providers[0].custom_host: ...); unknown sections and unknown fields are errors. Apply is idempotent: an
// entry equal to what is stored writes nothing, a changed one updates its record, and entries the file does not
// name are left alone. An entry without "workspace" belongs to workspace "default", which is created if missing.
//
// Sections whose behaviour later issues add (configs, prompts, policies, guardrails, plugins) are checked here
// for their shape; the engines that use them add their own checks (a config's full schema, a guardrail's known
// check ids) where they compile them. Plugin modules are loaded into the wasm engine through
// Options.LoadPlugin of ApplyWith before anything is written: a module that does not load fails the file at its
// entry and is never stored, so it cannot replace a stored module that works.
package bootstrap
