// Package wasmtest builds example plugins with the stock Go toolchain (GOOS=wasip1 GOARCH=wasm
// -buildmode=c-shared) and runs them in wazero with the gateway_v1 host functions stubbed, speaking ABI v1
// through hostapi. It is test support for the examples and for tests elsewhere in the module that need a real
// guest (routes' MCP tool hooks build examples/toolguard with it), written independently of the gateway's engine
// (package plugins): it proves that what sdk-guest builds is a valid ABI v1 guest. It also builds the Rust and
// AssemblyScript SDKs' guests (Guest, BuildRust, BuildAssemblyScript: toolchains.go, rust.go, assemblyscript.go),
// checks their side of the ABI (guestabi.go) and holds the examples' benchmark workload (workload.go).
package wasmtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/gateway/hostapi"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// MemoryLimitPages is the memory limit of every instance: 64 MiB, the gateway's default per workspace.
const MemoryLimitPages = 1024

// CallTimeout bounds one call. The gateway's default is 100 ms; tests run under -race on small machines, so
// this is generous.
const CallTimeout = 10 * time.Second

type build struct {
	once sync.Once
	wasm []byte
	err  error
}

var builds sync.Map // absolute dir → *build

// Build builds the main package in dir as a wasm reactor with
// `GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared` into a t.TempDir() and returns the module. A build is
// made once per directory per test binary run. Build skips t when go is not on PATH.
func Build(t testing.TB, dir string) []byte {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("skipping: building a wasm guest needs the go command, which is not on PATH: %v", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := builds.LoadOrStore(abs, new(build))
	b := v.(*build)
	b.once.Do(func() {
		out := filepath.Join(t.TempDir(), "plugin.wasm")
		cmd := exec.Command(goBin, "build", "-buildmode=c-shared", "-o", out, ".")
		cmd.Dir = abs
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared in %s: %v\n%s", abs, err, msg)
			return
		}
		b.wasm, b.err = os.ReadFile(out)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.wasm
}

// Host is what the stubbed host functions answer for the calls made with it. Set it up before the first call;
// the log it collects is safe to read with Logs.
type Host struct {
	// Fields answers request_field: a path ("params.max_tokens") → its JSON text. Absent paths answer -1.
	Fields map[string]string
	// Now answers now_unix_ms; zero means the wall clock.
	Now time.Time
	// KV answers kv_get (ABI v1.1): a key of the workspace's plugin key-value store → its value. Absent keys
	// answer -1.
	KV map[string]string

	mu   sync.Mutex
	logs []LogEntry
}

// LogEntry is one message the guest logged.
type LogEntry struct {
	Level int32
	Msg   string
}

// Logs returns a copy of what the guest logged so far.
func (h *Host) Logs() []LogEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.logs)
}

type hostKey struct{}

func hostOf(ctx context.Context) *Host {
	if h, ok := ctx.Value(hostKey{}).(*Host); ok {
		return h
	}
	return &Host{}
}

// engine is one wazero runtime per test binary (the interpreter under the race detector, see raceEnabled), with WASI and the gateway_v1 stubs instantiated; the host
// functions find their Host in the call's context.
var engine struct {
	once     sync.Once
	rt       wazero.Runtime
	err      error
	mu       sync.Mutex
	compiled map[[sha256.Size]byte]wazero.CompiledModule
}

func runtime() (wazero.Runtime, error) {
	engine.once.Do(func() {
		ctx := context.Background()
		cfg := wazero.NewRuntimeConfig() // the compiler where wazero has one, as in the gateway
		if raceEnabled {
			cfg = wazero.NewRuntimeConfigInterpreter()
		}
		cfg = cfg.WithCloseOnContextDone(true).WithMemoryLimitPages(MemoryLimitPages)
		rt := wazero.NewRuntimeWithConfig(ctx, cfg)
		if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
			engine.err = err
			return
		}
		_, err := rt.NewHostModuleBuilder(hostapi.ModuleName).
			NewFunctionBuilder().WithFunc(hostLog).Export(hostapi.ImportLog).
			NewFunctionBuilder().WithFunc(hostNowUnixMs).Export(hostapi.ImportNowUnixMs).
			NewFunctionBuilder().WithFunc(hostRequestField).Export(hostapi.ImportRequestField).
			NewFunctionBuilder().WithFunc(hostKVGet).Export(hostapi.ImportKVGet).
			Instantiate(ctx)
		engine.rt, engine.err = rt, err
		engine.compiled = map[[sha256.Size]byte]wazero.CompiledModule{}
	})
	return engine.rt, engine.err
}

