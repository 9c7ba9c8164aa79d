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
// fuel's worth of instructions. The bulk instructions (memory.fill, memory.copy, memory.init, table.fill,
// table.copy, table.init) do work in proportion to their length operand, so each is charged that
// length as it runs (memory bytes at a sixteenth each, table elements at one), in a scratch local the pass
// adds to the function; otherwise a loop of them runs minutes of memmove on one stretch of fuel. What one
// instruction does is bounded by the memory limit and the tables' sizes (memory.grow to a 64 MiB limit, once
// per instance, is the longest seen: up to 0.8 s on a busy machine). Tables live in the host's heap, outside
// the memory limit: a table may declare at most MaxTableElements and table.grow is refused (ErrLimit), which no
// guest language we know emits.
//
// The pass decodes every instruction of WebAssembly 2.0 as wazero's default features (api.CoreFeaturesV2)
// accept it, and refuses anything else with an *Error naming the function and byte offset. It also refuses,
// with ErrLimit, modules past MaxFunctionLocals or MaxModuleLocals: wazero's compiler allocates per declared
// local and dies (a fatal error, not a panic) of a few bytes declaring 2^32-1 of them; and functions past
// MaxFunctionEdits or MaxNesting, which bound what the pass itself holds for one function. It renumbers every
// function index (imports come first in the index space, so the new import shifts each defined function by
// one): calls, ref.func in code and in constant expressions, exports, the start function, element segments
// and the name section. Other custom sections are kept verbatim (DWARF line tables then point a few bytes off
// in instrumented code, which only blurs stack traces). Its output depends on its input only, so a
// compilation cache keyed by module bytes keeps working.
//
// It imports only the standard library and must not import wazero or plugins: the host side (the refuel
// function, deadlines) is package plugins'.
package wasmfuel
