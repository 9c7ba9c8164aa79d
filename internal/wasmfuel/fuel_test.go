package wasmfuel

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
)

func v128i32(a, b, c, d uint32) []byte {
	out := []byte{0xfd, 0x0c}
	for _, v := range []uint32{a, b, c, d} {
		out = binary.LittleEndian.AppendUint32(out, v)
	}
	return out
}

// featuresModule uses each feature of WebAssembly 2.0 beyond the MVP that wazero enables by default, one
// exported function per feature, each returning an i32 (the comment says which).
func featuresModule() []byte {
	shuffle := []byte{0xfd, 0x0d}
	for i := byte(16); i < 32; i++ {
		shuffle = append(shuffle, i)
	}
	f32 := binary.LittleEndian.AppendUint32([]byte{0x43}, math.Float32bits(1e10))
	names := []string{"simd", "bulk", "refs", "tsel", "multi", "misc", "target"}
	var exports [][]byte
	for i, n := range names {
		exports = append(exports, export(n, 0, uint32(i)))
	}
	return mod(
		sec(secType, vec(
			functype(nil, []byte{tI32}),                      // 0
			functype([]byte{tI32, tI32}, []byte{tI32, tI32}), // 1: a multi-value block
			functype([]byte{tI32}, []byte{tI32}),             // 2: a loop with a parameter
		)),
		sec(secFunction, vec(u(0), u(0), u(0), u(0), u(0), u(0), u(0))),
		sec(secTable, vec([]byte{tFuncref, 0x00, 0x03})),
		sec(secMemory, vec([]byte{0x00, 0x01})),
		sec(secExport, vec(exports...)),
		sec(secElement, vec(cat(u(3), []byte{0x00}, vec(u(6))))), // declares target for ref.func
		sec(secDataCount, u(1)),
		sec(secCode, vec(
			// simd: 55 (33 from a lane of an add after a shuffle, 22 through memory and load_lane)
			body([]byte{1, 1, tV128},
				v128i32(1, 2, 3, 4), v128i32(10, 20, 30, 40), shuffle, v128i32(1, 2, 3, 4),
				[]byte{0xfd, 0xae, 0x01, 0x21, 0x00},                // i32x4.add, local.set 0
				i32c(0), []byte{0x20, 0x00, 0xfd, 0x0b, 0x04, 0x00}, // v128.store
				i32c(4), v128i32(0, 0, 0, 0), []byte{0xfd, 0x56, 0x02, 0x00, 0x03}, // v128.load32_lane lane 3
				[]byte{0xfd, 0x1b, 0x03},                   // i32x4.extract_lane 3
				[]byte{0x20, 0x00, 0xfd, 0x1b, 0x02, 0x6a}, // + lane 2 of local 0
			),
			// bulk: 105 (7 filled and copied, 'b' from a passive segment)
			body(noLocals,
				i32c(0), i32c(7), i32c(100), []byte{0xfc, 0x0b, 0x00},
				i32c(200), i32c(0), i32c(50), []byte{0xfc, 0x0a, 0x00, 0x00},
				i32c(300), i32c(0), i32c(3), []byte{0xfc, 0x08, 0x00, 0x00},
				[]byte{0xfc, 0x09, 0x00},
				i32c(249), []byte{0x2d, 0x00, 0x00}, i32c(301), []byte{0x2d, 0x00, 0x00}, []byte{0x6a},
			),
			// refs: 47
			body(noLocals,
				i32c(0), []byte{0xd2, 0x06, 0x26, 0x00}, // table.set 0 (ref.func target)
				i32c(0), []byte{0x25, 0x00, 0xd1}, // ref.is_null (table.get 0): 0
				i32c(2), []byte{0x6a}, // 2 (table.grow is refused: ErrLimit)
				i32c(1), []byte{0xd2, 0x06}, i32c(2), []byte{0xfc, 0x11, 0x00}, // table.fill
				[]byte{0xfc, 0x10, 0x00, 0x6a},                            // table.size: 3
				i32c(0), i32c(1), i32c(1), []byte{0xfc, 0x0e, 0x00, 0x00}, // table.copy
				[]byte{0xfc, 0x0d, 0x00},                // elem.drop
				i32c(2), []byte{0x11, 0x00, 0x00, 0x6a}, // call_indirect: 42
			),
			// tsel: 7
			body(noLocals, i32c(5), i32c(6), i32c(0), []byte{0x1c, 0x01, tI32}, i32c(1), i32c(2), i32c(1), []byte{0x1b, 0x6a}),
			// multi: 116
			body([]byte{1, 2, tI32},
				i32c(3), i32c(4), []byte{0x02, 0x01, 0x6a}, i32c(1), []byte{0x0b, 0x6b, 0x21, 0x01}, // block (i32 i32) -> (i32 i32)
				i32c(10), []byte{0x03, 0x02}, // loop (i32) -> (i32)
				[]byte{0x20, 0x01}, i32c(1), []byte{0x6a, 0x21, 0x01},
				i32c(1), []byte{0x6b, 0x22, 0x00, 0x20, 0x00, 0x0d, 0x00, 0x0b, 0x1a},
				[]byte{0x20, 0x01}, i32c(1), []byte{0x04, tI32}, i32c(100), []byte{0x05}, i32c(200), []byte{0x0b, 0x6a},
			),
			// misc: 2147483646
			body(noLocals, f32, []byte{0xfc, 0x00}, i32c(0xff), []byte{0xc0, 0x6a}),
			// target: 42
			body(noLocals, i32c(42)),
		)),
		sec(secData, vec(cat([]byte{0x01}, str("abc")))),
	)
}

