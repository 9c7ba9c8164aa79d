package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/hostapi"
)

// TestHostileGuests runs guests that misbehave: each failure must come back as an error within a bound, the
// failed instance must be replaced, and the engine must keep working.
func TestHostileGuests(t *testing.T) {
	opts := testOptions(t)
	opts.CallTimeout = 100 * time.Millisecond
	e := newEngine(t, opts)
	load(t, e, wsA, "p", guest(t, "basic"))

	// The memory bomb gets a generous deadline, so that it is the memory limit that stops it.
	opts.CallTimeout = 10 * time.Second
	roomy := newEngine(t, opts)
	load(t, roomy, wsA, "p", guest(t, "basic"))

	tests := []struct {
		name    string
		e       *Engine
		checkID string
		within  time.Duration
		is      error
		want    string // in the error
	}{
		{"infinite loop stopped by the deadline", e, "loop", 2 * time.Second, ErrTimeout, "exceeded its deadline"},
		{"memory bomb stopped by the limit", roomy, "bomb", 8 * time.Second, ErrTrap, "out of memory"},
		{"panic contained", e, "panic", 2 * time.Second, ErrTrap, "failed in gateway_call: panic: guest panics on purpose"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.e
			before, _ := e.Stats(wsA, "p")
			start := time.Now()
			out, err := e.Call(context.Background(), wsA, "p", hostapi.KindCheck, &hostapi.Input{CheckID: tc.checkID}, nil)
			took := time.Since(start)
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) || out != nil {
				t.Fatalf("Call = %v, %v; want an error wrapping %v mentioning %q", out, err, tc.is, tc.want)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %v matches context.DeadlineExceeded, which would read as the request's timeout", err)
			}
			if took > tc.within {
				t.Errorf("took %v, want under %v", took, tc.within)
			}
			t.Logf("%v after %v", err, took)
			after, _ := e.Stats(wsA, "p")
			if after.Errors != before.Errors+1 {
				t.Errorf("errors %d → %d", before.Errors, after.Errors)
			}
			// The engine still works, on a fresh instance.
			for range 3 {
				if out := call(t, e, wsA, "p", hostapi.KindCheck, &hostapi.Input{CheckID: "fail"}, nil); out.Verdict {
					t.Errorf("after %s: %+v", tc.checkID, out)
				}
			}
		})
	}

	t.Run("file access refused", func(t *testing.T) {
		out := call(t, e, wsA, "p", hostapi.KindCheck, &hostapi.Input{CheckID: "file"}, nil)
		var got struct {
			Error string
			Read  *int
		}
		if err := json.Unmarshal(out.Data, &got); err != nil {
			t.Fatal(err)
		}
		if got.Read != nil || got.Error == "" || !out.Verdict {
			t.Fatalf("the guest read /etc/passwd: %s", out.Data)
		}
		t.Logf("guest's os.ReadFile: %s", got.Error)
	})

	t.Run("request context cancelled", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := e.Call(ctx, wsA, "p", hostapi.KindCheck, &hostapi.Input{CheckID: "loop"}, nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Call = %v, want the request's context.DeadlineExceeded", err)
		}
	})

	if st, _ := e.Stats(wsA, "p"); st.Instances > e.opts.MaxInstances {
		t.Errorf("%d instances alive", st.Instances)
	}
}

