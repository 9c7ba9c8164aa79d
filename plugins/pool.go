package plugins

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime/gwerr"
)

// version is one loaded module of a plugin with its pool of instances. A plugin's current version is swapped
// by Load; the old one is retired: it takes no new callers, and once its last caller leaves (refs drops to
// zero) its instances and compiled module are closed.
//
// The pool: tokens holds one token per live instance (idle or busy), so at most MaxInstances exist; idle
// holds the instances free to take. Both channels have MaxInstances room, so putting back never blocks.
type version struct {
	e        *Engine
	ws       *workspace
	id       string
	sha      [32]byte
	compiled wazero.CompiledModule
	log      *slog.Logger
	mem      int64       // bytes charged to the workspace per instance: the most its memory can grow to
	minor    int         // the ABI minor version the guest speaks (major 1), read by prove before the version serves
	logs     *logLimiter // the plugin's

	idle   chan *instance
	tokens chan struct{}

	refs       atomic.Int64 // callers between acquire and release
	retired    atomic.Bool
	retiredCh  chan struct{} // closed when retired, to wake callers waiting for an instance
	retireOnce sync.Once
	finalOnce  sync.Once
}

// closeCtx is the context of wazero's Close methods, which use it for nothing that can be cancelled. Closing
// happens off the request (retired versions, the janitor, Remove, which takes no context), so it is not a
// request's context.
var closeCtx = context.Background()

// errRetired tells a caller waiting on a retired version to start again on the current one.
var errRetired = errors.New("plugins: version retired")

func newVersion(e *Engine, ws *workspace, id string, sum [32]byte, compiled wazero.CompiledModule) *version {
	n := e.opts.MaxInstances
	return &version{
		e:         e,
		ws:        ws,
		id:        id,
		sha:       sum,
		compiled:  compiled,
		log:       e.log.With("workspace", ws.id, "plugin", id),
		mem:       instanceMemory(compiled, e.opts.MemoryLimitMiB),
		logs:      newLogLimiter(e.opts.LogLinesPerSecond),
		idle:      make(chan *instance, n),
		tokens:    make(chan struct{}, n),
		retiredCh: make(chan struct{}),
	}
}

// instanceMemory is the most an instance's linear memory can grow to: the module's declared maximum, capped by
// the runtime's limit. Go guests declare none, so they get the limit.
func instanceMemory(compiled wazero.CompiledModule, limitMiB uint32) int64 {
	pages := limitMiB * 16 // 64 KiB pages
	for _, m := range compiled.ExportedMemories() {
		if max, ok := m.Max(); ok && max < pages {
			pages = max
		}
	}
	return int64(pages) << 16
}

// instance is one instantiated guest. It serves one call at a time; its fields other than v are touched only
// by the caller holding it.
type instance struct {
	v     *version
	mod   api.Module
	alloc api.Function
	call  api.Function
	// transform is the guest's gateway_transform when it exports one with the ABI's signature, else nil.
	transform api.Function
	mem       api.Memory
	stack     []uint64 // params and results of CallWithStack
	buf       []byte   // the encoded input, reused
	stderr    *stderrBuf
	cc        callCtx // the context of the instance's current call (instance.newCall)

	// The last buffer gateway_alloc returned and the size asked, for a v1.1 guest, which keeps it valid until
	// its next gateway_alloc: inputs that fit go there without a guest call. inSize 0: none yet.
	inPtr, inSize uint32
}

// stderrBuf keeps the start of what the guest writes to stderr during one call (or its initialisation), for
// the error message: Go guests print "panic: …" or "fatal error: …" there before they abort. The rest of the
// guest's stderr, and all of its stdout, is discarded.
type stderrBuf struct{ b []byte }

const maxStderr = 4 << 10