func TestInstrumentKeepsResults(t *testing.T) {
	want := map[string]uint64{"simd": 55, "bulk": 105, "refs": 47, "tsel": 7, "multi": 116, "misc": 2147483646, "target": 42}
	wasm := featuresModule()
	g := &guard{fuel: 3} // refuel often
	rt := newRuntime(t, g)
	for _, raw := range []bool{true, false} {
		m, err := instantiate(t, rt, wasm, raw)
		if err != nil {
			t.Fatal(err)
		}
		for name, w := range want {
			res, err := m.ExportedFunction(name).Call(context.Background())
			if err != nil || uint32(res[0]) != uint32(w) {
				t.Errorf("instrumented %v: %s() = %v, %v; want %d", !raw, name, res, err, w)
			}
		}
	}
	if g.calls == 0 {
		t.Error("refuel never called")
	}
}

// renumberModule imports a function and a global, and reaches its functions through every element segment
// form, a ref.func global, ref.func in code, the start function and exports; run(i) calls table slot i.
func renumberModule() []byte {
	refFunc := func(f uint32) []byte { return cat([]byte{0xd2}, u(f), []byte{0x0b}) }
	offset := func(v int32) []byte { return cat(i32c(v), []byte{0x0b}) }
	return mod(
		sec(secType, vec(functype(nil, []byte{tI32}), functype(nil, nil), functype([]byte{tI32}, []byte{tI32}))),
		sec(secImport, vec(
			cat(str("env"), str("base"), []byte{0x00}, u(0)),     // function 0
			cat(str("genv"), str("g"), []byte{0x03, tI32, 0x00}), // global 0
		)),
		sec(secFunction, vec(u(0), u(0), u(0), u(1), u(2))), // f1 1, f2 2, f3 3, start 4, run 5
		sec(secTable, vec([]byte{tFuncref, 0x00, 10})),
		sec(secGlobal, vec(
			cat([]byte{tI32, 0x01}, offset(0)), // started, global 1
			cat([]byte{tFuncref, 0x00}, refFunc(3)),
		)),
		sec(secExport, vec(export("run", 0, 5), export("started", 3, 1), export("f1", 0, 1))),
		sec(secStart, u(4)),
		sec(secElement, vec(
			cat(u(0), offset(0), vec(u(1))),
			cat(u(2), u(0), offset(1), []byte{0x00}, vec(u(2))),
			cat(u(4), offset(2), vec(refFunc(3))),
			cat(u(6), u(0), offset(3), []byte{tFuncref}, vec(refFunc(0), []byte{0xd0, tFuncref, 0x0b})),
			cat(u(1), []byte{0x00}, vec(u(2))),
			cat(u(5), []byte{tFuncref}, vec(refFunc(1))),
			cat(u(3), []byte{0x00}, vec(u(5))),
			cat(u(7), []byte{tFuncref}, vec(refFunc(2))),
		)),
		sec(secCode, vec(
			body(noLocals, i32c(10)),
			body(noLocals, call(1), i32c(10), []byte{0x6a}),
			body(noLocals, i32c(30)),
			body(noLocals,
				i32c(9), []byte{0x23, 0x02, 0x26, 0x00}, // table.set 9 (the ref.func global)
				i32c(5), i32c(0), i32c(1), []byte{0xfc, 0x0c, 0x04, 0x00}, // table.init from segment 4
				i32c(6), i32c(0), i32c(1), []byte{0xfc, 0x0c, 0x05, 0x00},
				i32c(7), []byte{0xd2, 0x05, 0x26, 0x00}, // run itself, of another type
				[]byte{0x23, 0x00, 0x24, 0x01}, // started = g
			),
			body(noLocals, []byte{0x20, 0x00, 0x11, 0x00, 0x00}),
		)),
		sec(secCustom, cat(str("name"),
			[]byte{1}, func() []byte {
				b := vec(cat(u(0), str("base")), cat(u(1), str("f1")), cat(u(2), str("f2")), cat(u(3), str("f3")),
					cat(u(4), str("start")), cat(u(5), str("run")))
				return cat(u(uint32(len(b))), b)
			}(),
			[]byte{2}, func() []byte {
				b := vec(cat(u(5), vec(cat(u(0), str("slot")))))
				return cat(u(uint32(len(b))), b)
			}(),
		)),
		sec(secCustom, cat(str("other"), []byte("kept as is"))),
	)
}

