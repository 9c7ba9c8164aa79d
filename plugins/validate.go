package plugins

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/internal/wasmfuel"
	"github.com/llmgw/gateway/runtime/gwerr"
)

// signature is a wasm function type.
type signature struct {
	params, results []api.ValueType
}

func (s signature) String() string {
	return sigString(s.params, s.results)
}

func sigString(params, results []api.ValueType) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, t := range params {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(api.ValueTypeName(t))
	}
	b.WriteString(") -> ")
	switch len(results) {
	case 0:
		b.WriteString("()")
	case 1:
		b.WriteString(api.ValueTypeName(results[0]))
	default:
		b.WriteByte('(')
		for i, t := range results {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(api.ValueTypeName(t))
		}
		b.WriteByte(')')
	}
	return b.String()
}

func sameTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (s signature) matches(f api.FunctionDefinition) bool {
	return sameTypes(s.params, f.ParamTypes()) && sameTypes(s.results, f.ResultTypes())
}

const i32, i64 = api.ValueTypeI32, api.ValueTypeI64

// abiExports are the exports ABI v1 requires, in the order problems are reported.
var abiExports = []struct {
	name string
	sig  signature
}{
	{hostapi.ExportMarker, signature{}},
	{hostapi.ExportAlloc, signature{[]api.ValueType{i32}, []api.ValueType{i32}}},
	{hostapi.ExportCall, signature{[]api.ValueType{i32, i32, i32}, []api.ValueType{i64}}},
}

// versionSig is the signature of the optional hostapi.ExportVersion (ABI v1.1).
var versionSig = signature{nil, []api.ValueType{i32}}

// Validate compiles wasm and checks it against ABI v1: the three exports with their signatures (and
// gateway_abi_version's, when exported), a memory,
// and imports only of the host functions of gateway_v1 and wasi_snapshot_preview1, with the host's
// signatures, and a reactor (a WASI command, which exports _start and no _initialize, is refused). A module
// that fails is a *gwerr.Error 400 whose message names every problem, e.g.
//
//	plugin module does not follow ABI v1: missing export "gateway_call" (i32, i32, i32) -> i64; imports "env"."fetch", which the host does not offer
//
// Results are kept by SHA-256, and the compiled code of the last few valid modules stays in the cache, so
// that the Load that follows an upload does not compile again. Validate does not instantiate the module, so
// what needs an instance is checked at Load: the ABI version the guest speaks, and for v1.1 its memory export.
func (e *Engine) Validate(ctx context.Context, wasm []byte) error {
	sum := sha256.Sum256(wasm)
	e.vmu.Lock()
	defer e.vmu.Unlock()
	if e.checked == nil {
		return ErrClosed
	}
	if c := e.checked[sum]; c != nil {
		return c.err
	}
	if e.vrt == nil {
		rt := wazero.NewRuntimeWithConfig(ctx, e.rtConfig)
		if err := e.instantiateHost(ctx, rt); err != nil {
			_ = rt.Close(ctx)
			return fmt.Errorf("plugins: validation runtime: %w", err)
		}
		e.vrt = rt
	}
	res := &checked{}
	before, start := e.cacheFiles(), time.Now()
	compiled, err := e.compile(ctx, e.vrt, wasm)
	res.compile, res.cache = time.Since(start), cacheUse(before, e.cacheFiles())
	switch {
	case err != nil:
		res.err = err
	default:
		if err := e.checkABI(e.vrt, compiled); err != nil {
			res.err = err
			_ = compiled.Close(ctx)
		} else {
			res.compiled = compiled
		}
	}
	if len(e.order) == maxChecked {
		old := e.checked[e.order[0]]
		if old.compiled != nil {
			_ = old.compiled.Close(ctx)
		}
		delete(e.checked, e.order[0])
		e.order = append(e.order[:0], e.order[1:]...)
	}
	e.checked[sum] = res
	e.order = append(e.order, sum)
	return res.err
}

