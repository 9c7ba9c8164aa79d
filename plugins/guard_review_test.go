package plugins

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime/gwerr"
)

// bulkLoop is a gateway_call that grows its memory to 64 MiB and then runs op (an instruction taking three
// i32 operands, the last a length) over all of it in an endless loop: one instruction per iteration for the
// instruction count, 64 MiB of work for the machine.
func bulkLoop(op ...byte) guardTestModule {
	call := []byte{0x41, 0xfc, 0x07, 0x40, 0x00, 0x1a}                                    // memory.grow 1020 pages; drop
	call = append(call, 0x03, 0x40, 0x41, 0x00, 0x41, 0x00, 0x41, 0x80, 0x80, 0x80, 0x20) // loop; 0; 0; 64 MiB
	call = append(call, op...)
	return guardTestModule{call: append(call, 0x0c, 0x00, 0x0b, 0x00)} // br 0; end; unreachable
}

// TestGuardStopsBulkMemoryLoops: memory.fill and memory.copy over the whole memory in a loop are one
// instruction each for the fuel counter; the guard must still stop the call at its deadline rather than after
// the billions of bytes its fuel lets through.
func TestGuardStopsBulkMemoryLoops(t *testing.T) {
	opts := testOptions(t)
	opts.CallTimeout = 50 * time.Millisecond
	e := newEngine(t, opts)
	for name, m := range map[string]guardTestModule{
		"memory.fill": bulkLoop(0xfc, 0x0b, 0x00),
		"memory.copy": bulkLoop(0xfc, 0x0a, 0x00, 0x00),
	} {
		t.Run(name, func(t *testing.T) {
			load(t, e, wsA, "p", m.bytes())
			start := time.Now()
			_, err := e.Call(context.Background(), wsA, "p", hostapi.KindCheck, nil, nil)
			t.Logf("%s: %v after %v", name, err, time.Since(start))
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("Call = %v, want ErrTimeout", err)
			}
		})
	}
}

// megabyteView is a RequestView whose every field is a megabyte long, with a clock of when it was asked.
type megabyteView struct {
	value  []byte
	mu     sync.Mutex
	stamps []time.Time
}

func (v *megabyteView) Field(string) ([]byte, bool) { return v.lookup(), true }

func (v *megabyteView) kv(_, _ string) ([]byte, bool, error) { return v.lookup(), true, nil }

func (v *megabyteView) lookup() []byte {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.stamps = append(v.stamps, time.Now())
	return v.value
}

// TestGuardStopsHostCallLoops: a guest calling kv_get or request_field in an endless loop for a 1 MiB value
// is charged a few instructions per call by the fuel counter, but each call copies a megabyte; the host
// function must itself stop the guest once the call's deadline has passed, not serve lookups for the seconds
// a stretch of fuel lasts.
func TestGuardStopsHostCallLoops(t *testing.T) {
	for _, name := range []string{hostapi.ImportKVGet, hostapi.ImportRequestField} {
		t.Run(name, func(t *testing.T) {
			view := &megabyteView{value: make([]byte, 1<<20)}
			opts := testOptions(t)
			opts.CallTimeout = 50 * time.Millisecond
			opts.KV = view.kv
			e := newEngine(t, opts)
			m := abiModule()
			m.funcs = maps(m.funcs)
			m.funcs["gateway_call"] = wasmFunc{params: fnCall.params, results: fnCall.results, body: []byte{
				0x41, 0x20, 0x40, 0x00, 0x1a, // memory.grow 32 pages (2 MiB); drop
				0x03, 0x40, // loop
				0x41, 0x00, 0x41, 0x01, 0x41, 0x80, 0x80, 0x04, 0x41, 0x80, 0x80, 0xc0, 0x00, // key 0+1, out 65536 cap 1 MiB
				0x10, 0x00, 0x1a, 0x0c, 0x00, 0x0b, 0x00, // call the import; drop; br 0; end; unreachable
			}}
			m.imports = append(m.imports, struct {
				module, name string
				fn           wasmFunc
			}{hostapi.ModuleName, name, wasmFunc{params: []byte{0x7f, 0x7f, 0x7f, 0x7f}, results: []byte{0x7f}}})
			load(t, e, wsA, "p", m.bytes())
			start := time.Now()
			_, err := e.Call(context.Background(), wsA, "p", hostapi.KindCheck, nil, view)
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("Call = %v, want ErrTimeout", err)
			}
			view.mu.Lock()
			defer view.mu.Unlock()
			// Generous: a lookup starting a second past the deadline means the host function does not look at it.
			late := 0
			for _, s := range view.stamps {
				if s.Sub(start) > opts.CallTimeout+time.Second {
					late++
				}
			}
			t.Logf("%d lookups, %d of them more than a second past the deadline; the call took %v", len(view.stamps), late, time.Since(start))
			if late > 0 {
				t.Errorf("%s served %d lookups more than a second past the call's deadline", name, late)
			}
		})
	}
}

