package plugins

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// Defaults of Options.
const (
	DefaultMemoryLimitMiB      = 64
	DefaultCallTimeout         = 100 * time.Millisecond
	DefaultMaxInstances        = 4
	DefaultIdleTimeout         = 5 * time.Minute
	DefaultPluginsPerWorkspace = 32
	DefaultMemoryPerWorkspace  = 1 << 30 // bytes: 16 instances at the default MemoryLimitMiB
	DefaultLogLinesPerCall     = 16
	DefaultLogLinesPerSecond   = 50
)

// defaultInitTimeout bounds the instantiation of a guest (its _initialize, which runs the Go runtime's and the
// packages' init). Go guests take 10–20 ms; a guest that loops in init is stopped here.
const defaultInitTimeout = 5 * time.Second

// Options configure New. Every field has a usable zero value.
type Options struct {
	// CacheDir is the folder of wazero's file compilation cache (e.g. <data>/wasm-cache), so that a restart
	// loads compiled code (~0.1–0.3 s for a Go guest) instead of compiling again (seconds). "" keeps compiled
	// code in memory only. Compiled code is shared by every workspace either way.
	CacheDir string
	// MemoryLimitMiB caps the linear memory of each instance in a workspace's runtime. Default 64.
	MemoryLimitMiB uint32
	// CallTimeout is the deadline of one call (and of the guest's gateway_alloc before it); the request's own
	// context can only shorten it. Default 100ms.
	CallTimeout time.Duration
	// MaxInstances is the largest number of instances of one plugin version alive at a time, hence its
	// concurrency; further calls wait for a free instance (bounded by their context). Default 4.
	MaxInstances int
	// IdleTimeout is how long a workspace goes without calls before its idle instances are closed (compiled
	// modules are kept; the next call instantiates again, 10–20 ms). Default 5 minutes.
	IdleTimeout time.Duration
	// PluginsPerWorkspace is the most plugins one workspace may have loaded; loading one more is refused with
	// a *gwerr.Error 409. Default 32.
	PluginsPerWorkspace int
	// MemoryPerWorkspace bounds, in bytes, the wasm linear memory of one workspace's live instances together.
	// Each instance is charged, for as long as it lives, the most its memory can grow to (its module's declared
	// maximum or MemoryLimitMiB, whichever is smaller), because a call can grow it that far before the host
	// can stop it. A Load is refused (409) unless every plugin of the workspace can have one instance within
	// the bound; beyond that, a call that would need a new instance first closes idle instances of the
	// workspace's other plugins and otherwise waits for an instance or for memory, bounded by its context.
	// Default 1 GiB; it must hold at least one instance of MemoryLimitMiB.
	MemoryPerWorkspace int64
	// LogLinesPerCall is the most lines one call (or one instantiation) may log through the log host
	// function; the rest are dropped and counted (Stats.LogLinesDropped). Default 16.
	LogLinesPerCall int
	// LogLinesPerSecond is the rate of each plugin's log lines, all calls together, with bursts of up to four
	// seconds' worth; lines past it are dropped and counted. Default 50.
	LogLinesPerSecond int
	// Logger receives the guests' log host calls (with "workspace" and "plugin" attributes) and the engine's
	// own messages. Default slog.Default().
	Logger *slog.Logger
	// OnCall, when set, is called after each call of a guest (Call) with the plugin's id and how long the call
	// took, waiting for an instance included, for the metrics. It runs on the caller's goroutine: it must be
	// cheap, must not block and must be safe for concurrent use. Nil: none.
	OnCall func(plugin string, d time.Duration)
	// OnCompile, when set, is called once a version of a plugin is loaded, with how long its compilation took
	// and whether its code came from the compilation cache (a CacheUse), for the metrics. OnInstantiate, when
	// set, is called after each new instance of a plugin (_initialize included). Both run on the loading or
	// calling goroutine: they must be cheap, must not block and must be safe for concurrent use. Nil: none.
	OnCompile     func(plugin string, d time.Duration, cache string)
	OnInstantiate func(plugin string, d time.Duration)
	// KV answers the kv_get host function (kv.go): the value stored under key in the workspace's plugin
	// key-value store, which the host only reads. It runs once per kv_get, on the call path: it must answer
	// from memory and be safe for concurrent use. An error fails the guest's call. Nil: every key is absent.
	KV func(workspaceID, key string) (value []byte, found bool, err error)

	// unguarded compiles modules as they are, without the fuel counter (guard.go), and gives calls no
	// deadline, for benchmarks that measure what the guard costs. Such an engine cannot stop a runaway guest.
	unguarded bool
	// initTimeout replaces defaultInitTimeout, for tests.
	initTimeout time.Duration
	// cache, when set, replaces the compilation cache built from CacheDir; the engine does not close it. Tests
	// share one cache between engines.
	cache wazero.CompilationCache
}

