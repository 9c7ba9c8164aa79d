// Package plugins owns the WebAssembly engine of the gateway: it validates, compiles (once), instantiates, pools
// and calls the guests that implement hooks, guardrail checks and routing conditions, enforcing memory and time
// limits, and serves the host functions of ABI v1 (module gateway_v1: log, now_unix_ms, request_field). The ABI
// (export and import names, kinds, the wire encoding of Input and Output) lives in hostapi; this package is its
// host side.
//
// It imports wazero, hostapi, internal/wasmfuel (the guard's instrumentation), runtime/gwerr, storage (to load the stored plugins at start) and tracing (a span
// per call when traces are on; Options.OnCall times each call for the metrics, OnCompile and OnInstantiate each load, coldstart.go). It must not
// import guardrails, runtime, routes or fiber: guardrails declares the Check interface it consumes and cmd wires
// wasm-backed checks (Engine.Call) into it.
//
// # Design
//
//   - One wazero runtime per workspace, so that each workspace's limits are its own (wazero's memory limit is
//     per runtime), all over one compilation cache (Options.CacheDir, keyed by the instrumented module's SHA-256): a module
//     is compiled once per process however many workspaces load it, and once per machine with a CacheDir.
//   - A fuel counter stops runaway guests (guard.go), not wazero's WithCloseOnContextDone, whose compiled code
//     exits to Go at every loop back-edge and which starts a goroutine per guest call. At load the module is
//     instrumented (internal/wasmfuel): a mutable global charged at each function entry and each loop
//     iteration with a static bound of the instructions that follow, and an import gateway_guard.refuel that
//     the guest calls when it runs out, every 2^20 counted instructions. refuel is where the host reads the
//     clock: it stops the guest (a panic in the host function, which wazero returns as the call's error) once
//     the call's deadline has passed, the request's context has ended or the engine has closed, and otherwise
//     hands out the next stretch. Any endless run must loop or call without end, so it pays at every turn: a
//     runaway guest overshoots its deadline by one stretch (0.1–0.3 ms measured). The deadline is a time kept in
//     the call's context, Options.CallTimeout (100 ms) from the call's start or the request's deadline if
//     sooner (no timer per call); instantiation (_initialize) and the load's first calls get 5 s the same way.
//     What is compiled and cached is the instrumented module (instrumenting is deterministic, ~20 ms per MB);
//     the version's SHA-256, the stored bytes and Stats are the uploaded module's. The import module name
//     gateway_guard is reserved: a guest importing from it is a 400. A guest that traps, panics, exits, runs out
//     of memory (Options.MemoryLimitMiB, 64) or outlives its deadline makes the call fail (ErrTrap, ErrTimeout)
//     and its instance is closed, never reused.
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
// whose input fits makes one guest call (gateway_call); buffers are asked in powers of two from 1 KiB.
//
// The guard costs no goroutine, timer or allocation per call: a clock read for the deadline, a charge per
// function entry and loop iteration (a few machine instructions on a global) and a refuel (~0.1 µs) per 2^20
// counted instructions. Figures are from 2 noisy shared cores (other jobs kept the load average at 4–14), so
// compare within a run. A no-op call with a 1 KB input (bench_test.go BenchmarkCall, best of 5, the old guard
// and the new measured back to back) takes 0.77 µs guarded vs 0.65 µs unguarded for a v1.0 guest and 0.71
// vs 0.57 µs for v1.1, with one allocation; WithCloseOnContextDone took 6.1 and 3.3 µs and 10–13 allocations.
// On the examples (guard_bench_test.go, best of 3) guarded/unguarded is now 1.0–1.3×, where
// WithCloseOnContextDone made it 2.6–19×: denylist/pii/router 1.3/1.0/1.1× on 64 KB for Go (was
// 9.8/9.0/18.8×), 1.1/1.0/1.1× for Rust (was 3.6/6.7/7.0×), 1.1/–/1.3× for AssemblyScript (no earlier
// figure; its pii's unguarded runs were too noisy to say), and 1.0–1.2× on 1 KB for Rust and AssemblyScript
// (Rust was 7.6–13.6×). The worst case is a loop doing almost nothing per iteration: a byte-summing loop over
// 64 KB (guard_test.go BenchmarkGuardLoop) runs 1.9× slower guarded (105 vs 55 µs). Go guests are ~2–4 MB
// (+2% instrumented), compile in seconds (a fraction of a second from CacheDir) and take 10–20 ms and 4–8 MiB
// per instance.
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
