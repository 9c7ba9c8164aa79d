// Package batch runs batches: the lines of a gateway file, each an inference request, sent through the engine
// the way the live request that created the batch would be (its virtual key, config, metadata, trace ID and
// other gateway headers, recorded at creation), with their results written to gateway files in OpenAI's batch
// output format. It owns:
//   - the life of a batch: validating (every input line checked, streaming through the file: custom_id unique,
//     method POST, url the batch's endpoint, body an object), in_progress (the good lines run with bounded
//     concurrency), finalizing (the output and error files written), then completed, or failed (no good line),
//     cancelling → cancelled (what finished is kept), expired (a gateway-managed 24h batch past its window);
//   - crash safety: each finished line's result is written to the store, synced, before it is counted; the
//     store lists the unfinished batches, and Start resumes each: a line with a stored result is never run
//     again, the others run; the result files have IDs derived from the batch's, so finalizing again after a
//     crash replaces a half-written file. Every good line ends with exactly one result;
//   - several replicas over one shared store (PostgreSQL): a runner runs a batch (validating, its lines,
//     finalizing) only while it holds the store's lease "batch/<workspace>/<id>" (Options.LeaseTTL, 15 s by
//     default, renewed every third of it by the run). A renewal refused, or none succeeding for a whole ttl,
//     stops the run at once: no line starts, the lines in flight are dropped, nothing more is written. The
//     store keeps a line's first result only, so even a run that lost its lease late cannot give a line a
//     second one; Start, Create, Cancel and reads launch a batch only once its lease is taken. Every
//     Options.TakeoverEvery (the ttl) the runner takes over the unfinished batches whose lease nobody holds
//     (their replica died: after the ttl; stopped: at once, since Stop releases its leases), resuming them from
//     their stored results. It reads only the index of unfinished batches, so on the embedded store, where one
//     process holds every batch, a pass costs one short scan. A cancel that reaches a replica not running the
//     batch is stored (cancelling); the replica running it reads the state at each renewal and stops as for a
//     local cancel, and saves its live counts then, so that every replica shows the batch's progress;
//   - 24h batches of providers with a batch API (OpenAI-compatible, Azure): forwarded through runtime/upstream
//     (the input file uploaded, the provider's batch mirrored when read, its result files imported as gateway
//     files); providers without one run gateway-managed, paced, within the window;
//   - Capture, the one mapping of a request's gateway headers to what a batch records, and back.
//
// Neither the input nor the results are held in memory: the input is read line by line (twice: to validate,
// to run), results go to the store as they come and are copied from it to the files.
//
// batch imports runtime, runtime/upstream, runtime/providers, runtime/schema, runtime/gwerr and storage; never
// routes, control or cmd. A *Runner is safe for concurrent use.
package batch
