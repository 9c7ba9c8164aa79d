package plugins

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/llmgw/gateway/internal/wasmfuel"
)

// The test guests are Go programs under testdata/guests, built once per test run with the stock toolchain
// (GOOS=wasip1 GOARCH=wasm -buildmode=c-shared; basic-command without it) and compiled once into a compilation
// cache that every engine of the run shares (in memory, backed by a file cache in a temp dir). Compiling a Go
// guest is the slowest step (about 1.5 s, 15 s under -race), so the guests are built and compiled
// concurrently, once, and kept compiled until the run ends.

// Guests of the run: name → build.
var guestSpecs = map[string]struct {
	dir     string
	ldflags string
	tags    string
	command bool // built without -buildmode=c-shared: a WASI command, as a plugin author may do by mistake
}{
	"basic":         {dir: "basic"},
	"basic-v11":     {dir: "basic", tags: "abi11"},
	"basic-v2":      {dir: "basic", ldflags: "-X main.version=v2"},
	"badabi":        {dir: "badabi"},
	"basic-command": {dir: "basic", command: true},
}

var (
	testDir   string                  // temp dir of the run
	testCache wazero.CompilationCache // shared by every test engine

	guestsOnce sync.Once
	guestWasm  map[string][]byte
	guestErr   error
	keeper     wazero.Runtime // holds the guests' compiled code in testCache for the whole run
)

func TestMain(m *testing.M) {
	var err error
	testDir, err = os.MkdirTemp("", "plugins-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testCache, err = wazero.NewCompilationCacheWithDir(filepath.Join(testDir, "wasm-cache"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	ctx := context.Background()
	if keeper != nil {
		_ = keeper.Close(ctx)
	}
	_ = testCache.Close(ctx)
	_ = os.RemoveAll(testDir)
	os.Exit(code)
}

// guest returns the named test guest's module bytes, building and compiling every guest on first use. It
// skips the test when the go command is not on PATH.
func guest(tb testing.TB, name string) []byte {
	tb.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		tb.Skip("plugins: the go command is not on PATH, so the test guests cannot be built")
	}
	guestsOnce.Do(func() { guestWasm, guestErr = buildGuests(goCmd) })
	if guestErr != nil {
		tb.Fatal(guestErr)
	}
	b, ok := guestWasm[name]
	if !ok {
		tb.Fatalf("no test guest %q", name)
	}
	return b
}