func read(m api.Module, ptr, n uint32) []byte {
	b, ok := m.Memory().Read(ptr, n)
	if !ok {
		panic(fmt.Sprintf("gateway_v1: guest memory [%d, +%d) out of range", ptr, n))
	}
	return b
}

func hostLog(ctx context.Context, m api.Module, level, ptr, n uint32) {
	h := hostOf(ctx)
	msg := string(read(m, ptr, n))
	h.mu.Lock()
	h.logs = append(h.logs, LogEntry{Level: int32(level), Msg: msg})
	h.mu.Unlock()
}

func hostNowUnixMs(ctx context.Context) int64 {
	if h := hostOf(ctx); !h.Now.IsZero() {
		return h.Now.UnixMilli()
	}
	return time.Now().UnixMilli()
}

func hostRequestField(ctx context.Context, m api.Module, pathPtr, pathLen, outPtr, outCap uint32) int32 {
	v, ok := hostOf(ctx).Fields[string(read(m, pathPtr, pathLen))]
	if !ok {
		return -1
	}
	if len(v) <= int(outCap) && !m.Memory().Write(outPtr, []byte(v)) {
		panic("gateway_v1: request_field: out buffer out of range")
	}
	return int32(len(v))
}

func hostKVGet(ctx context.Context, m api.Module, keyPtr, keyLen, outPtr, outCap uint32) int32 {
	v, ok := hostOf(ctx).KV[string(read(m, keyPtr, keyLen))]
	if !ok {
		return -1
	}
	if len(v) <= int(outCap) && !m.Memory().Write(outPtr, []byte(v)) {
		panic("gateway_v1: kv_get: out buffer out of range")
	}
	return int32(len(v))
}

// Validate checks what the gateway checks at upload: the three ABI v1 exports with their signatures, and no
// import but gateway_v1's functions and wasi_snapshot_preview1.
func Validate(cm wazero.CompiledModule) error {
	var errs []error
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	want := map[string][2][]api.ValueType{
		hostapi.ExportMarker: {nil, nil},
		hostapi.ExportAlloc:  {{i32}, {i32}},
		hostapi.ExportCall:   {{i32, i32, i32}, {i64}},
	}
	exports := cm.ExportedFunctions()
	for name, sig := range want {
		f, ok := exports[name]
		if !ok {
			errs = append(errs, fmt.Errorf("missing export %s", name))
			continue
		}
		if !slices.Equal(f.ParamTypes(), sig[0]) || !slices.Equal(f.ResultTypes(), sig[1]) {
			errs = append(errs, fmt.Errorf("export %s has signature %v -> %v, want %v -> %v", name, f.ParamTypes(), f.ResultTypes(), sig[0], sig[1]))
		}
	}
	if _, ok := exports["_initialize"]; !ok {
		errs = append(errs, errors.New("missing export _initialize: build with -buildmode=c-shared"))
	}
	hostSigs := map[string][2][]api.ValueType{
		hostapi.ImportLog:          {{i32, i32, i32}, nil},
		hostapi.ImportNowUnixMs:    {nil, {i64}},
		hostapi.ImportRequestField: {{i32, i32, i32, i32}, {i32}},
		hostapi.ImportKVGet:        {{i32, i32, i32, i32}, {i32}},
	}
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch mod {
		case wasi_snapshot_preview1.ModuleName:
		case hostapi.ModuleName:
			sig, ok := hostSigs[name]
			if !ok {
				errs = append(errs, fmt.Errorf("imports unknown host function %s.%s", mod, name))
			} else if !slices.Equal(f.ParamTypes(), sig[0]) || !slices.Equal(f.ResultTypes(), sig[1]) {
				errs = append(errs, fmt.Errorf("imports %s.%s as %v -> %v, want %v -> %v", mod, name, f.ParamTypes(), f.ResultTypes(), sig[0], sig[1]))
			}
		default:
			errs = append(errs, fmt.Errorf("imports %s.%s: only %s and %s are allowed", mod, name, hostapi.ModuleName, wasi_snapshot_preview1.ModuleName))
		}
	}
	for _, m := range cm.ImportedMemories() {
		mod, name, _ := m.Import()
		errs = append(errs, fmt.Errorf("imports memory %s.%s", mod, name))
	}
	return errors.Join(errs...)
}