// TestHostFunctionBadPointers checks that a guest handing host functions pointers outside its memory traps
// rather than hurting the host: hand-made modules call each host function with a bad pointer.
func TestHostFunctionBadPointers(t *testing.T) {
	e := newEngine(t, testOptions(t))
	type imp = struct {
		module, name string
		fn           wasmFunc
	}
	i32c := func(v uint32) []byte { return append([]byte{0x41}, sleb(int32(v))...) }
	tests := []struct {
		name string
		imp  imp
		args [][]byte // i32 constants pushed before calling the import (function index 0)
		drop bool
	}{
		{"log", imp{"gateway_v1", "log", wasmFunc{params: []byte{0x7f, 0x7f, 0x7f}}}, [][]byte{i32c(1), i32c(0xfffff000), i32c(100)}, false},
		{"request_field path", imp{"gateway_v1", "request_field", wasmFunc{params: []byte{0x7f, 0x7f, 0x7f, 0x7f}, results: []byte{0x7f}}},
			[][]byte{i32c(0xfffff000), i32c(10), i32c(0), i32c(10)}, true},
		{"request_field out", imp{"gateway_v1", "request_field", wasmFunc{params: []byte{0x7f, 0x7f, 0x7f, 0x7f}, results: []byte{0x7f}}},
			[][]byte{i32c(0), i32c(1), i32c(0xfffff000), i32c(100)}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := abiModule()
			m.imports = []imp{tc.imp}
			var body []byte
			for _, a := range tc.args {
				body = append(body, a...)
			}
			body = append(body, 0x10, 0x00) // call 0
			if tc.drop {
				body = append(body, 0x1a) // drop
			}
			body = append(body, 0x42, 0x00) // i64.const 0
			m.funcs = maps(m.funcs)
			m.funcs["gateway_call"] = wasmFunc{params: fnCall.params, results: fnCall.results, body: body}
			load(t, e, wsA, "bad-"+strings.ReplaceAll(tc.name, " ", "-"), m.bytes())
			// The memory is one page; with metadata "." at offset 0 the path is "\x03"... any byte will do.
			_, err := e.Call(context.Background(), wsA, "bad-"+strings.ReplaceAll(tc.name, " ", "-"), hostapi.KindCheck, &hostapi.Input{Text: "x"},
				fields{"\x01": `"a-long-enough-value"`})
			if !errors.Is(err, ErrTrap) || !strings.Contains(err.Error(), "outside the module's memory") {
				t.Errorf("Call = %v, want a trap about memory", err)
			}
		})
	}
}

func sleb(v int32) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// FuzzCallOutput fuzzes the host's reading of a guest's answer: a hand-made guest returns, as gateway_call's
// (out_ptr << 32 | out_len), the first 8 bytes of the input's text, so the fuzzer picks the pointer and length
// (in range, out of range, overflowing) over a memory that holds the fuzzed text. Call must return a decoded
// Output or an error wrapping ErrTrap, never panic.
func FuzzCallOutput(f *testing.F) {
	m := abiModule()
	m.funcs = maps(m.funcs)
	// i32.const 5 (past the text field's header); i64.load align=0 offset=0
	m.funcs["gateway_call"] = wasmFunc{params: fnCall.params, results: fnCall.results, body: []byte{0x41, 0x05, 0x29, 0x00, 0x00}}
	e := newEngine(f, testOptions(f))
	load(f, e, wsA, "p", m.bytes())
	le := func(ptr, n uint32, rest string) string {
		b := []byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24), byte(ptr), byte(ptr >> 8), byte(ptr >> 16), byte(ptr >> 24)}
		return string(b) + rest
	}
	f.Add(le(0, 0, ""))                                // ptr 0, len 0: pass
	f.Add(le(13, 6, "\x01\x01\x00\x00\x00\x00"))       // a fail verdict, read from the text itself
	f.Add(le(13, 10, "\x02\x05\x00\x00\x00[1,2]"))     // data that is not an object
	f.Add(le(13, 12, "\x02\x07\x00\x00\x00{\"a\":1}")) // data
	f.Add(le(0xffff_fff0, 64, ""))                     // out of memory
	f.Add(le(65530, 10, ""))                           // straddles the end of memory
	f.Add(le(13, 6, "\x01\x01\x00\x00\x00\x07"))       // a bad flag
	f.Add(le(0, 0xffff_ffff, ""))                      // huge length
	f.Fuzz(func(t *testing.T, text string) {
		out, err := e.Call(context.Background(), wsA, "p", hostapi.KindCheck, &hostapi.Input{Text: text}, nil)
		if err != nil {
			if !errors.Is(err, ErrTrap) {
				t.Fatalf("error %v does not wrap ErrTrap", err)
			}
			return
		}
		if out == nil {
			t.Fatal("nil Output without an error")
		}
		if out.Data != nil && !json.Valid(out.Data) {
			t.Fatalf("invalid data %q passed through", out.Data)
		}
	})
}