// EnsureDefaults fills the zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.MemoryLimitMiB == 0 {
		o.MemoryLimitMiB = DefaultMemoryLimitMiB
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.MaxInstances <= 0 {
		o.MaxInstances = DefaultMaxInstances
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.PluginsPerWorkspace <= 0 {
		o.PluginsPerWorkspace = DefaultPluginsPerWorkspace
	}
	if o.MemoryPerWorkspace <= 0 {
		o.MemoryPerWorkspace = DefaultMemoryPerWorkspace
	}
	if o.LogLinesPerCall <= 0 {
		o.LogLinesPerCall = DefaultLogLinesPerCall
	}
	if o.LogLinesPerSecond <= 0 {
		o.LogLinesPerSecond = DefaultLogLinesPerSecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.initTimeout <= 0 {
		o.initTimeout = defaultInitTimeout
	}
}

// Validate reports every problem of the options at once.
func (o *Options) Validate() error {
	var errs []error
	if o.MemoryLimitMiB > 4096 {
		errs = append(errs, fmt.Errorf("plugins: MemoryLimitMiB %d is above the 4096 MiB a wasm32 memory can address", o.MemoryLimitMiB))
	}
	if o.MaxInstances > 1024 {
		errs = append(errs, fmt.Errorf("plugins: MaxInstances %d is above 1024", o.MaxInstances))
	}
	if o.PluginsPerWorkspace > 10000 {
		errs = append(errs, fmt.Errorf("plugins: PluginsPerWorkspace %d is above 10000", o.PluginsPerWorkspace))
	}
	if limit := int64(o.MemoryLimitMiB) << 20; o.MemoryPerWorkspace > 0 && o.MemoryPerWorkspace < limit {
		errs = append(errs, fmt.Errorf("plugins: MemoryPerWorkspace (--plugin-memory-per-workspace) of %s cannot hold one instance of MemoryLimitMiB (%d MiB)",
			mib(o.MemoryPerWorkspace), o.MemoryLimitMiB))
	}
	return errors.Join(errs...)
}

// Errors of Call. A failed call wraps one of them (or the context's error when the request's context ended),
// and the caller turns it into a check error.
var (
	// ErrTimeout means the guest ran past CallTimeout and was stopped.
	ErrTimeout = errors.New("plugin call exceeded its deadline")
	// ErrTrap means the guest failed: a panic, an exit, a trap (unreachable, out-of-bounds access), running out
	// of memory, or breaking the ABI (a bad pointer, an output that does not decode).
	ErrTrap = errors.New("plugin failed")
	// ErrClosed means the engine is closed.
	ErrClosed = errors.New("plugins: engine closed")
)

// Engine runs WebAssembly plugins. It holds one wazero runtime per workspace (so a workspace's limits are its
// own) over one compilation cache, and per plugin the current version's pool of instances.
//
// An Engine is safe for concurrent use. Close it to free the runtimes.
type Engine struct {
	opts      Options
	log       *slog.Logger
	cache     wazero.CompilationCache
	ownCache  bool
	rtConfig  wazero.RuntimeConfig
	modConfig wazero.ModuleConfig

	mu         sync.RWMutex
	workspaces map[string]*workspace
	closed     bool
	sweeping   bool // the janitor goroutine runs
	stop       chan struct{}
	stopped    chan struct{}

	finalized atomic.Int64 // retired versions closed, for tests

	omu     sync.Mutex
	vmu     sync.Mutex
	vrt     wazero.Runtime                               // the validation runtime, created by the first Validate
	offered map[string]map[string]api.FunctionDefinition // module → name → host function offered to guests
	checked map[[32]byte]*checked                        // Validate's results by SHA-256, a few kept
	order   [][32]byte                                   // of checked, oldest first
}

// checked is a Validate result; compiled holds the module's code in the shared cache so that a Load that
// follows does not compile again.
type checked struct {
	err      error
	compiled wazero.CompiledModule
	// compile and cache are the validation's compile, reported by the load that follows it (which finds the
	// code compiled in memory) in its place, once.
	compile time.Duration
	cache   CacheUse
}

// maxChecked bounds the Validate results kept (each may pin a compiled module, tens of MB for a Go guest).
const maxChecked = 4

// New returns an engine. It creates CacheDir when set; runtimes are created on first use.
func New(opts Options) (*Engine, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{
		opts:       opts,
		log:        opts.Logger,
		cache:      opts.cache,
		workspaces: make(map[string]*workspace),
		checked:    make(map[[32]byte]*checked),
		stop:       make(chan struct{}),
		stopped:    make(chan struct{}),
	}
	if e.cache == nil {
		e.ownCache = true
		if opts.CacheDir != "" {
			c, err := wazero.NewCompilationCacheWithDir(opts.CacheDir)
			if err != nil {
				return nil, fmt.Errorf("plugins: compilation cache %s: %w", opts.CacheDir, err)
			}
			e.cache = c
		} else {
			e.cache = wazero.NewCompilationCache()
		}
	}
	// No WithCloseOnContextDone: the guard (guard.go) stops runaway guests at a fraction of its cost.
	e.rtConfig = runtimeConfig(e.cache).WithMemoryLimitPages(opts.MemoryLimitMiB * 16) // 64 KiB pages
	// No FS, no env, no args; stdout and stderr are discarded (wazero's defaults). The guest gets the real
	// clocks (Go's scheduler needs a monotonic clock), a fake nanosleep (returns at once, so a sleeping guest
	// never blocks a host thread past its deadline) and crypto/rand.
	e.modConfig = wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions("_initialize").
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader)
	return e, nil
}