// genv is the module exporting the global that renumberModule imports.
func genv() []byte {
	return mod(
		sec(secGlobal, vec(cat([]byte{tI32, 0x00}, i32c(5), []byte{0x0b}))),
		sec(secExport, vec(export("g", 3, 0))),
	)
}

func TestInstrumentRenumbers(t *testing.T) {
	g := &guard{fuel: 5}
	rt := newRuntime(t, g)
	ctx := context.Background()
	if _, err := rt.InstantiateWithConfig(ctx, genv(), wazero.NewModuleConfig().WithName("genv")); err != nil {
		t.Fatal(err)
	}
	type result struct {
		v   uint32
		err bool
	}
	var got [2][]result
	for i, raw := range []bool{true, false} {
		m, err := instantiate(t, rt, renumberModule(), raw)
		if err != nil {
			t.Fatal(err)
		}
		if started := m.ExportedGlobal("started").Get(); started != 5 {
			t.Errorf("instrumented %v: started = %d, want 5 (the start function did not run?)", !raw, started)
		}
		run := m.ExportedFunction("run")
		if name, params := run.Definition().Name(), run.Definition().ParamNames(); name != "run" || !slices.Equal(params, []string{"slot"}) {
			t.Errorf("instrumented %v: run is named %q with parameters %q", !raw, name, params)
		}
		if name := m.ExportedFunction("f1").Definition().Name(); name != "f1" {
			t.Errorf("instrumented %v: f1 is named %q", !raw, name)
		}
		for slot := range uint64(10) {
			res, err := run.Call(ctx, slot)
			r := result{err: err != nil}
			if err == nil {
				r.v = uint32(res[0])
			}
			got[i] = append(got[i], r)
		}
	}
	want := []result{{10, false}, {20, false}, {30, false}, {7, false}, {0, true}, {20, false}, {10, false}, {0, true}, {0, true}, {30, false}}
	if !slices.Equal(got[0], want) || !slices.Equal(got[1], want) {
		t.Errorf("run(0..9): raw %v, instrumented %v; want %v", got[0], got[1], want)
	}
	out, err := Instrument(renumberModule())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, cat(str("other"), []byte("kept as is"))) {
		t.Error("a custom section was not kept verbatim")
	}
	if g.calls == 0 {
		t.Error("refuel never called")
	}
}