// compile instruments wasm with the guard's fuel counter (guard.go) and compiles the result in rt. The shared
// cache makes a module compiled before (in any runtime of this engine, or in CacheDir by an earlier process)
// cost only its decoding and instrumentation; instrumenting is deterministic, so the cache still hits.
//
// A module that imports from the guard's module is a 400 naming the import. A module the instrumentation
// cannot read is compiled as it is, so that the 400 carries wazero's reason when wazero refuses it too, and the
// instrumentation's (function and byte offset) when wazero would take it.
func (e *Engine) compile(ctx context.Context, rt wazero.Runtime, wasm []byte) (cm wazero.CompiledModule, err error) {
	defer func() {
		if r := recover(); r != nil { // wazero should never panic on bad input; if it does, it is the input's fault
			cm, err = nil, invalidModule(fmt.Errorf("compiler panic: %v", r))
		}
	}()
	code, ierr := e.instrument(wasm)
	var fe *wasmfuel.Error
	switch {
	case errors.As(ierr, &fe) && errors.Is(ierr, wasmfuel.ErrReservedImport):
		return nil, &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidRequest, Param: "body",
			Message: "plugin module does not follow ABI v1: " + fe.Msg}
	case errors.Is(ierr, wasmfuel.ErrLimit): // not compiled for wazero's reason: wazero dies of such modules
		return nil, &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidRequest, Param: "body",
			Message: fmt.Sprintf("plugin module is past a bound of the gateway: %v", ierr)}
	case ierr != nil:
		orig, err := rt.CompileModule(ctx, wasm)
		if err != nil {
			return nil, invalidModule(err)
		}
		_ = orig.Close(ctx)
		return nil, &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidRequest, Param: "body",
			Message: fmt.Sprintf("the gateway cannot add its runaway guard to this module: %v", ierr)}
	}
	cm, err = rt.CompileModule(ctx, code)
	if err != nil {
		return nil, invalidModule(err)
	}
	return cm, nil
}

// invalidModule is the 400 of a module wazero cannot compile. The cause is in the message only: as Err too, it
// would be printed twice by Error ("invalid magic number: invalid magic number").
func invalidModule(err error) *gwerr.Error {
	return &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidRequest, Param: "body",
		Message: fmt.Sprintf("not a valid WebAssembly module: %v", err)}
}

// offeredImports returns the host functions a guest may import, by module and name. They are read from the
// host modules instantiated in rt, so the check cannot drift from what instantiation accepts.
func (e *Engine) offeredImports(rt wazero.Runtime) map[string]map[string]api.FunctionDefinition {
	e.omu.Lock()
	defer e.omu.Unlock()
	if e.offered == nil {
		offered := make(map[string]map[string]api.FunctionDefinition)
		for _, name := range []string{wasi_snapshot_preview1.ModuleName, hostapi.ModuleName} {
			if m := rt.Module(name); m != nil {
				offered[name] = m.ExportedFunctionDefinitions()
			}
		}
		if len(offered) < 2 {
			return offered // not cached: rt lacks a host module (it is closing)
		}
		e.offered = offered
	}
	return e.offered
}

// checkABI returns a *gwerr.Error 400 naming every way compiled breaks ABI v1, or nil.
func (e *Engine) checkABI(rt wazero.Runtime, compiled wazero.CompiledModule) error {
	var problems []string
	exports := compiled.ExportedFunctions()
	if _, command := exports["_start"]; command {
		if _, reactor := exports["_initialize"]; !reactor {
			// The host runs only _initialize: a command's runtime would never start, and every call would trap
			// (a Go guest's in gateway_alloc: "wasmexport function called before runtime initialization").
			problems = append(problems, `it is a WASI command (it exports "_start" and no "_initialize"), which the host never starts: `+
				"build a reactor, for a Go guest with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared")
		}
	}
	for _, want := range abiExports {
		f, ok := exports[want.name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("missing export %q %s", want.name, want.sig))
		case !want.sig.matches(f):
			problems = append(problems, fmt.Sprintf("export %q is %s, want %s", want.name,
				sigString(f.ParamTypes(), f.ResultTypes()), want.sig))
		}
	}
	if f, ok := exports[hostapi.ExportVersion]; ok && !versionSig.matches(f) {
		problems = append(problems, fmt.Sprintf("export %q is %s, want %s", hostapi.ExportVersion,
			sigString(f.ParamTypes(), f.ResultTypes()), versionSig))
	}
	if len(compiled.ExportedMemories()) == 0 {
		problems = append(problems, "exports no memory (the host writes the input into the module's memory)")
	}
	offered := e.offeredImports(rt)
	seen := make(map[[2]string]bool)
	for _, f := range compiled.ImportedFunctions() {
		mod, name, _ := f.Import()
		if seen[[2]string{mod, name}] || mod == wasmfuel.GuardModule && !e.opts.unguarded { // the guard's own import
			continue
		}
		seen[[2]string{mod, name}] = true
		host, ok := offered[mod][name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("imports %q.%q, which the host does not offer", mod, name))
		case !sameTypes(host.ParamTypes(), f.ParamTypes()) || !sameTypes(host.ResultTypes(), f.ResultTypes()):
			problems = append(problems, fmt.Sprintf("imports %q.%q as %s, but the host offers %s", mod, name,
				sigString(f.ParamTypes(), f.ResultTypes()), sigString(host.ParamTypes(), host.ResultTypes())))
		}
	}
	for _, m := range compiled.ImportedMemories() {
		mod, name, _ := m.Import()
		problems = append(problems, fmt.Sprintf("imports memory %q.%q, which the host does not offer", mod, name))
	}
	if len(problems) == 0 {
		return nil
	}
	return &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidRequest, Param: "body",
		Message: "plugin module does not follow ABI v1: " + strings.Join(problems, "; ")}
}