func (w *stderrBuf) Write(p []byte) (int, error) {
	if room := maxStderr - len(w.b); room > 0 {
		w.b = append(w.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// firstLine returns s up to its first line break, trimmed.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// instantiate makes a new instance and runs its _initialize, bounded by initTimeout and ctx.
func (v *version) instantiate(ctx context.Context) (*instance, error) {
	stderr := &stderrBuf{}
	cc := v.newCallCtx(ctx, nil, v.e.opts.initTimeout)
	mod, err := v.ws.rt.InstantiateModule(cc, v.compiled, v.e.modConfig.WithStderr(stderr))
	cc.endLogs()
	if err != nil {
		if stoppedAtDeadline(cc, err) && ctx.Err() == nil && !cc.requestDeadline {
			return nil, initTimeout(v.e.opts.initTimeout)
		}
		if line := firstLine(string(stderr.b)); line != "" {
			return nil, fmt.Errorf("%s (%s)", line, firstLine(err.Error()))
		}
		return nil, errors.New(firstLine(err.Error()))
	}
	inst := &instance{
		v:         v,
		mod:       mod,
		alloc:     mod.ExportedFunction(hostapi.ExportAlloc),
		call:      mod.ExportedFunction(hostapi.ExportCall),
		transform: transformExport(mod),
		mem:       mod.Memory(),
		stack:     make([]uint64, 3),
		stderr:    stderr,
	}
	if inst.alloc == nil || inst.call == nil || inst.mem == nil { // checkABI saw to it; defensive
		_ = mod.Close(ctx)
		return nil, fmt.Errorf("plugins: instance of %q lacks the ABI exports", v.id)
	}
	return inst, nil
}

// prove makes the version's first instance, charged to the workspace's memory (waiting for room, bounded by
// ctx), and makes its first call, gateway_alloc, which every call begins with: a module that cannot serve
// fails here, at load, rather than in every request. The instance joins the pool. A failure is a *gwerr.Error
// 400, unless ctx ended.
func (v *version) prove(ctx context.Context) error {
	if err := v.ws.reserveWait(ctx, v.mem, v); err != nil {
		return fmt.Errorf("plugins: load %s: waiting for the workspace's plugin memory: %w", v.id, err)
	}
	inst, err := v.instantiate(ctx)
	if err != nil {
		ge := &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidRequest, Param: "body",
			Message: fmt.Sprintf("plugin %q does not initialise: %v", v.id, err)}
		if errors.As(err, new(initTimeout)) {
			err = transientError{ge}
		} else {
			err = ge
		}
	} else if err = inst.readVersion(ctx); err != nil {
		_ = inst.mod.Close(closeCtx)
	} else if err = inst.smoke(ctx); err != nil {
		_ = inst.mod.Close(closeCtx)
	}
	if err != nil {
		v.ws.release(v.mem)
		if ctx.Err() != nil {
			return fmt.Errorf("plugins: load %s: %w", v.id, ctx.Err())
		}
		return err
	}
	v.tokens <- struct{}{}
	v.idle <- inst
	return nil
}

// readVersion calls the guest's hostapi.ExportVersion, if it has one, and sets v.minor: a guest speaking an ABI
// this host does not (another major version, or a minor above hostapi.VersionMinor) is refused, and so is a
// v1.1 guest that does not export its memory as hostapi.ExportMemory. It returns a *gwerr.Error 400 naming
// both versions, or what is missing.
func (inst *instance) readVersion(ctx context.Context) error {
	v := inst.v
	fn := inst.mod.ExportedFunction(hostapi.ExportVersion)
	if fn == nil {
		v.minor = 0
		return nil
	}
	cc := v.newCallCtx(ctx, nil, v.e.opts.initTimeout)
	err := fn.CallWithStack(cc, inst.stack)
	cc.endLogs()
	bad := func(transient bool, format string, args ...any) error {
		ge := &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidRequest, Param: "body",
			Message: fmt.Sprintf("plugin %q ", v.id) + fmt.Sprintf(format, args...)}
		if transient {
			return transientError{ge}
		}
		return ge
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil && stoppedAtDeadline(cc, err):
		return bad(true, "fails %s(): it ran past %s", hostapi.ExportVersion, v.e.opts.initTimeout)
	case err != nil:
		return bad(false, "fails %s(): %s", hostapi.ExportVersion, firstLine(err.Error()))
	}
	major, minor := hostapi.DecodeVersion(int32(uint32(inst.stack[0])))
	if major != hostapi.VersionMajor || minor > hostapi.VersionMinor {
		return bad(false, "speaks ABI v%d.%d; this gateway speaks v%d.%d (%s returned %#x)", major, minor,
			hostapi.VersionMajor, hostapi.VersionMinor, hostapi.ExportVersion, uint32(inst.stack[0]))
	}
	if _, ok := v.compiled.ExportedMemories()[hostapi.ExportMemory]; minor >= 1 && !ok {
		return bad(false, "speaks ABI v%d.%d but does not export its memory as %q, which v1.1 requires",
			major, minor, hostapi.ExportMemory)
	}
	v.minor = minor
	return nil
}

// smokeAlloc is the size the smoke call asks of a v1.0 guest's gateway_alloc; a v1.1 guest is asked for
// minInputBuf, and the buffer is kept for the calls that follow.
const smokeAlloc = 16

// smoke makes the instance's first call: gateway_alloc, as every call with an input does. A Go guest built
// without -buildmode=c-shared, whose runtime nothing initialised, traps here ("wasmexport function called
// before runtime initialization"), as does any guest that cannot take an input. It returns a *gwerr.Error 400.
func (inst *instance) smoke(ctx context.Context) error {
	v := inst.v
	inst.stderr.b = inst.stderr.b[:0]
	size := uint32(smokeAlloc)
	if v.minor >= 1 {
		size = minInputBuf
	}
	inst.stack[0] = uint64(size)
	cc := v.newCallCtx(ctx, nil, v.e.opts.initTimeout)
	err := inst.alloc.CallWithStack(cc, inst.stack)
	cc.endLogs()
	var what string
	transient := false
	switch {
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil && stoppedAtDeadline(cc, err):
		what = fmt.Sprintf("it ran past %s", v.e.opts.initTimeout)
		transient = true
	case err != nil:
		what = firstLine(err.Error())
		if line := firstLine(string(inst.stderr.b)); line != "" {
			what = line + " (" + what + ")"
		}
	default:
		if ptr := uint32(inst.stack[0]); uint64(ptr)+uint64(size) > uint64(inst.mem.Size()) {
			what = fmt.Sprintf("it returned %#x, outside the module's memory of %d bytes", ptr, inst.mem.Size())
		} else if v.minor >= 1 {
			inst.inPtr, inst.inSize = ptr, size
		}
	}
	inst.stderr.b = inst.stderr.b[:0]
	if what == "" {
		return nil
	}
	msg := fmt.Sprintf("plugin %q fails its first call, %s(%d): %s", v.id, hostapi.ExportAlloc, size, what)
	if strings.Contains(what, "runtime initialization") {
		msg += "; build a Go guest as a reactor: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared"
	}
	ge := &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidRequest, Param: "body", Message: msg}
	if transient {
		return transientError{ge}
	}
	return ge
}

