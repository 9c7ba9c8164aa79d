//go:build race

package wasmtest

// raceEnabled makes the engine use wazero's interpreter: the race detector slows wazero's compiler down about
// tenfold (some 16 s for one Go guest), while the interpreter compiles in under a second.
const raceEnabled = true
