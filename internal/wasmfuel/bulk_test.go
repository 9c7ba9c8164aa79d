package wasmfuel

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// bulkModule exports run (param i32 n) (param i32 len): n times, op over len bytes of its one page of memory
// or len elements of its table of 1000 funcrefs. push are the operands before the length; the function also
// declares two locals of its own, so that the scratch local comes after parameters and locals.
func bulkModule(push, op []byte) []byte {
	return mod(
		sec(secType, vec(functype([]byte{tI32, tI32}, nil))),
		sec(secFunction, vec(u(0))),
		sec(secTable, vec([]byte{tFuncref, 0x00, 0xe8, 0x07})),
		sec(secMemory, vec([]byte{0x00, 0x01})),
		sec(secExport, vec(export("run", 0, 0))),
		sec(secCode, vec(body([]byte{1, 2, tI64},
			[]byte{0x03, 0x40}, push, []byte{0x20, 0x01}, op, // loop; operands; local.get 1 (the length); op
			[]byte{0x20, 0x00}, i32c(1), []byte{0x6b, 0x22, 0x00, 0x0d, 0x00, 0x0b}))), // br_if 0 (--n)
	)
}

// TestInstrumentChargesBulk: a bulk memory or table instruction is charged its length (memory bytes / 16,
// table elements), not one instruction, so that a loop of them cannot run minutes on one stretch of fuel; and
// the instrumented code still does what the original did.
func TestInstrumentChargesBulk(t *testing.T) {
	zeros := cat(i32c(0), i32c(0))
	null := []byte{0xd0, tFuncref}
	for _, tc := range []struct {
		name     string
		wasm     []byte
		length   int32
		minCalls int // refuel calls for 100 iterations with 1000 fuel a stretch
	}{
		{"memory.fill", bulkModule(zeros, []byte{0xfc, 0x0b, 0x00}), 65536, 100},
		{"memory.copy", bulkModule(zeros, []byte{0xfc, 0x0a, 0x00, 0x00}), 65536, 100},
		{"table.fill", bulkModule(cat(i32c(0), null), []byte{0xfc, 0x11, 0x00}), 1000, 50},
		{"table.copy", bulkModule(zeros, []byte{0xfc, 0x0e, 0x00, 0x00}), 1000, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, raw := range []bool{true, false} {
				g := &guard{fuel: 1000}
				m, err := instantiate(t, newRuntime(t, g), tc.wasm, raw)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := m.ExportedFunction("run").Call(context.Background(), 100, uint64(tc.length)); err != nil {
					t.Fatalf("run (instrumented: %v): %v", !raw, err)
				}
				if !raw && g.calls < tc.minCalls {
					t.Errorf("refuel called %d times for 100 × %s of %d, want at least %d", g.calls, tc.name, tc.length, tc.minCalls)
				}
			}
		})
	}
}

// TestInstrumentBoundsLocals: a function of a few bytes may declare 2^32-1 locals, which wazero's compiler
// allocates for (a fatal out of memory, not an error); Instrument, which runs first, refuses more than
// MaxFunctionLocals in a function and MaxModuleLocals in a module with ErrLimit, before any allocation.
func TestInstrumentBoundsLocals(t *testing.T) {
	withLocals := func(counts ...uint32) []byte {
		var funcs, codes [][]byte
		for _, n := range counts {
			funcs = append(funcs, u(0))
			codes = append(codes, body(cat(u(1), u(n), []byte{tI32})))
		}
		return mod(sec(secType, vec(functype([]byte{tI32}, nil))), sec(secFunction, vec(funcs...)), sec(secCode, vec(codes...)))
	}
	many := make([]uint32, MaxModuleLocals/(MaxFunctionLocals-1)+1)
	for i := range many {
		many[i] = MaxFunctionLocals - 1
	}
	for _, tc := range []struct {
		name string
		wasm []byte
		ok   bool
	}{
		{"2^32-1 locals", withLocals(1<<32 - 1), false},
		{"one past the bound with the parameter", withLocals(MaxFunctionLocals), false},
		{"at the bound with the parameter", withLocals(MaxFunctionLocals - 1), true},
		{"many functions at the bound", withLocals(many...), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Instrument(tc.wasm)
			if tc.ok != (err == nil) || err != nil && !errors.Is(err, ErrLimit) {
				t.Fatalf("Instrument = %v; want ok %v, else ErrLimit", err, tc.ok)
			}
		})
	}
}

// TestInstrumentBoundsTablesAndBodies: tables live in the host's heap, outside the memory limit, so a table
// may declare at most MaxTableElements and table.grow is refused; and a function's calls, loops and bulk
// instructions (what the pass keeps per function) and its nesting are bounded, so that a crafted body cannot
// make the pass itself take gigabytes.
func TestInstrumentBoundsTablesAndBodies(t *testing.T) {
	withTable := func(n uint32) []byte {
		return mod(sec(secType, vec(functype(nil, nil))), sec(secFunction, vec(u(0))),
			sec(secTable, vec(cat([]byte{tFuncref, 0x00}, u(n)))), sec(secCode, vec(body(noLocals))))
	}
	fn := func(code []byte) []byte {
		return mod(sec(secType, vec(functype(nil, nil))), sec(secFunction, vec(u(0))),
			sec(secTable, vec([]byte{tFuncref, 0x00, 0x01})), sec(secCode, vec(body(noLocals, code))))
	}
	calls := func(n int) []byte { return bytes.Repeat(call(0), n) }
	nested := func(n int) []byte { return cat(bytes.Repeat([]byte{0x02, 0x40}, n), bytes.Repeat([]byte{0x0b}, n)) }
	grow := cat([]byte{0xd0, tFuncref}, i32c(1), []byte{0xfc, 0x0f, 0x00, 0x1a})
	for _, tc := range []struct {
		name string
		wasm []byte
		ok   bool
	}{
		{"a table at the bound", withTable(MaxTableElements), true},
		{"a table past the bound", withTable(MaxTableElements + 1), false},
		{"table.grow", fn(grow), false},
		{"calls at the bound (the entry's charge is an edit too)", fn(calls(MaxFunctionEdits - 1)), true},
		{"calls past the bound", fn(calls(MaxFunctionEdits + 2)), false},
		{"blocks nested at the bound", fn(nested(MaxNesting - 1)), true},
		{"blocks nested past the bound", fn(nested(MaxNesting + 1)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Instrument(tc.wasm)
			if tc.ok != (err == nil) || err != nil && !errors.Is(err, ErrLimit) {
				t.Fatalf("Instrument = %v; want ok %v, else ErrLimit", err, tc.ok)
			}
		})
	}
}
