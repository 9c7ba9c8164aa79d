// Package examplecases runs the one table of the example plugins' cases (examples/testdata/cases.json) against
// the denylist, pii and router examples of every guest language: the Go examples' tests (natively through
// sdk.Run and in wasm), sdk-rust's and sdk-assemblyscript's tests each build their examples and call Run with
// a module, so that one table holds every language's examples to the same answers through the gateway's own
// engine (package plugins), as package conformance does for the ABI.
//
// A case names its example, its kind ("check" with a check_id, or "condition"), an input, the request fields
// request_field answers, and what it wants:
//
//   - input: text (repeated input.repeat times when repeat is set), model, stage, endpoint, tool, mcp_server,
//     metadata as [key, value] pairs in order, and params as a JSON object whose values reach the guest as JSON
//     text by name in sorted order, as the gateway binds a config's parameters (plugins.Engine.CheckFor);
//   - kv: the plugin key-value store of the plugin's workspace during the call, what kv_get answers, by key (a
//     string, or {"text", "repeat", "suffix"} for a long value); absent: an empty store. Run serves it through
//     the engine's Options.KV for its own workspace only, and runs the cases in order on one instance, so a case
//     whose store differs from the one before proves a value is read per call; RunNative leaves these cases
//     out and RunNativeKV runs them, setting the SDK's native store;
//   - want.verdict and want.match: compared when set;
//   - want.data: the Output's data byte for byte (the table's JSON compacted, key order kept: every SDK writes
//     keys sorted, as Go writes a map); absent: the Output has none;
//   - want.transformed_text: the transformed text; absent: none;
//   - want.error_contains: a substring of the Output's error; absent: no error;
//   - want.logs: every line the guest logs during the call, level and message, in order; absent: none.
//
// A case applies to every language unless it lists languages, and then its why says why the others differ.
//
// The package also holds the benchmarks of the examples per language (BenchmarkLanguages, BenchmarkColdStart).
package examplecases
