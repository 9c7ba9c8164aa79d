package wasmfuel

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// A tiny assembler for hand-made test modules: sections are given whole, function bodies as instructions.

const (
	tI32     = 0x7f
	tI64     = 0x7e
	tF32     = 0x7d
	tV128    = 0x7b
	tFuncref = 0x70
)

func u(v uint32) []byte { return appendU32(nil, v) }
func s(v int64) []byte  { return appendS64(nil, v) }

func str(v string) []byte { return appendName(nil, v) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// vec is a vector of items.
func vec(items ...[]byte) []byte { return cat(u(uint32(len(items))), cat(items...)) }

// sec is a section.
func sec(id byte, content []byte) []byte { return appendSection(nil, id, content) }

// mod is a module of the given sections.
func mod(sections ...[]byte) []byte { return cat([]byte("\x00asm\x01\x00\x00\x00"), cat(sections...)) }

func functype(params, results []byte) []byte {
	return cat([]byte{0x60}, u(uint32(len(params))), params, u(uint32(len(results))), results)
}

// body is a code entry: local declarations (count, type pairs) and the instructions, ended.
func body(locals []byte, code ...[]byte) []byte {
	b := cat(locals, cat(code...), []byte{0x0b})
	return cat(u(uint32(len(b))), b)
}

var noLocals = []byte{0}

func i32c(v int32) []byte  { return cat([]byte{0x41}, s(int64(v))) }
func i64c(v int64) []byte  { return cat([]byte{0x42}, s(v)) }
func call(f uint32) []byte { return cat([]byte{0x10}, u(f)) }

func export(name string, kind byte, idx uint32) []byte { return cat(str(name), []byte{kind}, u(idx)) }

// guard is a gateway_guard host module whose refuel hands out fuel per call and, once it has been called
// stopAfter times, stops the guest with errStopped (0: never).
type guard struct {
	fuel      int64
	stopAfter int
	calls     int
}

var errStopped = errors.New("guest stopped by the test's refuel")

func (g *guard) refuel(_ context.Context, stack []uint64) {
	g.calls++
	if g.stopAfter > 0 && g.calls >= g.stopAfter {
		panic(errStopped)
	}
	stack[0] = uint64(g.fuel)
}

// runtime returns a runtime with the guard and an "env" module: base () -> i32 returns 7 and global g.
func newRuntime(t testing.TB, g *guard) wazero.Runtime {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	t.Cleanup(func() { _ = rt.Close(ctx) })
	if _, err := rt.NewHostModuleBuilder(GuardModule).NewFunctionBuilder().
		WithGoFunction(api.GoFunc(g.refuel), nil, []api.ValueType{api.ValueTypeI64}).Export(RefuelName).
		Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.NewHostModuleBuilder("env").NewFunctionBuilder().
		WithGoFunction(api.GoFunc(func(_ context.Context, stack []uint64) { stack[0] = 7 }), nil, []api.ValueType{api.ValueTypeI32}).
		Export("base").Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	return rt
}

// instantiate instruments wasm (unless raw) and instantiates it in rt.
func instantiate(t testing.TB, rt wazero.Runtime, wasm []byte, raw bool) (api.Module, error) {
	t.Helper()
	if !raw {
		var err error
		if wasm, err = Instrument(wasm); err != nil {
			t.Fatalf("Instrument: %v", err)
		}
	}
	ctx := context.Background()
	cm, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatalf("compile (instrumented: %v): %v", !raw, err)
	}
	return rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName(""))
}