// initTimeout is the error of an instantiation stopped after its time.
type initTimeout time.Duration

func (d initTimeout) Error() string { return fmt.Sprintf("_initialize ran past %s", time.Duration(d)) }

// transientError is a load's *gwerr.Error that another try may not repeat (a deadline passed on a busy
// machine), so LoadStored does not record it as the module's fault.
type transientError struct{ err *gwerr.Error }

func (t transientError) Error() string { return t.err.Error() }
func (t transientError) Unwrap() error { return t.err }

// get takes an idle instance, or makes one while fewer than MaxInstances exist and the workspace's memory has
// room for it (closing idle instances of its other plugins to make some), or waits for either, bounded by ctx.
// It returns errRetired when the version is retired while waiting or before growing.
func (v *version) get(ctx context.Context) (*instance, error) {
	select {
	case inst := <-v.idle:
		return inst, nil
	default:
	}
	ws := v.ws
	waiting := false
	defer func() {
		if waiting {
			ws.memWaits.Add(-1)
		}
	}()
	for {
		wake := ws.wakeup()
		select {
		case v.tokens <- struct{}{}:
			if ws.reserve(v.mem, v) {
				return v.grow(ctx)
			}
			<-v.tokens
		default:
		}
		if !waiting {
			// Count this caller before trying again, so that an instance put back from now on wakes it.
			waiting = true
			ws.memWaits.Add(1)
			continue
		}
		select {
		case inst := <-v.idle:
			return inst, nil
		case <-wake: // an instance was closed or put back: there may be a token or memory
		case <-v.retiredCh:
			return nil, errRetired
		case <-ctx.Done():
			return nil, fmt.Errorf("plugins: plugin %q: waiting for a free instance: %w", v.id, ctx.Err())
		}
	}
}

// grow makes an instance for the token and the memory the caller just took.
func (v *version) grow(ctx context.Context) (*instance, error) {
	if v.retired.Load() {
		v.free()
		return nil, errRetired
	}
	inst, err := v.instantiate(ctx)
	if err != nil {
		v.free()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("plugins: plugin %q: instantiate: %w", v.id, ctx.Err())
		}
		return nil, fmt.Errorf("plugins: plugin %q: instantiate: %w: %w", v.id, ErrTrap, err)
	}
	return inst, nil
}

