// Package catalog owns the gateway's model catalogue: the known models of each provider the gateway ships,
// with their context window, output limit, prices per million tokens (USD) and capabilities, and the one
// token estimate and truncation rule the responses API applies with them.
//
//   - models.json (embedded): the facts, each provider's taken from its public model and price pages; the
//     file's "_source" member names the pages and the date they were read. A price the pages did not give is
//     null in the file and 0 in a Model: unknown, never free.
//   - catalog.go: the loader (the file is parsed once, on first use), Lookup with its normalised forms of a
//     model name, and per-stored-provider overrides: a stored provider's optional "models" field, checked by
//     ParseOverrides (the bootstrap file calls it) and applied by LookupWith or WithOverrides.
//   - truncate.go: EstimateTokens and Truncate (SPEC.md's truncation "disabled" and "auto").
//
// Lookup and Truncate are safe for concurrent use; a Catalog is immutable once built. catalog is a leaf: it
// imports only the standard library and runtime/gwerr, so that runtime, routes and control may all use it.
//
//	m, ok := catalog.Lookup("openai", "gpt-4o-2024-08-06") // the gpt-4o entry
//	items, err := catalog.Truncate(items, instructions, m.ContextWindow, maxOutput, "auto")
package catalog
