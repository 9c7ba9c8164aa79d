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
