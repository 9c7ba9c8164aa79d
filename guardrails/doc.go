// Package guardrails owns hook and guardrail semantics: before/after request hooks, input/output guardrails,
// deny, async, feedback, and the Check interface with the built-in default.* checks in native Go. It imports
// hostapi's wire types, runtime/gwerr, runtime/netguard (the address policy of webhook and log) and the standard
// library (plus jsonschema for default.jsonSchema); never routes, runtime, storage or plugins. Wasm-backed checks
// come from plugins through the Check interface and PluginChecks, saved guardrails through SavedGuardrails; cmd
// and runtime wire them.
//
// The package owns the shape of hooks and guardrail objects, with one validator (shape.go): ValidateHook and
// ValidateGuardrail check an item of a config (runtime/config calls them from Parse), ValidateSaved and
// ValidateSavedIn a saved guardrail (routes for PUT /v1/guardrails/{id}, runtime/bootstrap for its file), and
// Compile reads items with the same code. Keys, types, where deny may stand, check ids and parameters are all
// checked there; only what needs a workspace (saved guardrails by ID, plugins) waits for Compile or ValidateIn.
// A guardrail object's checks are its extra keys or a hook-style "checks" list (both may stand together), and
// it denies through its top-level deny either way; a saved guardrail has the output shape, as either list may
// name it.
//
// CompileTools does the same for a config's tool hooks (before_tool_call, after_tool_call: StageBefore on a
// call's arguments, StageAfter on its result), whose items are shaped like request hooks and may deny on either
// side.
//
// Compile turns a config target's four lists (before_request_hooks, after_request_hooks, input_guardrails,
// output_guardrails, as raw JSON) into an immutable *Set, once per config; regexes and schemas are compiled
// then. Set.Run evaluates one side per request and is safe for concurrent use:
//
//	set, err := guardrails.Compile(ws, "targets[1]", n.BeforeHooks, n.AfterHooks, n.InputGuardrails,
//		n.OutputGuardrails, savedLookup, pluginLookup)
//	out := set.Run(ctx, guardrails.StageBefore, &hostapi.Input{Text: text, Model: model, Stage: "before"}, view)
//	switch {
//	case out.Deny: // 446 hooks_failed with hook_results {before_request_hooks: out.Results}
//	case out.Failed: // go on; the answer carries status 246 and hook_results
//	}
//	for _, f := range out.Async { go f(detachedCtx) } // after the answer is sent
//
// Semantics: items run in config order (hooks, then guardrails); an item passes when all its checks pass; a
// check that errors (or panics) passes unless its parameters say "failOnError": true, or say nothing and the
// Set's ErrorPolicy (WithErrorPolicy: the gateway's --check-errors) says Fail; ErrorPolicy.Report hears of each
// such error. A "<plugin>.<check>" id whose plugin the workspace lacks (PluginChecks returns ErrNoPlugin) is a
// compile error, like any unknown check id. Hooks deny through on_fail.deny (and on_success.deny, which denies
// when the item passes); guardrail objects through their top-level deny and on_fail.deny. Checks of one item
// run in parallel (native built-ins inline); transformers (regexReplace, addPrefix, any Check with Transforms()
// true) run alone, in order, on the text left before them.
//
// A hook of type "mutator" (before_request_hooks and after_request_hooks only, never async) rewrites the whole
// body: its checks are plugins' BodyTransformers (gateway_transform), run one after another by RunBody on the
// body the one before left; the caller's Body says how a replacement is validated. A built-in check, or a
// plugin that cannot transform, in a mutator hook is a compile error naming its id.
//
// Outbound calls (default.webhook, default.log) go only to hosts named by SetOutboundAllowList; none by default.
// Their connections pass the custom hosts' address policy (SetOutboundAddressPolicy) when they are made. The
// registry (Register), the allow-list and the outbound client are the package's only global state.
package guardrails
