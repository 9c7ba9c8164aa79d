package sdkas_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/internal/conformance"
	"github.com/llmgw/gateway/plugins"
)

// TestConformance runs the golden table against the AssemblyScript conformance guest.
func TestConformance(t *testing.T) {
	conformance.Run(t, module(t, "conformance"))
}

// records keeps the log records of an engine, for the router's debug lines.
type records struct {
	mu   sync.Mutex
	msgs []string
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	if rec.Level == slog.LevelDebug {
		r.mu.Lock()
		r.msgs = append(r.msgs, rec.Message)
		r.mu.Unlock()
	}
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

func (r *records) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.msgs
	r.msgs = nil
	return m
}

// engine loads guest's module as plugin id guest in workspace "ws".
func engine(tb testing.TB, guest string, logs *records) *plugins.Engine {
	tb.Helper()
	wasm := module(tb, guest)
	opts := plugins.Options{MaxInstances: 1, CallTimeout: 30 * time.Second}
	if logs != nil {
		opts.Logger = slog.New(logs)
	} else {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	e, err := plugins.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = e.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := e.Load(ctx, "ws", guest, wasm); err != nil {
		tb.Fatalf("load %s: %v", guest, err)
	}
	return e
}

func call(tb testing.TB, e *plugins.Engine, guest string, kind hostapi.Kind, in *hostapi.Input, view plugins.RequestView) *hostapi.Output {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := e.Call(ctx, "ws", guest, kind, in, view)
	if err != nil {
		tb.Fatalf("call %s: %v", guest, err)
	}
	return out
}

type fields map[string]string

func (f fields) Field(path string) ([]byte, bool) {
	v, ok := f[path]
	return []byte(v), ok
}

// TestModules checks the ABI v1.1 shape of every module (version export, memory, no WASI _start, no import
// but the host's: no env.abort, env.trace or env.seed) and logs the sizes.
func TestModules(t *testing.T) {
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	for _, guest := range guestNames {
		wasm := module(t, guest)
		cm, err := rt.CompileModule(ctx, wasm)
		if err != nil {
			t.Fatalf("%s: %v", guest, err)
		}
		exports := cm.ExportedFunctions()
		for _, name := range []string{hostapi.ExportMarker, hostapi.ExportAlloc, hostapi.ExportCall, "gateway_abi_version"} {
			if _, ok := exports[name]; !ok {
				t.Errorf("%s: no export %s", guest, name)
			}
		}
		if _, ok := exports["_start"]; ok {
			t.Errorf("%s exports _start", guest)
		}
		if _, ok := cm.ExportedMemories()["memory"]; !ok {
			t.Errorf("%s: no memory export", guest)
		}
		for _, imp := range cm.ImportedFunctions() {
			mod, name, _ := imp.Import()
			if mod != hostapi.ModuleName && mod != wasi_snapshot_preview1.ModuleName {
				t.Errorf("%s imports %s.%s", guest, mod, name)
			}
		}
		t.Logf("%s.wasm: %d bytes", guest, len(wasm))
	}
}

// raw instantiates guest directly in wazero, to hand gateway_call bytes the host would never send.
type raw struct {
	mod         api.Module
	alloc, call api.Function
}

func instantiate(t *testing.T, guest string) *raw {
	return instantiateModule(t, module(t, guest))
}

func instantiateModule(t *testing.T, wasm []byte) *raw {
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	t.Cleanup(func() { rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	_, err := rt.NewHostModuleBuilder(hostapi.ModuleName).
		NewFunctionBuilder().WithFunc(func(context.Context, int32, uint32, uint32) {}).Export(hostapi.ImportLog).
		NewFunctionBuilder().WithFunc(func(context.Context) int64 { return 0 }).Export(hostapi.ImportNowUnixMs).
		NewFunctionBuilder().WithFunc(func(context.Context, uint32, uint32, uint32, uint32) int32 { return -1 }).Export(hostapi.ImportRequestField).
		Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithStartFunctions("_initialize"))
	if err != nil {
		t.Fatal(err)
	}
	return &raw{mod: mod, alloc: mod.ExportedFunction(hostapi.ExportAlloc), call: mod.ExportedFunction(hostapi.ExportCall)}
}

// send allocs size bytes, writes b at the start and calls gateway_call on (ptr+at, len(b)).
func (r *raw) send(t *testing.T, size uint32, at uint32, b []byte) (ptr uint32, out hostapi.Output) {
	t.Helper()
	ctx := context.Background()
	res, err := r.alloc.Call(ctx, uint64(size))
	if err != nil {
		t.Fatal(err)
	}
	ptr = uint32(res[0])
	r.mod.Memory().Write(ptr+at, b)
	return ptr, r.callAt(t, ptr+at, uint32(len(b)))
}

func (r *raw) callAt(t *testing.T, ptr, n uint32) hostapi.Output {
	t.Helper()
	res, err := r.call.Call(context.Background(), uint64(hostapi.KindCheck), uint64(ptr), uint64(n))
	if err != nil {
		t.Fatal(err)
	}
	b, ok := r.mod.Memory().Read(uint32(res[0]>>32), uint32(res[0]))
	if !ok {
		t.Fatalf("output %#x outside memory", res[0])
	}
	var out hostapi.Output
	if err := hostapi.DecodeOutput(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGuestABI proves the guest side of the ABI in wasm: strict decoding errors come back as check errors
// naming hostapi's reason, gateway_abi_version is 1.1, and the v1.1 buffer rule holds (the buffer stays put
// for inputs that fit, and an input outside it is refused).
func TestGuestABI(t *testing.T) {
	r := instantiate(t, "conformance")
	ctx := context.Background()
	if res, err := r.mod.ExportedFunction("gateway_abi_version").Call(ctx); err != nil || int32(res[0]) != 0x00010001 {
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
			_, out := r.send(t, uint32(len(tc.in)), 0, []byte(tc.in))
			if !strings.Contains(out.Error, "sdk: hostapi: decode input: "+tc.want) {
				t.Fatalf("Error = %q, want %q", out.Error, tc.want)
			}
		})
	}
	// An unknown tag is skipped.
	in := cat(field(200, "x"), field(hostapi.TagCheckID, "conf.transform"), field(hostapi.TagText, "ab"))
	if _, out := r.send(t, uint32(len(in)), 0, in); out.Error != "" || out.TransformedText != "AB" {
		t.Fatalf("unknown tag: %+v", out)
	}
	// v1.1: small inputs share one buffer; a larger one moves it, and the old place is refused.
	p1, _ := r.send(t, 10, 0, in)
	p2, _ := r.send(t, 1000, 0, in)
	if p1 != p2 {
		t.Fatalf("gateway_alloc moved the buffer for a size that fits: %#x then %#x", p1, p2)
	}
	p3, out := r.send(t, 1<<20, 1<<20-uint32(len(in)), in) // written at the end of the new buffer
	if out.Error != "" || out.TransformedText != "AB" {
		t.Fatalf("end of a 1 MiB buffer: %+v", out)
	}
	if out := r.callAt(t, p3+1<<20-2, 3); !strings.Contains(out.Error, "not in the buffer gateway_alloc returned") {
		t.Fatalf("input past the buffer: %+v", out)
	}
	if out := r.callAt(t, 8, 16); !strings.Contains(out.Error, "not in the buffer") {
		t.Fatalf("input outside the buffer: %+v", out)
	}
}

// echoPages sends the conformance guest n echo calls of a 64 KiB text and returns its memory's size in pages.
func echoPages(t *testing.T, r *raw, n int) uint32 {
	t.Helper()
	in := hostapi.AppendInput(nil, &hostapi.Input{Text: strings.Repeat("héllo wörld ", 64<<10/14), CheckID: "conf.echo",
		Metadata: []hostapi.KV{{Key: "k", Value: "v"}}, Params: []hostapi.KV{{Key: "p", Value: `[1,"a"]`}}})
	for range n {
		if _, out := r.send(t, uint32(len(in)), 0, in); out.Error != "" || !out.Verdict {
			t.Fatalf("echo: %+v", out)
		}
	}
	return r.mod.Memory().Size() / 65536
}

// TestMemoryBounded proves the runtime choice: with --runtime minimal and a collection at the end of every
// gateway_call, an instance's memory stops growing after the first calls however many calls it serves (every
// call allocates several times its 64 KiB input). The stub runtime, which never frees, is measured alongside:
// its memory grows with every call until the host's limit, which is why the SDK does not use it.
func TestMemoryBounded(t *testing.T) {
	r := instantiate(t, "conformance")
	warm := echoPages(t, r, 20)
	after := echoPages(t, r, 300)
	t.Logf("minimal runtime: %d pages after 20 calls of 64 KiB, %d after 320", warm, after)
	if after > warm {
		t.Errorf("memory grew from %d to %d pages: the guest leaks", warm, after)
	}
	if testing.Short() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	stub := filepath.Join(outDir, "conformance-stub.wasm")
	if err := asc(ctx, guests["conformance"], stub, "--runtime", "stub"); err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(stub)
	if err != nil {
		t.Fatal(err)
	}
	rs := instantiateModule(t, wasm)
	t.Logf("stub runtime (%d bytes): %d pages after 20 calls, %d after 60", len(wasm), echoPages(t, rs, 20), echoPages(t, rs, 40))
}