func buildGuests(goCmd string) (map[string][]byte, error) {
	start := time.Now()
	out := make(map[string][]byte, len(guestSpecs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, len(guestSpecs))
	for name, spec := range guestSpecs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dst := filepath.Join(testDir, name+".wasm")
			args := []string{"build", "-o", dst}
			if !spec.command {
				args = append(args, "-buildmode=c-shared")
			}
			if spec.ldflags != "" {
				args = append(args, "-ldflags="+spec.ldflags)
			}
			if spec.tags != "" {
				args = append(args, "-tags="+spec.tags)
			}
			cmd := exec.Command(goCmd, append(args, "./testdata/guests/"+spec.dir)...)
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS=") // no -race or -cover from the environment
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				errs <- fmt.Errorf("build guest %s: %v\n%s", name, err, stderr.Bytes())
				return
			}
			b, err := os.ReadFile(dst)
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			out[name] = b
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	built := time.Since(start)

	// Compile them concurrently into the shared cache and keep them compiled.
	ctx := context.Background()
	keeper = wazero.NewRuntimeWithConfig(ctx, runtimeConfig(testCache))
	errs = make(chan error, len(out))
	for name, b := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, err := wasmfuel.Instrument(b)
			if err == nil {
				_, err = keeper.CompileModule(ctx, code)
			}
			if err != nil {
				errs <- fmt.Errorf("compile guest %s: %v", name, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "plugins: test guests built in %v, compiled in %v\n", built.Round(time.Millisecond), (time.Since(start) - built).Round(time.Millisecond))
	return out, nil
}

// testOptions are the options of a test engine: the shared cache and a logger into the test's log.
// Benchmarks log only warnings and errors.
func testOptions(tb testing.TB) Options {
	level := slog.LevelDebug
	if _, ok := tb.(*testing.B); ok {
		level = slog.LevelWarn
	}
	return Options{cache: testCache, Logger: slog.New(slog.NewTextHandler(testWriter{tb}, &slog.HandlerOptions{Level: level}))}
}

// newEngine returns an engine closed when the test ends.
func newEngine(tb testing.TB, opts Options) *Engine {
	tb.Helper()
	e, err := New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := e.Close(context.Background()); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return e
}

type testWriter struct{ tb testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.tb.Helper()
	w.tb.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

var _ io.Writer = testWriter{}

// Hand-made modules, for ABI checks that need no Go guest: a tiny wasm encoder.

type wasmFunc struct {
	params, results []byte // value types: 0x7f i32, 0x7e i64
	body            []byte // instructions before the final end; nil returns zeros
}

type wasmModule struct {
	imports []struct {
		module, name string
		fn           wasmFunc
	}
	funcs    map[string]wasmFunc // exported functions
	memory   bool                // define and export "memory" (1 page)
	memName  string              // the memory's export name when not "memory"
	maxPages uint32              // the memory's declared maximum, in pages; 0: none
	initial  string              // an export named "_initialize" with this body: "trap" or "loop"
	command  bool                // export an empty "_start", as a WASI command does
}

func leb(n uint32) []byte {
	var b []byte
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func wasmName(s string) []byte { return append(leb(uint32(len(s))), s...) }

func section(id byte, items ...[]byte) []byte {
	body := leb(uint32(len(items)))
	for _, it := range items {
		body = append(body, it...)
	}
	return append(append([]byte{id}, leb(uint32(len(body)))...), body...)
}

func (m wasmModule) bytes() []byte {
	var types, imports, funcs, exports, codes [][]byte
	typeOf := func(f wasmFunc) uint32 {
		t := append(append(append([]byte{0x60}, leb(uint32(len(f.params)))...), f.params...), leb(uint32(len(f.results)))...)
		t = append(t, f.results...)
		for i, have := range types {
			if bytes.Equal(have, t) {
				return uint32(i)
			}
		}
		types = append(types, t)
		return uint32(len(types) - 1)
	}
	for _, imp := range m.imports {
		imports = append(imports, append(append(append(wasmName(imp.module), wasmName(imp.name)...), 0x00), leb(typeOf(imp.fn))...))
	}
	names := make([]string, 0, len(m.funcs))
	for name := range m.funcs {
		names = append(names, name)
	}
	fns := make([]wasmFunc, 0, len(names)+1)
	for _, name := range names {
		fns = append(fns, m.funcs[name])
	}
	switch m.initial {
	case "trap":
		names = append(names, "_initialize")
		fns = append(fns, wasmFunc{body: []byte{0x00}}) // unreachable
	case "loop":
		names = append(names, "_initialize")
		fns = append(fns, wasmFunc{body: []byte{0x03, 0x40, 0x0c, 0x00, 0x0b}}) // loop br 0 end
	}
	if m.command {
		names = append(names, "_start")
		fns = append(fns, wasmFunc{})
	}
	for i, f := range fns {
		funcs = append(funcs, leb(typeOf(f)))
		body := f.body
		if body == nil {
			for _, r := range f.results {
				if r == 0x7e {
					body = append(body, 0x42, 0x00) // i64.const 0
				} else {
					body = append(body, 0x41, 0x00) // i32.const 0
				}
			}
		}
		code := append(append([]byte{0x00}, body...), 0x0b) // no locals, body, end
		codes = append(codes, append(leb(uint32(len(code))), code...))
		exports = append(exports, append(append(wasmName(names[i]), 0x00), leb(uint32(len(m.imports)+i))...))
	}
	if m.memory {
		name := "memory"
		if m.memName != "" {
			name = m.memName
		}
		exports = append(exports, append(wasmName(name), 0x02, 0x00))
	}
	out := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	out = append(out, section(1, types...)...)
	if len(imports) > 0 {
		out = append(out, section(2, imports...)...)
	}
	out = append(out, section(3, funcs...)...)
	if m.memory && m.maxPages > 0 {
		out = append(out, section(5, append([]byte{0x01, 0x01}, leb(m.maxPages)...))...) // min 1 page, a max
	} else if m.memory {
		out = append(out, section(5, []byte{0x00, 0x01})...) // min 1 page, no max
	}
	out = append(out, section(7, exports...)...)
	out = append(out, section(10, codes...)...)
	return out
}

var (
	fnMarker = wasmFunc{}
	fnAlloc  = wasmFunc{params: []byte{0x7f}, results: []byte{0x7f}}
	fnCall   = wasmFunc{params: []byte{0x7f, 0x7f, 0x7f}, results: []byte{0x7e}}
)

// abiModule is a minimal module that follows ABI v1: gateway_call returns 0 (pass, no data).
func abiModule() wasmModule {
	return wasmModule{funcs: map[string]wasmFunc{"gateway_abi_v1": fnMarker, "gateway_alloc": fnAlloc, "gateway_call": fnCall}, memory: true}
}

// fnVersion is a gateway_abi_version returning v.
func fnVersion(v int32) wasmFunc {
	return wasmFunc{results: []byte{0x7f}, body: append([]byte{0x41}, sleb(v)...)} // i32.const v
}