// Close stops every plugin and frees the runtimes and, unless shared, the compilation cache. Calls in flight
// fail. It is safe to call more than once.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	wss := e.workspaces
	e.workspaces = nil
	sweeping := e.sweeping
	close(e.stop)
	e.mu.Unlock()
	if sweeping {
		<-e.stopped
	}

	var errs []error
	for _, ws := range wss {
		ws.mu.Lock()
		ps := ws.plugins
		ws.plugins = nil
		ws.mu.Unlock()
		for _, p := range ps {
			if v := p.cur.Swap(nil); v != nil {
				v.retire()
			}
		}
		errs = append(errs, ws.rt.Close(ctx))
	}
	e.vmu.Lock()
	for _, c := range e.checked {
		if c.compiled != nil {
			errs = append(errs, c.compiled.Close(ctx))
		}
	}
	e.checked = nil
	if e.vrt != nil {
		errs = append(errs, e.vrt.Close(ctx))
	}
	e.vmu.Unlock()
	if e.ownCache {
		errs = append(errs, e.cache.Close(ctx))
	}
	return errors.Join(errs...)
}

// workspace is one workspace's runtime and plugins.
type workspace struct {
	id       string
	rt       wazero.Runtime
	mu       sync.RWMutex
	plugins  map[string]*plugin
	lastCall atomic.Int64 // unix nanoseconds of the last call's start
	loads    int          // Loads in progress; guarded by Engine.mu

	// installMu makes a Load's admission (the plugin count and memory bounds), its save and its swap one step,
	// so that two Loads cannot both fit in the room left for one, nor store one module and serve another.
	installMu sync.Mutex

	budget   int64 // Options.MemoryPerWorkspace
	memMu    sync.Mutex
	memUsed  int64         // bytes charged to live instances; guarded by memMu
	memWake  chan struct{} // closed (and replaced) when memory is released or an instance goes idle; guarded by memMu
	memWaits atomic.Int32  // callers waiting for memory, so that put signals only when someone listens
}

