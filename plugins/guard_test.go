package plugins

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/internal/wasmfuel"
	"github.com/llmgw/gateway/runtime/gwerr"
)

// guardTestModule is an ABI v1 module assembled by hand: gateway_abi_v1, gateway_alloc (always 1024),
// gateway_call with the body call (and the i32 locals declared by locals, as a code entry's local groups),
// functions of type (i64) -> i64 from index 3 on, an _initialize with the body init unless nil, and 4 pages of
// memory.
type guardTestModule struct {
	call, locals, init []byte
	extra              [][]byte
}

func (m guardTestModule) bytes() []byte {
	code := func(locals, body []byte) []byte {
		if locals == nil {
			locals = []byte{0x00}
		}
		b := append(append(append([]byte(nil), locals...), body...), 0x0b)
		return append(leb(uint32(len(b))), b...)
	}
	funcs := [][]byte{{0}, {1}, {2}}
	codes := [][]byte{code(nil, nil), code(nil, []byte{0x41, 0x80, 0x08}), code(m.locals, m.call)}
	for _, f := range m.extra {
		funcs = append(funcs, []byte{3})
		codes = append(codes, code(nil, f))
	}
	exports := [][]byte{
		append(wasmName(hostapi.ExportMarker), 0x00, 0),
		append(wasmName(hostapi.ExportAlloc), 0x00, 1),
		append(wasmName(hostapi.ExportCall), 0x00, 2),
		append(wasmName("memory"), 0x02, 0),
	}
	if m.init != nil {
		exports = append(exports, append(wasmName("_initialize"), append([]byte{0x00}, leb(uint32(len(funcs)))...)...))
		funcs = append(funcs, []byte{0})
		codes = append(codes, code(nil, m.init))
	}
	out := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	out = append(out, section(1,
		[]byte{0x60, 0, 0},
		[]byte{0x60, 1, 0x7f, 1, 0x7f},
		[]byte{0x60, 3, 0x7f, 0x7f, 0x7f, 1, 0x7e},
		[]byte{0x60, 1, 0x7e, 1, 0x7e},
	)...)
	out = append(out, section(3, funcs...)...)
	out = append(out, section(5, []byte{0x00, 0x04})...)
	out = append(out, section(7, exports...)...)
	return append(out, section(10, codes...)...)
}

var loopForever = []byte{0x03, 0x40, 0x0c, 0x00, 0x0b} // loop br 0 end

// runawayCalls are gateway_call bodies that never return, each with a different shape of endless work.
func runawayCalls() map[string]guardTestModule {
	straight := []byte{0x03, 0x40}
	for range 5000 {
		straight = append(straight, 0x41, 0x01, 0x1a) // i32.const 1; drop
	}
	straight = append(straight, 0x0c, 0x00, 0x0b, 0x00)
	// f(d) = d == 0 ? 0 : g(d-1) + g(d-1), and g likewise with f: 2^60 calls 60 deep, no loop and no deep stack.
	tree := func(callee byte) []byte {
		half := []byte{0x20, 0x00, 0x42, 0x01, 0x7d, 0x10, callee}
		b := []byte{0x20, 0x00, 0x50, 0x04, 0x7e, 0x42, 0x00, 0x05}
		return append(append(append(b, half...), half...), 0x7c, 0x0b)
	}
	return map[string]guardTestModule{
		"infinite loop":              {call: append(loopForever, 0x00)},
		"loop of straight-line code": {call: straight},
		// i32.const 0; loop (param i32) (result i32): i32.const 1; i32.add; br 0; end; drop
		"loop with a parameter":    {call: []byte{0x41, 0x00, 0x03, 0x01, 0x41, 0x01, 0x6a, 0x0c, 0x00, 0x0b, 0x1a, 0x00}},
		"endless mutual recursion": {call: []byte{0x42, 60, 0x10, 3}, extra: [][]byte{tree(4), tree(3)}},
	}
}