// Plugin is one instance of a guest. It runs one call at a time and is not safe for concurrent use.
type Plugin struct {
	mod         api.Module
	alloc, call api.Function
	stderr      bytes.Buffer
}

// Instantiate compiles wasm (once per wasm per test binary), validates it with Validate, instantiates it and
// calls _initialize. The instance is closed when t ends.
func Instantiate(t testing.TB, wasm []byte) *Plugin {
	t.Helper()
	rt, err := runtime()
	if err != nil {
		t.Fatalf("wazero: %v", err)
	}
	ctx := context.Background()
	key := sha256.Sum256(wasm)
	engine.mu.Lock()
	cm, ok := engine.compiled[key]
	if !ok {
		if cm, err = rt.CompileModule(ctx, wasm); err == nil {
			engine.compiled[key] = cm
		}
	}
	engine.mu.Unlock()
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	if err := Validate(cm); err != nil {
		t.Fatalf("not an ABI v1 guest: %v", err)
	}
	p := &Plugin{}
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize").WithStderr(&p.stderr)
	if p.mod, err = rt.InstantiateModule(ctx, cm, cfg); err != nil {
		t.Fatalf("instantiate: %v\nstderr: %s", err, p.stderr.String())
	}
	t.Cleanup(func() { p.mod.Close(ctx) })
	p.alloc, p.call = p.mod.ExportedFunction(hostapi.ExportAlloc), p.mod.ExportedFunction(hostapi.ExportCall)
	return p
}

// Stderr returns what the guest wrote to standard error (the gateway discards it; tests show it).
func (p *Plugin) Stderr() string { return p.stderr.String() }

// Call runs one call of kind with in, as the gateway does: gateway_alloc, write the encoded input, gateway_call,
// decode the Output. host answers the host functions (nil for none). An error is a trap, a timeout or a
// malformed output: the gateway would discard the instance.
func (p *Plugin) Call(kind hostapi.Kind, in *hostapi.Input, host *Host) (hostapi.Output, error) {
	if host == nil {
		host = &Host{}
	}
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), hostKey{}, host), CallTimeout)
	defer cancel()
	enc := hostapi.AppendInput(nil, in)
	res, err := p.alloc.Call(ctx, uint64(len(enc)))
	if err != nil {
		return hostapi.Output{}, fmt.Errorf("%s: %w", hostapi.ExportAlloc, err)
	}
	ptr := uint32(res[0])
	if !p.mod.Memory().Write(ptr, enc) {
		return hostapi.Output{}, fmt.Errorf("%s returned %d: %d bytes there are out of memory", hostapi.ExportAlloc, ptr, len(enc))
	}
	if res, err = p.call.Call(ctx, uint64(kind), uint64(ptr), uint64(len(enc))); err != nil {
		return hostapi.Output{}, fmt.Errorf("%s: %w\nstderr: %s", hostapi.ExportCall, err, p.stderr.String())
	}
	var out hostapi.Output
	if res[0] == 0 {
		return hostapi.NewOutput(), nil
	}
	b, ok := p.mod.Memory().Read(uint32(res[0]>>32), uint32(res[0]))
	if !ok {
		return out, fmt.Errorf("%s returned %#x: out of memory", hostapi.ExportCall, res[0])
	}
	if err := hostapi.DecodeOutput(b, &out); err != nil {
		return out, err
	}
	return out, nil
}

// MustCall is Call that fails t on error.
func (p *Plugin) MustCall(t testing.TB, kind hostapi.Kind, in *hostapi.Input, host *Host) hostapi.Output {
	t.Helper()
	out, err := p.Call(kind, in, host)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// GuestDeps is what a plugin built with the SDK may depend on outside the standard library.
var GuestDeps = []string{"github.com/llmgw/gateway/sdk-guest", "github.com/llmgw/gateway/sdk-guest/internal/hostapi"}

// Deps returns the non-standard packages the main package in dir depends on when built for wasm, except
// itself, sorted. It skips t when go is not on PATH.
func Deps(t testing.TB, dir string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("skipping: go is not on PATH: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps in %s: %v", dir, err)
	}
	deps := strings.Fields(string(out))
	if len(deps) > 0 {
		deps = deps[:len(deps)-1] // the package itself comes last
	}
	slices.Sort(deps)
	return deps
}
