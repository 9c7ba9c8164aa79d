// Package plugins owns the WebAssembly engine of the gateway: it validates, compiles (once), instantiates, pools
// and calls the guests that implement hooks, guardrail checks and routing conditions, enforcing memory and time
// limits, and serves the host functions of ABI v1 (module gateway_v1: log, now_unix_ms, request_field). The ABI
// (export and import names, kinds, the wire encoding of Input and Output) lives in hostapi; this package is its
// host side.
//
// It imports wazero, hostapi, runtime/gwerr, storage (to load the stored plugins at start) and tracing (a span
// per call when traces are on; Options.OnCall times each call for the metrics, OnCompile and OnInstantiate each load, coldstart.go). It must not
// import guardrails, runtime, routes or fiber: guardrails declares the Check interface it consumes and cmd wires
// wasm-backed checks (Engine.Call) into it.
//
// # Design
//
//   - One wazero runtime per workspace, so that each workspace's limits are its own (wazero's memory limit is
//     per runtime), all over one compilation cache (Options.CacheDir, keyed by the module's SHA-256): a module
//     is compiled once per process however many workspaces load it, and once per machine with a CacheDir.
//   - Runtimes use WithCloseOnContextDone(true), the only way to stop a runaway guest; every call runs under a
//     deadline of Options.CallTimeout (100 ms) or the request's, if sooner. A guest that traps, panics, exits,
//     runs out of memory (Options.MemoryLimitMiB, 64) or outlives its deadline makes the call fail (ErrTrap,
//     ErrTimeout) and its instance is closed, never reused.
//   - Guests get no file system, no environment, no arguments, no network (wasip1 has none), the real clocks, a
//     nanosleep that returns at once and crypto/rand. Their stdout is discarded; the start of their stderr is
//     kept for the error of a failed call (a Go guest's "panic: …") and the debug log. Their log host calls are
//     bounded: Options.LogLinesPerCall lines per call, Options.LogLinesPerSecond per plugin (a token bucket),
//     4 KiB per line; what is dropped is counted (Stats.LogLinesDropped) and reported in one summary line at
//     most every 10 s per plugin.
//   - Each loaded plugin has a current version (an atomic pointer) with a pool of at most Options.MaxInstances
//     instances, grown lazily; callers beyond that wait, bounded by their context. Load swaps versions
//     atomically: calls in flight finish on the old version, whose instances are closed once it has no caller.
//   - Load proves a module before it serves: it compiles, passes the ABI check (a WASI command, which exports
//     _start and no _initialize, is refused: its runtime would never start), instantiates one instance, reads
//     the ABI version the guest speaks (gateway_abi_version; absent is v1.0, another major or a minor above 1
//     is refused, and a v1.1 guest must export "memory") and makes its first call (gateway_alloc). A module that fails any step is a 400 and the current version keeps
//     serving. Install adds a save step (storing the module) between proving and swapping, so that what is
//     stored is what loaded.
//   - Bounds per workspace: at most Options.PluginsPerWorkspace plugins, and Options.MemoryPerWorkspace bytes of
//     wasm memory for all live instances together. Each instance is charged the most its linear memory can grow
//     to (the module's declared maximum, or MemoryLimitMiB), since a call can grow it that far before the host
//     can intervene. A Load past the count, or whose one instance does not fit beside one of each other plugin,
//     is a 409. A call that needs a new instance when the memory is taken closes idle instances of the
//     workspace's other plugins, or waits for an instance or memory, bounded by its context: the bound holds
//     whatever the traffic.
//   - A janitor closes the idle instances of workspaces without calls for Options.IdleTimeout (compiled code is
//     kept) and drops the runtimes of workspaces left without plugins.
//   - A workspace sees only its own plugins: Call, Stats and Loaded look plugins up by workspace, and another
//     workspace's plugin ID is simply not found.
//
// # Cost
//
// A call to a v1.0 guest makes two guest calls (gateway_alloc, gateway_call). A v1.1 guest keeps its
// gateway_alloc buffer until its next gateway_alloc, so each instance remembers its last buffer and a call
// whose input fits makes one guest call (gateway_call); buffers are asked in powers of two from 1 KiB. With the guard on, wazero starts a goroutine per
// guest call (a no-op call with a 1 KB input: 3–5 µs, 0.6 µs without) and its compiled code exits to Go at
// every loop back-edge to check for closure, so guests pay per loop iteration. On the examples
// (guard_bench_test.go; best of 3, 2 loaded cores) the guard makes a call 4–16× slower:
// denylist/pii/router 7.7/7.3/10.8× (1 KB) and 8.5/7.8/5.4× (64 KB) for the Go guests, 4.0/4.6/11.9× and
// 4.0/5.2/15.7× for the Rust ones. Tight byte loops (router's script scan) suffer most. Rust guests are 2–8×
// faster than Go guests either way; on 64 KB the Go denylist (0.33 s guarded, 0.04 s not) and pii (0.93 s,
// 0.12 s) and the guarded Rust pii (0.11 s) outlived the default CallTimeout on those cores. Go guests
// are ~2–4 MB, compile in seconds (a fraction of a second from CacheDir) and take 10–20 ms and 4–8 MiB per
// instance.
//
// # Use
//
//	e, err := plugins.New(plugins.Options{CacheDir: filepath.Join(dataDir, "wasm-cache"), Logger: log})
//	...
//	defer e.Close(ctx)
//	err = e.LoadStored(ctx, store) // at start; bad plugins are logged, marked in the store and skipped
//	err = e.Validate(ctx, wasm)    // at upload: a *gwerr.Error 400 naming what is wrong
//	err = e.Install(ctx, workspaceID, "pii", wasm, func() error { _, _, err := store.Plugins.Put(workspaceID, "pii", wasm); return err })
//	err = e.Load(ctx, workspaceID, "pii", wasm) // Install without saving
//	out, err := e.Call(ctx, workspaceID, "pii", hostapi.KindCheck, &hostapi.Input{Text: text, CheckID: "pii.detect"}, view)
//
// An Engine is safe for concurrent use.
package plugins
