// Package jsoncheck reads JSON objects for the validators that report every problem at once, each at its JSON
// path (providers[0].custom_host, messages[1].content): the bootstrap file's, and the rules it shares with the
// admin API (a rate-limit policy object in runtime/ratelimit, a prompt template in runtime/prompt). An Object
// checks each field's type as it is read and, at Finish, that no field was left unread: unknown fields are
// problems too.
//
// runtime/jsonfield is the other reader: it stops at the first problem and answers a 400, as a request's config
// is checked. This one collects.
//
// It is a leaf: the standard library and runtime/jsonfield (a leaf) only, so that the packages owning a shape
// can check it without importing runtime/bootstrap. Objects and Problems are built per validation and are not
// safe for concurrent use.
//
//	err := jsoncheck.Check(raw, func(o *jsoncheck.Object) {
//		o.Str("role", true)
//		o.Finish()
//	}) // *jsoncheck.Error: "role: is required; x: unknown field"
package jsoncheck