// plugin is a loaded plugin: its current version (swapped atomically by Load) and its statistics, which
// survive reloads.
type plugin struct {
	id     string
	ws     *workspace
	cur    atomic.Pointer[version]
	logs   *logLimiter // shared by the plugin's versions
	calls  atomic.Uint64
	errors atomic.Uint64
	nanos  atomic.Int64
}

// Stats are a plugin's counters since it was first loaded (reloads keep them; Remove drops them).
type Stats struct {
	Calls    uint64        // calls made, failed ones included
	Errors   uint64        // calls that returned an error
	Duration time.Duration // total time spent in calls, waiting for an instance included
	// Instances is the number of live instances of the current version (idle and busy).
	Instances int
	// SHA256 is the hex digest of the current version's module.
	SHA256 string
	// Memory is the bytes charged to the workspace's MemoryPerWorkspace for each instance of the current
	// version: the most its linear memory can grow to.
	Memory int64
	// LogLinesDropped counts the log lines the plugin's guests wrote past LogLinesPerCall or
	// LogLinesPerSecond.
	LogLinesDropped uint64
	// Compile is how long compiling the current version took at its load, and CompileCache whether that
	// compile found its code in the compilation cache (coldstart.go).
	Compile      time.Duration
	CompileCache CacheUse
	// Instantiations counts the instances made of the current version, its first (made at its load)
	// included; InstantiateLast and InstantiateMax are the time the latest and the slowest took.
	Instantiations                  uint64
	InstantiateLast, InstantiateMax time.Duration
}

// Stats returns the plugin's counters, or false when the workspace has no such plugin.
func (e *Engine) Stats(workspaceID, id string) (Stats, bool) {
	p := e.lookup(workspaceID, id)
	if p == nil {
		return Stats{}, false
	}
	v := p.cur.Load()
	if v == nil {
		return Stats{}, false
	}
	s := Stats{
		Calls:           p.calls.Load(),
		Errors:          p.errors.Load(),
		Duration:        time.Duration(p.nanos.Load()),
		Instances:       len(v.tokens),
		SHA256:          fmt.Sprintf("%x", v.sha),
		Memory:          v.mem,
		LogLinesDropped: p.logs.dropped.Load(),
	}
	v.loadFigures(&s)
	return s, true
}

// lookup returns the workspace's plugin, or nil.
func (e *Engine) lookup(workspaceID, id string) *plugin {
	e.mu.RLock()
	ws := e.workspaces[workspaceID]
	e.mu.RUnlock()
	if ws == nil {
		return nil
	}
	ws.mu.RLock()
	p := ws.plugins[id]
	ws.mu.RUnlock()
	return p
}

// Loaded returns the IDs of the workspace's loaded plugins, sorted.
func (e *Engine) Loaded(workspaceID string) []string {
	e.mu.RLock()
	ws := e.workspaces[workspaceID]
	e.mu.RUnlock()
	if ws == nil {
		return nil
	}
	ws.mu.RLock()
	ids := make([]string, 0, len(ws.plugins))
	for id, p := range ws.plugins {
		if p.cur.Load() != nil {
			ids = append(ids, id)
		}
	}
	ws.mu.RUnlock()
	slices.Sort(ids)
	return ids
}

// acquireWorkspace returns the workspace, creating its runtime on first use, and counts a Load in progress
// (release with releaseWorkspace) so that the janitor leaves it alone.
func (e *Engine) acquireWorkspace(ctx context.Context, workspaceID string) (*workspace, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ErrClosed
	}
	if ws := e.workspaces[workspaceID]; ws != nil {
		ws.loads++
		return ws, nil
	}
	rt := wazero.NewRuntimeWithConfig(ctx, e.rtConfig)
	if err := e.instantiateHost(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("plugins: workspace %s: host modules: %w", workspaceID, err)
	}
	ws := &workspace{id: workspaceID, rt: timingRuntime{rt}, plugins: make(map[string]*plugin), loads: 1,
		budget: e.opts.MemoryPerWorkspace, memWake: make(chan struct{})}
	ws.lastCall.Store(time.Now().UnixNano())
	e.workspaces[workspaceID] = ws
	if !e.sweeping {
		e.sweeping = true
		go e.sweep()
	}
	return ws, nil
}