// TestTablesAreBounded: a guest's tables live outside its linear memory, which is all that MemoryLimitMiB
// and MemoryPerWorkspace bound. A table's initial size may be 2^27 entries of 8 bytes (1 GiB at each
// instantiation), and table.grow may take a table without a declared maximum (Go guests declare none) to 2^32
// entries in one instruction. Neither may take more of the host's heap than the memory limit.
//
// So a table may declare at most wasmfuel.MaxTableElements and table.grow is refused: Load refuses both
// modules with a 400 naming the table, before any instance exists.
func TestTablesAreBounded(t *testing.T) {
	grow := guardTestModule{call: []byte{
		0xd0, 0x70, 0x41, 0x80, 0x80, 0x80, 0x08, 0xfc, 0x0f, 0x00, // table.grow 0 (ref.null func, 2^24)
		0xac,             // i64.extend_i32_s: the old size, or -1 when the grow failed
		0x42, 0x20, 0x86, // i64.const 32; i64.shl
	}}
	for name, wasm := range map[string][]byte{
		"table.grow by 2^24":             withTable(grow.bytes(), 0),
		"initial size of 2^24 (128 MiB)": withTable(guardTestModule{call: []byte{0x42, 0x00}}.bytes(), 1<<24),
	} {
		t.Run(name, func(t *testing.T) {
			e := newEngine(t, testOptions(t))
			err := e.Load(context.Background(), wsA, "p", wasm)
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Status != http.StatusBadRequest || !strings.Contains(ge.Message, "table") {
				t.Fatalf("Load = %v, want a 400 naming the table", err)
			}
		})
	}
}

// withTable inserts a table section into wasm, a module without one: a funcref table of min entries and no
// maximum.
func withTable(wasm []byte, min uint32) []byte {
	for at := 8; at < len(wasm); {
		if wasm[at] > 4 {
			table := section(4, append([]byte{0x70, 0x00}, leb(min)...))
			return append(append(append([]byte(nil), wasm[:at]...), table...), wasm[at:]...)
		}
		size, n := uint32(0), 0
		for shift := 0; ; shift += 7 {
			c := wasm[at+1+n]
			n++
			size |= uint32(c&0x7f) << shift
			if c < 0x80 {
				break
			}
		}
		at += 1 + n + int(size)
	}
	return wasm
}

// TestLoadRefusesHugeLocals: a module of a few bytes whose function declares 2^32-1 locals makes wazero's
// compiler die of a fatal out of memory (the process, not an error); Validate and Load must refuse it with a
// 400 before wazero sees it.
func TestLoadRefusesHugeLocals(t *testing.T) {
	e := newEngine(t, testOptions(t))
	wasm := guardTestModule{call: []byte{0x42, 0x00}, locals: []byte{0x01, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x7f}}.bytes()
	for name, f := range map[string]func() error{
		"Validate": func() error { return e.Validate(context.Background(), wasm) },
		"Load":     func() error { return e.Load(context.Background(), wsA, "p", wasm) },
	} {
		err := f()
		var ge *gwerr.Error
		if !errors.As(err, &ge) || ge.Status != http.StatusBadRequest || !strings.Contains(ge.Message, "locals") {
			t.Errorf("%s = %v, want a 400 about the locals", name, err)
		}
	}
}