// free gives back an instance's token and memory.
func (v *version) free() {
	<-v.tokens
	v.ws.release(v.mem)
}

// put returns a healthy instance to the pool, or closes it when the version is retired.
func (v *version) put(inst *instance) {
	if v.retired.Load() || inst.mod.IsClosed() {
		v.discard(inst)
		return
	}
	select {
	case v.idle <- inst:
		if v.ws.memWaits.Load() > 0 { // a caller of another plugin may be waiting to close it for memory
			v.ws.signal()
		}
	default: // cannot happen: idle has room for every token
		v.discard(inst)
	}
}

// discard closes an instance that failed (or is no longer wanted) and frees its token and memory.
func (v *version) discard(inst *instance) {
	_ = inst.mod.Close(closeCtx)
	v.free()
}

// drain closes the idle instances and returns how many.
func (v *version) drain() int {
	n := 0
	for {
		select {
		case inst := <-v.idle:
			v.discard(inst)
			n++
		default:
			return n
		}
	}
}

// retire stops the version taking new callers and closes it once the last one leaves.
func (v *version) retire() {
	v.retireOnce.Do(func() {
		v.retired.Store(true)
		close(v.retiredCh)
		if v.refs.Load() == 0 {
			v.finalOnce.Do(v.finalize)
		} else {
			v.drain()
		}
	})
}

// finalize closes what is left of a retired version without callers.
func (v *version) finalize() {
	v.drain()
	_ = v.compiled.Close(closeCtx)
	v.e.finalized.Add(1)
}

// release ends a caller's use of v (taken by plugin.acquire).
func (v *version) release() {
	if v.refs.Add(-1) == 0 && v.retired.Load() {
		v.finalOnce.Do(v.finalize)
	}
}

// acquire returns the plugin's current version with a reference held (release it), or nil when the plugin has
// been removed. A version retired between the load and the reference is let go and the current one taken.
func (p *plugin) acquire() *version {
	for {
		v := p.cur.Load()
		if v == nil {
			return nil
		}
		v.refs.Add(1)
		if !v.retired.Load() {
			return v
		}
		v.release() // retired after the swap, so p.cur has moved on
	}
}

// wakeup returns the channel closed at the next release of memory or signal.
func (ws *workspace) wakeup() <-chan struct{} {
	ws.memMu.Lock()
	defer ws.memMu.Unlock()
	return ws.memWake
}

// signal wakes the callers waiting for memory or an instance.
func (ws *workspace) signal() {
	ws.memMu.Lock()
	close(ws.memWake)
	ws.memWake = make(chan struct{})
	ws.memMu.Unlock()
}

// release gives back n bytes charged by reserve and wakes the waiters.
func (ws *workspace) release(n int64) {
	ws.memMu.Lock()
	ws.memUsed -= n
	close(ws.memWake)
	ws.memWake = make(chan struct{})
	ws.memMu.Unlock()
}

// reserve charges n bytes to the workspace if they fit, closing idle instances of the workspace's versions
// other than self to make room. It reports whether it charged them.
func (ws *workspace) reserve(n int64, self *version) bool {
	for {
		ws.memMu.Lock()
		if ws.memUsed+n <= ws.budget {
			ws.memUsed += n
			ws.memMu.Unlock()
			return true
		}
		need := ws.memUsed + n - ws.budget
		ws.memMu.Unlock()
		if !ws.evictIdle(need, self) {
			return false
		}
	}
}

// reserveWait is reserve that waits for memory to be released, bounded by ctx.
func (ws *workspace) reserveWait(ctx context.Context, n int64, self *version) error {
	ws.memWaits.Add(1)
	defer ws.memWaits.Add(-1)
	for {
		wake := ws.wakeup()
		if ws.reserve(n, self) {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// evictIdle closes idle instances of the workspace's current versions other than self until need bytes are
// freed or none is left. It reports whether it closed any.
func (ws *workspace) evictIdle(need int64, self *version) bool {
	ws.mu.RLock()
	vs := make([]*version, 0, len(ws.plugins))
	for _, p := range ws.plugins {
		if v := p.cur.Load(); v != nil && v != self {
			vs = append(vs, v)
		}
	}
	ws.mu.RUnlock()
	var freed int64
	for _, v := range vs {
		for freed < need {
			select {
			case inst := <-v.idle:
				v.discard(inst)
				freed += v.mem
				continue
			default:
			}
			break
		}
		if freed >= need {
			break
		}
	}
	return freed > 0
}
