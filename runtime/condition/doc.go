// Package condition compiles and evaluates the queries of conditional routing: MongoDB-style operators over
// metadata.*, params.* and url.pathname, and {"$expr": "..."} programs in expr-lang. A query is compiled once
// per config and evaluated per request without parsing. It imports only gwerr and expr; it must not import
// routes, storage, plugins or any provider.
//
// # Queries
//
// A query is a JSON object whose members must all hold. A member is a field or a logical operator:
//
//   - "metadata.<name>" reads Env.Metadata (everything after "metadata." is the key, dots included);
//     "params.<a>.<b>..." walks Env.Params, where a segment that is a non-negative integer also indexes an
//     array ("params.messages.0.role"); "url.pathname" reads Env.URLPath.
//   - "$and" and "$or" take a non-empty array of queries; "$expr" takes an expr-lang expression (below).
//     {"$plugin": "<plugin id>", "$params": {...}} asks a workspace's wasm plugin through Env.Plugin;
//     without a plugin host it never matches.
//
// A field's value is either a plain value, meaning $eq, or an object of operators, all of which must hold:
// $eq $ne $gt $gte $lt $lte $in $nin $regex (with "$options" of i, m, s) $exists. An object that mixes
// $-keys and plain keys is an error; an object without $-keys (including {}) is a plain value.
//
// # Semantics
//
//   - $eq: strings compare exactly, numbers numerically, booleans and null by value, arrays and objects by deep
//     equality (array order matters; a scalar does not match an array that contains it). A metadata string
//     that parses as a decimal number ("5", "-2.5e3") also equals that number. null equals a missing field.
//   - $ne is the negation of $eq, so it matches a missing field (unless the operand is null).
//   - $gt $gte $lt $lte take a number and match a number, or a metadata string that parses as one; anything
//     else, including a missing field, never matches.
//   - $in takes an array and matches when $eq holds for a member (so a missing field is in [null] and in no
//     other array); $nin is its negation.
//   - $regex takes an RE2 pattern (Go's regexp, unanchored) and matches strings only.
//   - $exists true matches a present field, null included; $exists false a missing one. A path through a
//     missing key, a scalar or an out-of-range index is missing.
//   - An empty query {} matches every request.
//
// # $expr
//
// An expression sees metadata (map[string]string), params (map[string]any) and url.pathname and must be
// boolean. Since any gateway key can send a config, its cost is bounded by the request it reads:
//
//   - Compile refuses (400 invalid_config naming the $expr) a source over 8 KiB or 1,000 AST nodes, a string
//     literal over 1 KiB, a constant range over 100,000 elements, any function off the allow-list (len, type,
//     abs, ceil, floor, round, int, float, string, lower, upper, trim, trimPrefix, trimSuffix, hasPrefix,
//     hasSuffix, indexOf, lastIndexOf, min, max, first, last, get, and the loops all, any, none, one, count,
//     find, findIndex), let, $env, map literals, matches with a pattern that is not a literal, trim with a
//     cutset that is not a literal, a loop over anything but a field of params or metadata (of the element in
//     a nested loop), a range or an array of literals, and a loop predicate that reads params, metadata or url.
//   - A run is metered: strings built by +, lower, upper and string total at most 1 MiB; loops at most
//     1,000,000 steps (an element costs the nodes and literal bytes of the predicate, entering a loop 100);
//     ranges and array literals at most 100,000 elements (expr's memory budget). Eval reports a run over a
//     budget as a 400 invalid_request naming the $expr; Match treats it as no match.
//   - A run-time error (nil dereference, type mismatch, string() of an array) or a non-boolean result means no
//     match.
//
// # Errors
//
// Compile returns *gwerr.Error with status 400, code "invalid_config", Param set to the JSON path of the
// offending part below the path it was given (e.g. "strategy.conditions[0].query.metadata.tier.$gt") and a
// message "invalid config: <Param>: <problem>".
//
// Eval runs a compiled query and returns, besides the answer, the 400 of a $expr that went over its run-time
// budgets.
//
// # Concurrency and cost
//
// A Matcher is immutable and safe for concurrent use. Match does no JSON parsing; operands are decoded,
// converted and (for $regex) compiled by Compile, and the field lookups and comparisons of $eq, $in and the
// numeric operators do not allocate. $expr runs on pooled VMs.
//
// Example:
//
//	m, err := condition.Compile(json.RawMessage(`{"metadata.tier": "gold", "params.max_tokens": {"$gt": 1000}}`),
//		"strategy.conditions[0].query")
//	if err != nil {
//		return err // *gwerr.Error, 400
//	}
//	if m.Match(&condition.Env{Metadata: md, Params: body, URLPath: path}) { ... }
package condition