func (e *Engine) isClosed() bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.closed
}

func (e *Engine) releaseWorkspace(ws *workspace) {
	e.mu.Lock()
	ws.loads--
	e.mu.Unlock()
}

// runtimeConfig is the configuration of the engine's runtimes less their memory limit, which does not change
// the compiled code: tests that compile guests ahead of their engines use it too, so that the engines find the
// code in the shared cache (wazero keys it by the module's bytes and by the configuration's termination flag).
func runtimeConfig(cache wazero.CompilationCache) wazero.RuntimeConfig {
	return wazero.NewRuntimeConfig().WithCompilationCache(cache)
}

// instantiateHost adds the host modules to rt: WASI preview 1, gateway_v1 and, unless the engine is unguarded,
// the guard's gateway_guard.
func (e *Engine) instantiateHost(ctx context.Context, rt wazero.Runtime) error {
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		return err
	}
	if _, err := hostModule(rt).Instantiate(ctx); err != nil {
		return err
	}
	if e.opts.unguarded {
		return nil
	}
	_, err := guardModule(rt).Instantiate(ctx)
	return err
}

// Load compiles wasm (once per content: the compilation cache is keyed by SHA-256), checks it against ABI v1,
// instantiates one instance to prove that it initialises and that its first call (gateway_alloc) works, and
// makes it the plugin's current version. Calls in flight finish on the old version, whose instances are closed
// once idle; new calls use the new one. Loading the bytes of the current version again does nothing. A module
// that fails leaves the current version serving.
//
// A module that is not valid wasm, breaks the ABI, is a WASI command rather than a reactor, does not initialise
// or traps in its first call is a *gwerr.Error 400. One more plugin than PluginsPerWorkspace, or one whose
// instance would not fit in MemoryPerWorkspace beside one instance of each other plugin, is a *gwerr.Error 409.
func (e *Engine) Load(ctx context.Context, workspaceID, id string, wasm []byte) error {
	return e.Install(ctx, workspaceID, id, wasm, nil)
}

// Install is Load with a step between proving the module and serving it: save (storing the module, say) runs
// once the module has loaded and been admitted, and the new version serves only if save returns nil, whose
// error Install then returns. So what is stored is what loaded, and what serves is what was stored. Installs
// of one workspace save and swap one at a time. save may be nil; it runs also when wasm is the current
// version's module.
func (e *Engine) Install(ctx context.Context, workspaceID, id string, wasm []byte, save func() error) error {
	if err := storage.CheckID("workspace id", workspaceID); err != nil {
		return gwerr.BadRequest("workspace_id", "%v", err)
	}
	if err := storage.CheckID("plugin id", id); err != nil {
		return gwerr.BadRequest("id", "%v", err)
	}
	sum := sha256.Sum256(wasm)
	ws, err := e.acquireWorkspace(ctx, workspaceID)
	if err != nil {
		return err
	}
	defer e.releaseWorkspace(ws)
	ws.mu.RLock()
	p := ws.plugins[id]
	ws.mu.RUnlock()
	if p != nil {
		if v := p.cur.Load(); v != nil && v.sha == sum {
			if save == nil {
				return nil
			}
			ws.installMu.Lock()
			defer ws.installMu.Unlock()
			return save()
		}
	}

	compiled, err := e.compileTimed(ctx, ws.rt, id, wasm)
	if err != nil {
		if e.isClosed() { // the runtime was closed under us
			return ErrClosed
		}
		return err
	}
	if err := e.checkABI(ws.rt, compiled); err != nil {
		_ = compiled.Close(ctx)
		return err
	}
	v := newVersion(e, ws, id, sum, compiled)
	// Refuse what cannot fit before spending an instance on it; the check that counts is made again below,
	// with the swap.
	if err := e.admit(ws, id, v); err != nil {
		_ = compiled.Close(ctx)
		return err
	}
	if err := v.prove(ctx); err != nil {
		_ = compiled.Close(ctx)
		if e.isClosed() {
			return ErrClosed
		}
		return err
	}

	ws.installMu.Lock()
	defer ws.installMu.Unlock()
	if err := e.admit(ws, id, v); err != nil {
		v.retire()
		return err
	}
	if save != nil {
		if err := save(); err != nil {
			v.retire()
			return err
		}
	}
	ws.mu.Lock()
	if ws.plugins == nil { // the engine closed meanwhile
		ws.mu.Unlock()
		v.retire()
		return ErrClosed
	}
	p = ws.plugins[id]
	if p == nil {
		p = &plugin{id: id, ws: ws, logs: v.logs}
		ws.plugins[id] = p
	}
	v.logs = p.logs // before the swap publishes v: calls find the plugin's limiter
	old := p.cur.Swap(v)
	ws.mu.Unlock()
	ws.lastCall.Store(time.Now().UnixNano())
	if old != nil {
		old.retire()
	}
	e.loaded(v, old != nil)
	return nil
}