// runaway modules: each runs without end unless refuel stops it.
func runawayModules() map[string][]byte {
	one := func(code []byte) []byte {
		return mod(
			sec(secType, vec(functype(nil, nil), functype([]byte{tI32}, []byte{tI32}))),
			sec(secFunction, vec(u(0))),
			sec(secExport, vec(export("run", 0, 0))),
			sec(secCode, vec(body(noLocals, code))),
		)
	}
	straight := []byte{0x03, 0x40}
	for range 5000 {
		straight = append(straight, 0x41, 0x01, 0x1a) // i32.const 1; drop
	}
	straight = append(straight, 0x0c, 0x00, 0x0b)
	// f(d) = d == 0 ? 0 : g(d-1) + g(d-1), g(d) = f(d-1) + f(d-1): 2^60 calls, 60 deep, no loop.
	tree := func(callee uint32) []byte {
		half := cat([]byte{0x20, 0x00}, i64c(1), []byte{0x7d}, call(callee))
		return body(noLocals, []byte{0x20, 0x00, 0x50, 0x04, tI64}, i64c(0), []byte{0x05}, half, half, []byte{0x7c, 0x0b})
	}
	return map[string][]byte{
		"loop":            one([]byte{0x03, 0x40, 0x0c, 0x00, 0x0b}),
		"straight-line":   one(straight),
		"loop with param": one(cat(i32c(0), []byte{0x03, 0x01}, i32c(1), []byte{0x6a, 0x0c, 0x00, 0x0b, 0x1a})),
		"nested loops":    one([]byte{0x03, 0x40, 0x03, 0x40, 0x0c, 0x01, 0x0b, 0x0b}),
		"tree recursion": mod(
			sec(secType, vec(functype(nil, nil), functype([]byte{tI64}, []byte{tI64}))),
			sec(secFunction, vec(u(0), u(1), u(1))),
			sec(secExport, vec(export("run", 0, 0))),
			sec(secCode, vec(body(noLocals, i64c(60), call(1), []byte{0x1a}), tree(2), tree(1))),
		),
		"start function": mod(
			sec(secType, vec(functype(nil, nil))),
			sec(secFunction, vec(u(0), u(0))),
			sec(secExport, vec(export("run", 0, 0))),
			sec(secStart, u(1)),
			sec(secCode, vec(body(noLocals), body(noLocals, []byte{0x03, 0x40, 0x0c, 0x00, 0x0b}))),
		),
	}
}

func TestInstrumentStopsRunaways(t *testing.T) {
	for name, wasm := range runawayModules() {
		t.Run(name, func(t *testing.T) {
			g := &guard{fuel: 1000, stopAfter: 5}
			rt := newRuntime(t, g)
			m, err := instantiate(t, rt, wasm, false)
			if err == nil {
				_, err = m.ExportedFunction("run").Call(context.Background())
			}
			if !errors.Is(err, errStopped) || g.calls != g.stopAfter {
				t.Fatalf("err = %v after %d refuels; want %v after %d", err, g.calls, errStopped, g.stopAfter)
			}
		})
	}
}

