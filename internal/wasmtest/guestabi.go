package wasmtest

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/llmgw/gateway/hostapi"
)

// The guest side of ABI v1.1 as every SDK other than Go's must speak it (the Go SDK's is proven by this
// package's own tests on testdata/guest): the shape of a module and the answers to inputs the gateway would
// never send.

// CheckModule checks the ABI v1.1 shape of a guest module built by an SDK: the exports (the version among
// them), memory exported as "memory", no WASI _start (the gateway refuses commands) and no import but the
// host's and WASI's.
func CheckModule(t *testing.T, name string, wasm []byte) {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	cm, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	exports := cm.ExportedFunctions()
	for _, export := range []string{hostapi.ExportMarker, hostapi.ExportAlloc, hostapi.ExportCall, "gateway_abi_version"} {
		if _, ok := exports[export]; !ok {
			t.Errorf("%s: no export %s", name, export)
		}
	}
	if _, ok := exports["_start"]; ok {
		t.Errorf("%s exports _start", name)
	}
	if _, ok := cm.ExportedMemories()["memory"]; !ok {
		t.Errorf("%s: no memory export", name)
	}
	for _, imp := range cm.ImportedFunctions() {
		mod, fn, _ := imp.Import()
		if mod != hostapi.ModuleName && mod != wasi_snapshot_preview1.ModuleName {
			t.Errorf("%s imports %s.%s", name, mod, fn)
		}
	}
}

// Raw is an instance of a guest in a runtime of its own (wazero's compiler, no memory limit but wasm's) whose
// host functions do nothing, to hand gateway_call bytes the host would never send.
type Raw struct {
	Module      api.Module
	alloc, call api.Function
}