// admit checks that the workspace can take v as plugin id (a new plugin or a new version of one): the count
// of plugins, and one instance of each within the memory bound. It returns a *gwerr.Error 409 naming the
// limit and the gateway flag that sets it.
func (e *Engine) admit(ws *workspace, id string, v *version) error {
	n, mem := 0, v.mem
	ws.mu.RLock()
	for other, p := range ws.plugins {
		if other == id {
			continue
		}
		if cur := p.cur.Load(); cur != nil {
			n++
			mem += cur.mem
		}
	}
	ws.mu.RUnlock()
	if n >= e.opts.PluginsPerWorkspace {
		return &gwerr.Error{Status: http.StatusConflict, Code: gwerr.CodeConflict, Param: "id",
			Message: fmt.Sprintf("the workspace already has %d plugins, the most allowed (--plugins-per-workspace): delete one before adding %q", n, id)}
	}
	if mem > ws.budget {
		return &gwerr.Error{Status: http.StatusConflict, Code: gwerr.CodeConflict, Param: "body",
			Message: fmt.Sprintf("plugin %q needs %s of wasm memory per instance, and with one instance of each of the workspace's other plugins (%s) that is more than the %s allowed (--plugin-memory-per-workspace): declare a smaller maximum memory in the module, or delete a plugin",
				id, mib(v.mem), mib(mem-v.mem), mib(ws.budget))}
	}
	return nil
}

// mib formats a byte count for messages.
func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// Remove unloads the plugin: new calls get a not-found error, calls in flight finish. It reports whether the
// plugin was loaded.
func (e *Engine) Remove(workspaceID, id string) bool {
	e.mu.RLock()
	ws := e.workspaces[workspaceID]
	e.mu.RUnlock()
	if ws == nil {
		return false
	}
	ws.mu.Lock()
	p := ws.plugins[id]
	delete(ws.plugins, id)
	ws.mu.Unlock()
	if p == nil {
		return false
	}
	v := p.cur.Swap(nil)
	if v == nil {
		return false
	}
	v.retire()
	return true
}

