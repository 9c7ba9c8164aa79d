// Package wasmfuel owns the load-time pass that makes a WebAssembly module stoppable without help from the
// runtime: Instrument adds a fuel counter (one mutable i64 global, not exported) that every function entry and
// every loop iteration charges with a static upper bound of the instructions it is about to run, and an
// import, gateway_guard.refuel () -> i64, that the module calls when the counter goes negative. The host's
// refuel either returns the fuel of the next stretch or stops the guest (by trapping, from Go: a panic in a
// host function ends the wasm call with that error).
//
// Why that bounds every run: code between two charge points has no backward branch (the only backward branch
// in wasm targets a loop, whose body starts with a charge) and no call that does not first charge at its
// callee's entry, so each instruction of a charged stretch runs at most once per charge, and a run without end
// must pass charge points without end. Each charge takes at least 1, so refuel is called at least once per
// fuel's worth of instructions. A single instruction with unbounded work does not exist in the features
// accepted (memory.fill, memory.copy and table ops are bounded by the memory and table limits).
//
// The pass decodes every instruction of WebAssembly 2.0 as wazero's default features (api.CoreFeaturesV2)
// accept it, and refuses anything else with an *Error naming the function and byte offset. It renumbers every
// function index (imports come first in the index space, so the new import shifts each defined function by
// one): calls, ref.func in code and in constant expressions, exports, the start function, element segments
// and the name section. Other custom sections are kept verbatim (DWARF line tables then point a few bytes off
// in instrumented code, which only blurs stack traces). Its output depends on its input only, so a
// compilation cache keyed by module bytes keeps working.
//
// It imports only the standard library and must not import wazero or plugins: the host side (the refuel
// function, deadlines) is package plugins'.
package wasmfuel