// TestGuardStopsRunaways runs guests that never return: each call must fail with ErrTimeout (not the
// request's context.DeadlineExceeded), and the plugin must keep serving on a fresh instance.
func TestGuardStopsRunaways(t *testing.T) {
	opts := testOptions(t)
	opts.CallTimeout = 50 * time.Millisecond
	e := newEngine(t, opts)
	for name, m := range runawayCalls() {
		t.Run(name, func(t *testing.T) {
			load(t, e, wsA, "p", m.bytes())
			for range 2 {
				_, err := e.Call(context.Background(), wsA, "p", hostapi.KindCheck, nil, nil)
				if !errors.Is(err, ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Call = %v, want ErrTimeout", err)
				}
			}
		})
	}
}

// TestGuardRequestDeadline: when the request's deadline comes before CallTimeout, a runaway guest ends with
// the request's context.DeadlineExceeded, whether or not the context's timer has fired when the guard looks.
func TestGuardRequestDeadline(t *testing.T) {
	opts := testOptions(t)
	opts.CallTimeout = 10 * time.Second
	e := newEngine(t, opts)
	load(t, e, wsA, "p", guardTestModule{call: append(loopForever, 0x00)}.bytes())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := e.Call(ctx, wsA, "p", hostapi.KindCheck, nil, nil); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrTimeout) {
		t.Errorf("Call = %v, want context.DeadlineExceeded", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if _, err := e.Call(ctx, wsA, "p", hostapi.KindCheck, nil, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Call = %v, want context.Canceled", err)
	}
}

// TestGuardInitialize: a guest looping in _initialize fails its load as one that does not initialise in time.
func TestGuardInitialize(t *testing.T) {
	opts := testOptions(t)
	opts.initTimeout = 50 * time.Millisecond
	e := newEngine(t, opts)
	err := e.Load(context.Background(), wsA, "p", guardTestModule{call: []byte{0x42, 0x00}, init: loopForever}.bytes())
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Status != http.StatusBadRequest || !strings.Contains(err.Error(), "_initialize ran past 50ms") {
		t.Fatalf("Load = %v, want a 400: _initialize ran past 50ms", err)
	}
	if !errors.As(err, new(transientError)) {
		t.Errorf("Load = %v, want a transient error (the machine may have been busy)", err)
	}
}

// TestGuardEngineClose: a guest looping when the engine closes stops with ErrClosed, whatever its deadline.
func TestGuardEngineClose(t *testing.T) {
	opts := testOptions(t)
	opts.CallTimeout = time.Minute
	e := newEngine(t, opts)
	load(t, e, wsA, "p", guardTestModule{call: append(loopForever, 0x00)}.bytes())
	done := make(chan error, 1)
	go func() {
		_, err := e.Call(context.Background(), wsA, "p", hostapi.KindCheck, nil, nil)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond) // let the call start; if it starts after Close, it fails all the same
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Call succeeded")
		}
		t.Logf("Call after Close: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the call still runs 30 s after Close")
	}
}

// TestGuardReservedImport: a guest importing from gateway_guard itself is refused with a 400 naming the import.
func TestGuardReservedImport(t *testing.T) {
	e := newEngine(t, testOptions(t))
	m := abiModule()
	m.imports = append(m.imports, struct {
		module, name string
		fn           wasmFunc
	}{wasmfuel.GuardModule, wasmfuel.RefuelName, wasmFunc{results: []byte{0x7e}}})
	err := e.Validate(context.Background(), m.bytes())
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Status != http.StatusBadRequest || !strings.Contains(ge.Message, `imports "gateway_guard"."refuel"`) ||
		!strings.Contains(ge.Message, "reserved for the host") {
		t.Fatalf("Validate = %v, want a 400 naming the import", err)
	}
	if err := e.Load(context.Background(), wsA, "p", m.bytes()); !errors.As(err, &ge) || ge.Status != http.StatusBadRequest {
		t.Errorf("Load = %v, want a 400", err)
	}
}