// LoadStored loads every stored plugin of every workspace, as at start. A plugin that cannot be read or
// loaded is logged and skipped; only failing to list the workspaces, the end of ctx or the engine's Close
// stops it with an error. It may run in the background while the engine serves calls.
//
// A module that fails for a reason of its own (a *gwerr.Error 400: not wasm, breaks the ABI, does not
// initialise) is marked in the store (storage.Plugin.LoadError), and later starts skip it with one log line
// instead of compiling it again; storing the plugin again clears the mark. A plugin refused for the
// workspace's bounds (409), or whose initialisation ran out of time, is not marked: it may load another time.
func (e *Engine) LoadStored(ctx context.Context, st *storage.Store) error {
	wss, err := st.Workspaces.List()
	if err != nil {
		return fmt.Errorf("plugins: list workspaces: %w", err)
	}
	loaded, failed, skipped, fromCache := 0, 0, 0, 0
	start := time.Now()
	for _, ws := range wss {
		ps, err := st.Plugins.List(ws.ID)
		if err != nil {
			e.log.Error("plugins: list stored plugins", "workspace", ws.ID, "error", err)
			continue
		}
		for _, meta := range ps {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("plugins: load stored plugins: %w", err)
			}
			if meta.LoadError != "" {
				skipped++
				e.log.Warn("plugins: skipping a stored plugin that failed to load before; store it again to retry",
					"workspace", ws.ID, "plugin", meta.ID, "sha256", meta.SHA256, "error", meta.LoadError)
				continue
			}
			wasm, err := st.Plugins.Wasm(ws.ID, meta.ID)
			if err == nil {
				if sum := sha256.Sum256(wasm); fmt.Sprintf("%x", sum) != meta.SHA256 {
					err = fmt.Errorf("stored module's SHA-256 is %x, its record says %s", sum, meta.SHA256)
				}
			}
			if err == nil {
				err = e.Load(ctx, ws.ID, meta.ID, wasm)
			}
			if ctx.Err() != nil {
				return fmt.Errorf("plugins: load stored plugins: %w", ctx.Err())
			}
			if errors.Is(err, ErrClosed) {
				return err
			}
			if err != nil {
				failed++
				msg := err.Error()
				var ge *gwerr.Error
				if errors.As(err, &ge) {
					msg = ge.Message
				}
				e.log.Error("plugins: skipping a stored plugin that does not load", "workspace", ws.ID, "plugin", meta.ID, "error", msg)
				if ge != nil && ge.Status == http.StatusBadRequest && !errors.As(err, new(transientError)) {
					if err := st.Plugins.SetLoadError(ws.ID, meta.ID, meta.SHA256, msg); err != nil {
						e.log.Warn("plugins: cannot mark a stored plugin that does not load", "workspace", ws.ID, "plugin", meta.ID, "error", err)
					}
				}
				continue
			}
			loaded++
			if s, ok := e.Stats(ws.ID, meta.ID); ok && s.CompileCache == CacheHit {
				fromCache++
			}
		}
	}
	e.log.Info("plugins: stored plugins loaded", "loaded", loaded, "failed", failed, "skipped", skipped,
		"compiled_from_cache", fromCache, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// sweep runs until Close: every so often it closes the idle instances of workspaces without calls for
// IdleTimeout, and drops the runtime of workspaces left without plugins.
func (e *Engine) sweep() {
	defer close(e.stopped)
	every := min(e.opts.IdleTimeout/4, time.Minute)
	t := time.NewTicker(max(every, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case now := <-t.C:
			e.evictIdle(now)
		}
	}
}

// evictIdle closes the idle instances of the workspaces that have had no call since now-IdleTimeout.
func (e *Engine) evictIdle(now time.Time) {
	cutoff := now.Add(-e.opts.IdleTimeout).UnixNano()
	var idle []*workspace
	e.mu.Lock()
	for id, ws := range e.workspaces {
		if ws.lastCall.Load() > cutoff {
			continue
		}
		ws.mu.RLock()
		empty := len(ws.plugins) == 0
		ws.mu.RUnlock()
		if empty && ws.loads == 0 {
			// Retired versions of removed plugins have had no call for IdleTimeout either.
			delete(e.workspaces, id)
			_ = ws.rt.Close(closeCtx)
			continue
		}
		idle = append(idle, ws)
	}
	e.mu.Unlock()
	for _, ws := range idle {
		ws.mu.RLock()
		vs := make([]*version, 0, len(ws.plugins))
		for _, p := range ws.plugins {
			if v := p.cur.Load(); v != nil {
				vs = append(vs, v)
			}
		}
		ws.mu.RUnlock()
		n := 0
		for _, v := range vs {
			n += v.drain()
		}
		if n > 0 {
			e.log.Debug("plugins: closed idle instances", "workspace", ws.id, "instances", n)
		}
	}
}
