// Package control is the gateway's control plane: the management operations on a workspace's API keys,
// rate-limit policies, prompts, saved guardrails and plugins, with their validation, the serialisation of writes that read
// before they write, and the invalidation of the caches a write makes stale. routes calls it for the admin
// API (a handler decodes, calls one Plane method and encodes the result); the CLI reaches it through that API.
//
// What a Plane owns, so that no caller can forget it:
//   - validation: a body is checked with the bootstrap file's rules (runtime/bootstrap's parsers), so a record
//     made over HTTP obeys the rules of one in a bootstrap file;
//   - serialised writes: a policy or prompt write that checks an id is free or merges into the stored record
//     holds the Plane's lock for that kind; reads never take it;
//   - invalidation: saving or deleting a guardrail, and deleting a plugin (which also unloads it), drop the
//     engine's compiled checks; prompt reads for
//     rendering go through the Plane's caches, which a write (through any path) makes stale.
//
// Operations return *gwerr.Error for every failure a caller can act on (400, 403, 404, 409, 503), with the
// param and message the admin API answers, and gwerr.Internal for the rest. Records are returned as
// *storage values; the JSON views of them belong to routes.
//
// runtime/bootstrap cannot call a Plane: control imports bootstrap for its parsers. The bootstrap file writes
// before the gateway serves, so its writes cannot interleave with the Plane's.
//
// control imports runtime/bootstrap, runtime/config, runtime/prompt, runtime/gwerr and storage (and may import
// runtime and its other subpackages). It must not import fiber (nothing HTTP: no statuses but those gwerr carries, no headers, no request contexts), routes or cmd;
// nothing but routes and cmd imports it. A *Plane is safe for concurrent use.
package control
