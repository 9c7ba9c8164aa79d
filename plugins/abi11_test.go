package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime/gwerr"
)

// editFuncs returns m with its functions copied and edited.
func editFuncs(m wasmModule, edit func(map[string]wasmFunc)) wasmModule {
	m.funcs = maps(m.funcs)
	edit(m.funcs)
	return m
}

// v11Module is abiModule speaking ABI v1.1 (or whatever version v encodes).
func v11Module(v int32) wasmModule {
	return editFuncs(abiModule(), func(f map[string]wasmFunc) { f[hostapi.ExportVersion] = fnVersion(v) })
}

// TestABIVersion proves what Load makes of gateway_abi_version: absent or v1.0/v1.1 loads, any other version is
// a 400 naming both versions, a v1.1 guest must export its memory as "memory" (a v1.0 guest need not), and a
// version export of the wrong type or that traps is a 400 naming it.
func TestABIVersion(t *testing.T) {
	e := newEngine(t, testOptions(t))
	v := hostapi.EncodeVersion
	tests := []struct {
		name string
		mod  wasmModule
		want string // a substring of the 400's message; empty: loads
	}{
		{"no version export", abiModule(), ""},
		{"v1.0 memory named otherwise", func() wasmModule { m := abiModule(); m.memName = "mem"; return m }(), ""},
		{"v1.0 export", v11Module(v(1, 0)), ""},
		{"v1.1", v11Module(v(1, 1)), ""},
		{"v1.1 memory named otherwise", func() wasmModule { m := v11Module(v(1, 1)); m.memName = "mem"; return m }(),
			`speaks ABI v1.1 but does not export its memory as "memory"`},
		{"v2.0", v11Module(v(2, 0)), "speaks ABI v2.0; this gateway speaks v1.1"},
		{"v1.2", v11Module(v(1, 2)), "speaks ABI v1.2; this gateway speaks v1.1"},
		{"v0.9", v11Module(v(0, 9)), "speaks ABI v0.9; this gateway speaks v1.1"},
		{"negative", v11Module(-1), "speaks ABI v65535.65535; this gateway speaks v1.1"},
		{"version takes a parameter", editFuncs(abiModule(), func(f map[string]wasmFunc) {
			f[hostapi.ExportVersion] = wasmFunc{params: []byte{0x7f}, results: []byte{0x7f}}
		}), `export "gateway_abi_version" is (i32) -> i32, want () -> i32`},
		{"version traps", editFuncs(abiModule(), func(f map[string]wasmFunc) {
			f[hostapi.ExportVersion] = wasmFunc{results: []byte{0x7f}, body: []byte{0x00}} // unreachable
		}), "fails gateway_abi_version()"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := "p" + string(rune('a'+i))
			err := e.Load(context.Background(), wsA, id, tc.mod.bytes())
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if out := call(t, e, wsA, id, hostapi.KindCheck, &hostapi.Input{Text: "x"}, nil); !out.Verdict {
					t.Fatalf("call: %+v", out)
				}
				return
			}
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Status != http.StatusBadRequest || !strings.Contains(ge.Message, tc.want) {
				t.Fatalf("Load = %v, want a 400 containing %q", err, tc.want)
			}
			if _, ok := e.Stats(wsA, id); ok {
				t.Fatal("the refused plugin is loaded")
			}
		})
	}
}

// TestV11BadAlloc proves a v1.1 guest whose gateway_alloc hands out memory it does not have is refused at load,
// as a v1.0 one is: the smoke call asks for the buffer the calls will reuse.
func TestV11BadAlloc(t *testing.T) {
	e := newEngine(t, testOptions(t))
	m := editFuncs(v11Module(hostapi.EncodeVersion(1, 1)), func(f map[string]wasmFunc) {
		f[hostapi.ExportAlloc] = wasmFunc{params: fnAlloc.params, results: fnAlloc.results, body: append([]byte{0x41}, sleb(-0x1000)...)}
	})
	err := e.Load(context.Background(), wsA, "p", m.bytes())
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Status != http.StatusBadRequest || !strings.Contains(ge.Message, "gateway_alloc(1024)") {
		t.Fatalf("Load = %v, want a 400 naming gateway_alloc(1024)", err)
	}
}

// TestOneGuestCallPerCheck counts gateway_alloc calls in the guest (its "allocs" check reports them): a v1.0
// guest gets one per call with an input, as before (each step here is an "allocs" and an "echo" call); a v1.1 guest gets only the one of the load's smoke call
// (1 KiB) and one more when an input outgrows its buffer (rounded up to a power of two), so every other check
// is one guest call. Echo calls between them prove the reused buffer carries each input exactly.
func TestOneGuestCallPerCheck(t *testing.T) {
	small := &hostapi.Input{Text: "small", CheckID: "p.allocs"}
	large := &hostapi.Input{Text: strings.Repeat("x", 5000), CheckID: "p.allocs"}
	steps := []*hostapi.Input{small, small, large, small, large, small}
	for _, tc := range []struct {
		guest  string
		allocs []int    // after each step
		sizes  []uint32 // the size the last gateway_alloc asked, after each step
	}{
		{"basic", []int{2, 4, 6, 8, 10, 12}, []uint32{0, 0, 0, 0, 0, 0}},
		{"basic-v11", []int{1, 1, 2, 2, 2, 2}, []uint32{1024, 1024, 8192, 8192, 8192, 8192}},
	} {
		t.Run(tc.guest, func(t *testing.T) {
			opts := testOptions(t)
			opts.MaxInstances = 1          // one instance, so that the counts are its
			opts.CallTimeout = time.Minute // counts, not timing: a loaded machine under -race must not fail it
			e := newEngine(t, opts)
			load(t, e, wsA, "p", guest(t, tc.guest))
			for i, in := range steps {
				out := call(t, e, wsA, "p", hostapi.KindCheck, in, nil)
				var got struct {
					Allocs int
					Size   uint32
				}
				if err := json.Unmarshal(out.Data, &got); err != nil {
					t.Fatalf("step %d: data %s: %v", i, out.Data, err)
				}
				if got.Allocs != tc.allocs[i] || (tc.sizes[i] != 0 && got.Size != tc.sizes[i]) {
					t.Errorf("step %d (%d bytes of text): gateway_alloc called %d times, last for %d bytes; want %d times, %d bytes",
						i, len(in.Text), got.Allocs, got.Size, tc.allocs[i], tc.sizes[i])
				}
				echo := &hostapi.Input{Text: in.Text[:len(in.Text)-i], CheckID: "p.echo", Model: "m"}
				out = call(t, e, wsA, "p", hostapi.KindCheck, echo, nil)
				var data struct{ Text, Model string }
				if err := json.Unmarshal(out.Data, &data); err != nil || data.Text != echo.Text || data.Model != "m" {
					t.Fatalf("step %d: echo of %d bytes came back as %d bytes (%v)", i, len(echo.Text), len(data.Text), err)
				}
			}
		})
	}
}

// TestInputBufSize proves the sizes asked of a v1.1 guest: powers of two from 1 KiB, the input's own size past
// what fits in an i32.
func TestInputBufSize(t *testing.T) {
	for _, c := range []struct{ n, want uint32 }{
		{1, 1024}, {1023, 1024}, {1024, 1024}, {1025, 2048}, {5000, 8192}, {1 << 20, 1 << 20}, {1<<20 + 1, 2 << 20},
		{1 << 30, 1 << 30}, {1<<30 + 1, 1<<30 + 1}, {1<<31 - 1, 1<<31 - 1},
	} {
		if got := inputBufSize(c.n); got != c.want {
			t.Errorf("inputBufSize(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}