// TestInstrumentCharges checks the cost of a stretch: a loop of 100 iterations charges its body's
// instructions each time, so with refuel handing out the cost of 10 iterations it is called about 10 times.
func TestInstrumentCharges(t *testing.T) {
	// local 0 = 100; loop: local 0 -= 1; br_if 0 (local 0): 6 instructions a pass, the loop's end included.
	wasm := mod(
		sec(secType, vec(functype(nil, nil))),
		sec(secFunction, vec(u(0))),
		sec(secExport, vec(export("run", 0, 0))),
		sec(secCode, vec(body([]byte{1, 1, tI32}, i32c(100), []byte{0x21, 0x00, 0x03, 0x40, 0x20, 0x00},
			i32c(1), []byte{0x6b, 0x22, 0x00, 0x0d, 0x00, 0x0b}))),
	)
	g := &guard{fuel: 60}
	rt := newRuntime(t, g)
	m, err := instantiate(t, rt, wasm, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.ExportedFunction("run").Call(context.Background()); err != nil {
		t.Fatal(err)
	}
	if g.calls < 10 || g.calls > 12 {
		t.Errorf("refuel called %d times, want 10 to 12", g.calls)
	}
}

func TestInstrumentDeterministic(t *testing.T) {
	for _, wasm := range [][]byte{featuresModule(), renumberModule()} {
		a, err := Instrument(wasm)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Instrument(bytes.Clone(wasm))
		if !bytes.Equal(a, b) {
			t.Error("two runs differ")
		}
	}
}

func TestInstrumentRefuses(t *testing.T) {
	loopFn := func(code []byte) []byte {
		return mod(
			sec(secType, vec(functype(nil, nil))),
			sec(secImport, vec(cat(str("env"), str("f"), []byte{0x00}, u(0)))),
			sec(secFunction, vec(u(0), u(0))),
			sec(secCode, vec(body(noLocals), body(noLocals, code))),
		)
	}
	tests := []struct {
		name     string
		wasm     []byte
		want     string
		reserved bool
	}{
		{"atomics", loopFn([]byte{0xfe, 0x10, 0x02, 0x00}), "plugin: function 2 at byte 0x26: unknown opcode 0xfe", false},
		{"unknown misc", loopFn([]byte{0xfc, 0x12}), "function 2 at byte 0x26: unknown opcode 0xfc 0x12", false},
		{"unknown simd", loopFn([]byte{0xfd, 0x9a, 0x01}), "unknown opcode 0xfd 0x9a", false},
		{"relaxed simd", loopFn([]byte{0xfd, 0x80, 0x02}), "unknown opcode 0xfd 0x100", false},
		{"exceptions", loopFn([]byte{0x08, 0x00}), "unknown opcode 0x8", false},
		{"truncated body", loopFn([]byte{0x41}), "unexpected end", false},
		{"long u32", loopFn([]byte{0x20, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}), "integer longer than 5 bytes", false},
		{"u32 above 32 bits", loopFn([]byte{0x20, 0x80, 0x80, 0x80, 0x80, 0x10}), "above 32 bits", false},
		{"long i64", loopFn(cat([]byte{0x42}, bytes.Repeat([]byte{0x80}, 10), []byte{0x00})), "longer than 10 bytes", false},
		{"huge br_table", loopFn([]byte{0x0e, 0xff, 0xff, 0xff, 0xff, 0x0f}), "vector of 4294967295 items", false},
		{"code after end", loopFn([]byte{0x0b, 0x01}), "after the function's end", false},
		{"reserved import", mod(sec(secType, vec(functype(nil, []byte{tI64}))),
			sec(secImport, vec(cat(str(GuardModule), str(RefuelName), []byte{0x00}, u(0))))),
			`imports "gateway_guard"."refuel", but the import module gateway_guard is reserved for the host`, true},
		{"huge section", mod([]byte{secType, 0xff, 0xff, 0x03}), "bytes wanted", false},
		{"bad magic", []byte("\x00wasm\x01\x00\x00\x00"), "not a WebAssembly module", false},
		{"too big", make([]byte, MaxModuleBytes+1), "above the", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Instrument(tc.wasm)
			var fe *Error
			if err == nil || out != nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Instrument = %d bytes, %v; want an *Error saying %q", len(out), err, tc.want)
			}
			if errors.Is(err, ErrReservedImport) != tc.reserved {
				t.Errorf("errors.Is(%v, ErrReservedImport) = %v", err, !tc.reserved)
			}
		})
	}
}

// FuzzInstrument checks that Instrument never panics, and that what wazero compiles, Instrument accepts (a
// module importing from gateway_guard excepted) and wazero compiles once instrumented.
func FuzzInstrument(f *testing.F) {
	f.Add(featuresModule())
	f.Add(renumberModule())
	f.Add(genv())
	for _, m := range runawayModules() {
		f.Add(m)
	}
	f.Add(mod())
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	// compile reports wazero's verdict on wasm; wazero panics on some invalid modules (plugins recovers too).
	compile := func(wasm []byte) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("wazero panics: %v", r)
			}
		}()
		cm, err := rt.CompileModule(ctx, wasm)
		if err == nil {
			_ = cm.Close(ctx)
		}
		return err
	}
	f.Fuzz(func(t *testing.T, wasm []byte) {
		out, err := Instrument(wasm)
		if errors.Is(err, ErrLimit) || compile(wasm) != nil || errors.Is(err, ErrReservedImport) {
			return
		}
		if err != nil {
			t.Fatalf("wazero compiles the module, Instrument refuses it: %v", err)
		}
		if err := compile(out); err != nil {
			t.Fatalf("wazero compiles the module but not its instrumented form: %v", err)
		}
	})
}
