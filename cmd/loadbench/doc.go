// Command loadbench measures what the gateway adds between a caller and a provider, the way issue 18 and
// PERFORMANCE.md measure it, with one command from the repository's root:
//
//	go run ./cmd/loadbench                         # every scenario, 32 connections, 5 s each after 1 s of warm-up
//	go run ./cmd/loadbench -scenarios direct,plain -c 16 -d 10s
//	go run ./cmd/loadbench -json > results.json    # the same figures for scripts
//
// It starts a mock OpenAI-compatible upstream (a child process running this binary: a fixed JSON answer with
// usage, or for "stream": true a fixed SSE stream of -chunks chunks ending with [DONE]), builds the gateway
// (go build ./cmd/gateway, or takes -gateway) and starts it as a child on a free loopback port, with a temporary
// data folder, its log in that folder, and a bootstrap file holding a workspace, an API key, a stored provider
// "mock" pointing at the mock, a saved config "cached" (simple cache) and a saved config "guarded" (one wasm
// check of examples/denylist, built once and kept in the system's temp folder). Metrics and request logging stay
// on, as by default. It then drives each scenario with an in-process load generator (fasthttp, keep-alive, -c
// connections), or with wrk when -wrk is given, and prints one table: requests/s, p50 and p99 latency, the
// gateway's CPU per request (utime+stime of the child from /proc/<pid>/stat over the measured window, divided by
// the requests answered), the share of the direct throughput, and the gateway's RSS before and after.
//
// Scenarios (-scenarios, comma-separated, default all): direct (the mock alone), plain (through the gateway with
// a virtual key), floor (plain's request through the floor proxy, below), stream (direct and through, streamed),
// cached (every request a cache hit after the first), guarded (one wasm input check), body64k (a 64 KiB prompt,
// direct and through) and latency1 (one connection, direct and through: the p50 the gateway adds). A through
// scenario always runs beside its direct baseline, so shares are ratios of one run: compare those, as absolute
// figures on a shared machine move from run to run.
//
// The floor proxy is a third child, started only for the floor scenario: this binary with LOADBENCH_FLOOR set,
// a fasthttp server whose handler forwards the body to the mock with the gateway's upstream client
// (runtime/httpclient) and copies the answer back, with no auth, logging or metrics. Its row's gateway CPU and
// RSS are that proxy's: what loopback syscalls and the Go runtime's wake-ups cost any proxy on the machine, the
// floor under the gateway's figure. The summary line gives the gateway's CPU per request over it (plain less floor).
//
// Bounds: every request has a timeout (-timeout); traffic goes only to 127.0.0.1; the children are stopped when
// the run ends, fails or is interrupted (Ctrl-C), and on Linux also die with this process. The mock exits when
// its stdin closes, and so does the floor proxy.
//
// This command measures the gateway's binary from outside, as a user would; it imports of the gateway only the
// upstream client its floor proxy is built from.
package main
