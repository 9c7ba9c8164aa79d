// Package control is the gateway's control plane: the management operations on a workspace's API keys,
// rate-limit policies, prompts, saved guardrails, plugins, stored providers, saved configs, files, batches,
// fine-tuning jobs and stored responses (with the conversation previous_response_id rebuilds), with their
// validation, the serialisation of writes that read before they write, and the invalidation of the caches a
// write makes stale. routes calls it for the admin
// API (a handler decodes, calls one Plane method and encodes the result); runtime/bootstrap calls it to apply
// the bootstrap file's entries of those resources (the Upsert operations); the CLI reaches it through the API.
//
// What a Plane owns, so that no caller can forget it:
//   - validation: a body is checked by the package that owns its shape (ratelimit.ParsePolicy,
//     prompt.CheckTemplate, guardrails.ValidateSavedIn), whose rules the bootstrap file's entries follow too, so
//     a record made over HTTP obeys the rules of one in a bootstrap file;
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
// The admin API's operations make and change records as a request asks (a taken id is a 409, a new version gets
// the next number); the Upsert operations apply a record as a file states it, idempotently: an equal record is
// not written and reports changed false. runtime/bootstrap validates a whole file before its first write, then
// calls them; it declares the interface of them it needs (bootstrap.Plane), which *Plane satisfies.
//
// Files are stored and read as streams (storage.FileStore); batches run in runtime/batch, which the Plane starts,
// lists and cancels; fine-tuning jobs and 24h batches are forwarded to providers through runtime/upstream, which
// mirrors gateway files to the provider and back so that callers only ever see gateway IDs.
//
// control imports runtime, runtime/config, runtime/prompt, runtime/ratelimit, runtime/jsoncheck, runtime/gwerr,
// runtime/batch, runtime/upstream, guardrails and storage (and may import runtime's other subpackages). It must not import fiber (nothing HTTP:
// no statuses but those gwerr carries, no headers, no request contexts), routes, cmd or runtime/bootstrap (which
// calls it); nothing but routes, runtime/bootstrap and cmd imports it. A *Plane is safe for concurrent use.
package control