// InstantiateRaw instantiates wasm (its _initialize, if it has one, run) for the length of t.
func InstantiateRaw(t *testing.T, wasm []byte) *Raw {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	t.Cleanup(func() { rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	_, err := rt.NewHostModuleBuilder(hostapi.ModuleName).
		NewFunctionBuilder().WithFunc(func(context.Context, int32, uint32, uint32) {}).Export(hostapi.ImportLog).
		NewFunctionBuilder().WithFunc(func(context.Context) int64 { return 0 }).Export(hostapi.ImportNowUnixMs).
		NewFunctionBuilder().WithFunc(func(context.Context, uint32, uint32, uint32, uint32) int32 { return -1 }).Export(hostapi.ImportRequestField).
		NewFunctionBuilder().WithFunc(func(context.Context, uint32, uint32, uint32, uint32) int32 { return -1 }).Export(hostapi.ImportKVGet).
		Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithStartFunctions("_initialize"))
	if err != nil {
		t.Fatal(err)
	}
	return &Raw{Module: mod, alloc: mod.ExportedFunction(hostapi.ExportAlloc), call: mod.ExportedFunction(hostapi.ExportCall)}
}

// Send allocs size bytes, writes b at offset at of them and calls gateway_call (a check) on (ptr+at, len(b)).
func (r *Raw) Send(t *testing.T, size, at uint32, b []byte) (ptr uint32, out hostapi.Output) {
	t.Helper()
	res, err := r.alloc.Call(context.Background(), uint64(size))
	if err != nil {
		t.Fatal(err)
	}
	ptr = uint32(res[0])
	if !r.Module.Memory().Write(ptr+at, b) {
		t.Fatalf("%s returned %#x: %d bytes at +%d are outside memory", hostapi.ExportAlloc, ptr, len(b), at)
	}
	return ptr, r.CallAt(t, ptr+at, uint32(len(b)))
}

// CallAt calls gateway_call (a check) on the n bytes at ptr, whatever they are, and decodes the output.
func (r *Raw) CallAt(t *testing.T, ptr, n uint32) hostapi.Output {
	t.Helper()
	return r.CallExport(t, hostapi.ExportCall, hostapi.KindCheck, ptr, n)
}

// CallExport calls export (gateway_call, or gateway_transform where the guest has it) with kind on the n bytes
// at ptr, whatever they are, and decodes the output.
func (r *Raw) CallExport(t *testing.T, export string, kind hostapi.Kind, ptr, n uint32) hostapi.Output {
	t.Helper()
	fn := r.call
	if export != hostapi.ExportCall {
		fn = r.Module.ExportedFunction(export)
	}
	if fn == nil {
		t.Fatalf("the guest does not export %s", export)
	}
	res, err := fn.Call(context.Background(), uint64(kind), uint64(ptr), uint64(n))
	if err != nil {
		t.Fatal(err)
	}
	b, ok := r.Module.Memory().Read(uint32(res[0]>>32), uint32(res[0]))
	if !ok {
		t.Fatalf("output %#x outside memory", res[0])
	}
	var out hostapi.Output
	if err := hostapi.DecodeOutput(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// CheckGuestABI proves the guest side of the ABI on a conformance guest (package conformance) built by an SDK:
// strict decoding errors come back as check errors naming hostapi's reason, an unknown tag is skipped,
// gateway_abi_version is 1.1, and the v1.1 buffer rule holds (the buffer stays put for inputs that fit, a
// larger one moves it, and an input outside it is refused).
func CheckGuestABI(t *testing.T, conformanceGuest []byte) {
	r := InstantiateRaw(t, conformanceGuest)
	if res, err := r.Module.ExportedFunction("gateway_abi_version").Call(context.Background()); err != nil || int32(res[0]) != 0x00010001 {
		t.Fatalf("gateway_abi_version = %v, %v", res, err)
	}
	field := func(tag byte, v string) []byte {
		return append([]byte{tag, byte(len(v)), 0, 0, 0}, v...)
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, tc := range []struct {
		name, in, want string
	}{
		{"duplicate text", string(cat(field(hostapi.TagText, "a"), field(hostapi.TagText, "b"))), "duplicate field (tag 1 at offset 6)"},
		{"key without value", string(field(hostapi.TagMetadataKey, "k")), "unpaired key or value (tag 3 at offset 0)"},
		{"value without key", string(field(hostapi.TagParamValue, "1")), "unpaired key or value (tag 6 at offset 0)"},
		{"key then other field", string(cat(field(hostapi.TagParamName, "p"), field(hostapi.TagText, "t"))), "unpaired key or value"},
		{"truncated value", string([]byte{hostapi.TagText, 9, 0, 0, 0, 'a'}), "truncated field (tag 1 at offset 0)"},
		{"truncated header", string([]byte{hostapi.TagText, 1}), "truncated field (tag 0 at offset 0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, out := r.Send(t, uint32(len(tc.in)), 0, []byte(tc.in))
			if !strings.Contains(out.Error, "sdk: hostapi: decode input: "+tc.want) {
				t.Fatalf("Error = %q, want %q", out.Error, tc.want)
			}
		})
	}
	in := cat(field(200, "x"), field(hostapi.TagCheckID, "conf.transform"), field(hostapi.TagText, "ab"))
	if _, out := r.Send(t, uint32(len(in)), 0, in); out.Error != "" || out.TransformedText != "AB" {
		t.Fatalf("unknown tag: %+v", out)
	}
	p1, _ := r.Send(t, 10, 0, in)
	p2, _ := r.Send(t, 1000, 0, in)
	if p1 != p2 {
		t.Fatalf("gateway_alloc moved the buffer for a size that fits: %#x then %#x", p1, p2)
	}
	p3, out := r.Send(t, 1<<20, 1<<20-uint32(len(in)), in) // written at the end of the new buffer
	if out.Error != "" || out.TransformedText != "AB" {
		t.Fatalf("end of a 1 MiB buffer: %+v", out)
	}
	if out := r.CallAt(t, p3+1<<20-2, 3); !strings.Contains(out.Error, "not in the buffer gateway_alloc returned") {
		t.Fatalf("input past the buffer: %+v", out)
	}
	if out := r.CallAt(t, 8, 16); !strings.Contains(out.Error, "not in the buffer") {
		t.Fatalf("input outside the buffer: %+v", out)
	}
}
