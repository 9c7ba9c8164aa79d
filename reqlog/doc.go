// Package reqlog keeps the stored request log: one entry per inference request, written off the request path
// and swept after a retention period (DESIGN.md "Request logs").
//
// routes hands each finished request to Writer.Record, which never blocks and never fails: the entry goes into
// a bounded queue, and when the queue is full it is dropped and counted (Options.OnDrop, the metric
// gateway_log_entries_dropped_total) rather than slowing or failing the request. Handing an entry over wakes
// no goroutine (a slice under a mutex, not a channel): a background goroutine takes the queue every FlushWindow,
// or at once when BatchSize entries wait, and writes it in batches of at most BatchSize, each
// with storage.LogStore.Append in one pebble batch without a sync: logs are not worth an fsync per request,
// and a crash loses at most the last moments of them, never other data. The goroutine assigns IDs, cuts bodies
// longer than MaxBodyBytes (the stored body is then a JSON string of the first MaxBodyBytes bytes, marked
// request_truncated or response_truncated), and encodes. A sweeper deletes entries older than Retention at
// start and every SweepEvery, with range deletions over time-ordered keys.
//
// What is stored: the entry's fields and the caller's metadata; the request's route (every target tried) when it
// is not the one the fields already say, and its hook results without the checks' data, bounded (routes builds
// both); the request and response bodies only with Options.Bodies (--log-bodies). Never a header: the Authorization header, gateway API keys and x-gateway-config
// (whose inline targets may hold provider keys) are not part of an Entry. A request body is the caller's own.
//
// Example:
//
//	w := reqlog.New(store.Logs, reqlog.Options{Retention: 7 * 24 * time.Hour, OnDrop: m.LogEntriesDropped})
//	defer w.Close() // after the server has drained
//	w.Record(&reqlog.Entry{WorkspaceID: ws, Status: 200, Model: "gpt-4o"})
//
// reqlog imports storage only (of the gateway's packages); routes and cmd import it. A *Writer is safe for
// concurrent use.
package reqlog