// TestGuardKeepsTheOriginal: the version's SHA-256 is the uploaded module's, not the instrumented one's.
func TestGuardKeepsTheOriginal(t *testing.T) {
	e := newEngine(t, testOptions(t))
	wasm := abiModule().bytes()
	load(t, e, wsA, "p", wasm)
	st, _ := e.Stats(wsA, "p")
	if want := fmt.Sprintf("%x", sha256.Sum256(wasm)); st.SHA256 != want {
		t.Errorf("SHA256 = %s, want the module's %s", st.SHA256, want)
	}
	code, err := wasmfuel.Instrument(wasm)
	if err != nil || bytes.Equal(code, wasm) {
		t.Fatalf("Instrument = %d bytes, %v", len(code), err)
	}
}

// byteLoop is a gateway_call summing its input a byte at a time (locals 3: i, 4: sum) and storing the sum at
// address 0: a tight byte loop, like a script scan, the worst case of a per-iteration guard.
var byteLoop = guardTestModule{
	locals: []byte{0x01, 0x02, 0x7f},
	call: []byte{
		0x02, 0x40, 0x20, 0x02, 0x45, 0x0d, 0x00, // block; br_if 0 (len == 0)
		0x03, 0x40, // loop
		0x20, 0x04, 0x20, 0x01, 0x20, 0x03, 0x6a, 0x2d, 0x00, 0x00, 0x6a, 0x21, 0x04, // sum += mem[ptr+i]
		0x20, 0x03, 0x41, 0x01, 0x6a, 0x22, 0x03, 0x20, 0x02, 0x49, 0x0d, 0x00, // br_if 0 (++i < len)
		0x0b, 0x0b, // end end
		0x41, 0x00, 0x20, 0x04, 0x36, 0x02, 0x00, // mem[0] = sum
		0x42, 0x00, // pass
	},
}

// BenchmarkGuardLoop measures the guard on the tight byte loop over 64 KB, guarded and unguarded, and
// guarded with less fuel per refuel (more refuel calls), to price refuel itself.
//
//	go test -run '^$' -bench BenchmarkGuardLoop ./plugins
func BenchmarkGuardLoop(b *testing.B) {
	in := &hostapi.Input{Text: strings.Repeat("x", 64<<10)}
	for _, bc := range []struct {
		name      string
		unguarded bool
		fuel      int64
	}{
		{"unguarded", true, fuelPerRefuel},
		{"guarded", false, fuelPerRefuel},
		{"guarded/fuel=4096", false, 4096},
		{"guarded/fuel=256", false, 256},
	} {
		b.Run(bc.name, func(b *testing.B) {
			defer func(f int64) { fuelPerRefuel = f }(fuelPerRefuel)
			fuelPerRefuel = bc.fuel
			opts := testOptions(b)
			opts.unguarded = bc.unguarded
			e := newEngine(b, opts)
			load(b, e, wsA, "p", byteLoop.bytes())
			ctx := context.Background()
			b.SetBytes(int64(len(in.Text)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Call(ctx, wsA, "p", hostapi.KindCheck, in, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGuardOvershoot measures how long past its deadline a runaway guest runs (the metric
// overshoot-µs), for the fuel per refuel in use.
func BenchmarkGuardOvershoot(b *testing.B) {
	opts := testOptions(b)
	opts.CallTimeout = 5 * time.Millisecond
	e := newEngine(b, opts)
	for name, m := range runawayCalls() {
		load(b, e, wsA, "p", m.bytes())
		b.Run(strings.ReplaceAll(name, " ", "-"), func(b *testing.B) {
			var over time.Duration
			for b.Loop() {
				start := time.Now()
				if _, err := e.Call(context.Background(), wsA, "p", hostapi.KindCheck, nil, nil); !errors.Is(err, ErrTimeout) {
					b.Fatal(err)
				}
				over += time.Since(start) - opts.CallTimeout
			}
			b.ReportMetric(float64(over.Microseconds())/float64(b.N), "overshoot-µs")
		})
	}
}
