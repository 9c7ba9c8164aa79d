package plugins

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/llmgw/gateway/hostapi"
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
		idle:      make(chan *instance, n),
		tokens:    make(chan struct{}, n),
		retiredCh: make(chan struct{}),
	}
}

// instance is one instantiated guest. It serves one call at a time; its fields other than v are touched only
// by the caller holding it.
type instance struct {
	v      *version
	mod    api.Module
	alloc  api.Function
	call   api.Function
	mem    api.Memory
	stack  []uint64 // params and results of CallWithStack
	buf    []byte   // the encoded input, reused
	stderr *stderrBuf
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
	ictx, cancel := context.WithTimeout(ctx, v.e.opts.initTimeout)
	defer cancel()
	stderr := &stderrBuf{}
	mod, err := v.ws.rt.InstantiateModule(&callCtx{Context: ictx, v: v}, v.compiled, v.e.modConfig.WithStderr(stderr))
	if err != nil {
		if ictx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("_initialize ran past %s", v.e.opts.initTimeout)
		}
		if line := firstLine(string(stderr.b)); line != "" {
			return nil, fmt.Errorf("%s (%s)", line, firstLine(err.Error()))
		}
		return nil, errors.New(firstLine(err.Error()))
	}
	inst := &instance{
		v:      v,
		mod:    mod,
		alloc:  mod.ExportedFunction(hostapi.ExportAlloc),
		call:   mod.ExportedFunction(hostapi.ExportCall),
		mem:    mod.Memory(),
		stack:  make([]uint64, 3),
		stderr: stderr,
	}
	if inst.alloc == nil || inst.call == nil || inst.mem == nil { // checkABI saw to it; defensive
		_ = mod.Close(ctx)
		return nil, fmt.Errorf("plugins: instance of %q lacks the ABI exports", v.id)
	}
	return inst, nil
}

// get takes an idle instance, or makes one while fewer than MaxInstances exist, or waits for either, bounded
// by ctx. It returns errRetired when the version is retired while waiting or before growing.
func (v *version) get(ctx context.Context) (*instance, error) {
	select {
	case inst := <-v.idle:
		return inst, nil
	default:
	}
	select {
	case v.tokens <- struct{}{}:
		return v.grow(ctx)
	default:
	}
	select {
	case inst := <-v.idle:
		return inst, nil
	case v.tokens <- struct{}{}:
		return v.grow(ctx)
	case <-v.retiredCh:
		return nil, errRetired
	case <-ctx.Done():
		return nil, fmt.Errorf("plugins: plugin %q: waiting for a free instance: %w", v.id, ctx.Err())
	}
}

// grow makes an instance for the token the caller just took.
func (v *version) grow(ctx context.Context) (*instance, error) {
	if v.retired.Load() {
		<-v.tokens
		return nil, errRetired
	}
	inst, err := v.instantiate(ctx)
	if err != nil {
		<-v.tokens
		if ctx.Err() != nil {
			return nil, fmt.Errorf("plugins: plugin %q: instantiate: %w", v.id, ctx.Err())
		}
		return nil, fmt.Errorf("plugins: plugin %q: instantiate: %w: %w", v.id, ErrTrap, err)
	}
	return inst, nil
}

// put returns a healthy instance to the pool, or closes it when the version is retired.
func (v *version) put(inst *instance) {
	if v.retired.Load() || inst.mod.IsClosed() {
		v.discard(inst)
		return
	}
	select {
	case v.idle <- inst:
	default: // cannot happen: idle has room for every token
		v.discard(inst)
	}
}

// discard closes an instance that failed (or is no longer wanted) and frees its token.
func (v *version) discard(inst *instance) {
	_ = inst.mod.Close(closeCtx)
	<-v.tokens
}

// drain closes the idle instances and returns how many.
func (v *version) drain() int {
	n := 0
	for {
		select {
		case inst := <-v.idle:
			_ = inst.mod.Close(closeCtx)
			<-v.tokens
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
