package plugins

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Cold start: what loading a plugin version costs, measured at its load (compile) and at each new instance
// (instantiate), for Stats, Options.OnCompile and Options.OnInstantiate.

// CacheUse says whether a version's load found its compiled code in the compilation cache (Stats.CompileCache).
type CacheUse string

const (
	// CacheHit: the load compiled nothing; the code came from CacheDir (an earlier process compiled it) or
	// from this process's memory (another workspace's load compiled it). After an upload, the load reports the
	// compile of the upload's Validate instead, which is the real one.
	CacheHit CacheUse = "hit"
	// CacheMiss: the load compiled the module.
	CacheMiss CacheUse = "miss"
	// CacheUnknown: the engine has no CacheDir, whose files are how a hit is told from a miss.
	CacheUnknown CacheUse = "unknown"
)

// loadedModule is a version's compiled module with what its load measured. It stands in for the compiled
// module everywhere (version.compiled), and timingRuntime hands wazero the module inside.
type loadedModule struct {
	wazero.CompiledModule
	plugin        string
	compile       time.Duration
	cache         CacheUse
	onInstantiate func(plugin string, d time.Duration)

	instances atomic.Uint64 // instantiations that succeeded
	lastNanos atomic.Int64
	maxNanos  atomic.Int64
}

func (m *loadedModule) instantiated(d time.Duration) {
	m.instances.Add(1)
	m.lastNanos.Store(int64(d))
	for cur := m.maxNanos.Load(); int64(d) > cur; cur = m.maxNanos.Load() {
		if m.maxNanos.CompareAndSwap(cur, int64(d)) {
			break
		}
	}
	if m.onInstantiate != nil {
		m.onInstantiate(m.plugin, d)
	}
}

// timingRuntime is a workspace's runtime that times the instantiation of loaded modules: every instance of a
// plugin is made through it, whichever code path asks for one, and _initialize (a Go guest's runtime and
// package init) runs inside InstantiateModule.
type timingRuntime struct{ wazero.Runtime }

// InstantiateModule implements wazero.Runtime. wazero accepts only the compiled modules it made, so a
// loadedModule is unwrapped.
func (r timingRuntime) InstantiateModule(ctx context.Context, compiled wazero.CompiledModule, cfg wazero.ModuleConfig) (api.Module, error) {
	lm, ok := compiled.(*loadedModule)
	if !ok {
		return r.Runtime.InstantiateModule(ctx, compiled, cfg)
	}
	start := time.Now()
	mod, err := r.Runtime.InstantiateModule(ctx, lm.CompiledModule, cfg)
	if err == nil {
		lm.instantiated(time.Since(start))
	}
	return mod, err
}

// compileTimed is compile for a Load: it measures the compilation and whether it wrote compiled code into
// CacheDir. wazero does not say whether CompileModule found the code cached, but a miss writes the code to
// CacheDir (a new file, or a rewritten one when the old was unreadable) and a hit writes nothing. A load of
// another module finishing at the same moment can make a hit read as a miss, never the reverse.
func (e *Engine) compileTimed(ctx context.Context, rt wazero.Runtime, id string, wasm []byte) (wazero.CompiledModule, error) {
	before := e.cacheFiles()
	start := time.Now()
	compiled, err := e.compile(ctx, rt, wasm)
	if err != nil {
		return nil, err
	}
	lm := &loadedModule{CompiledModule: compiled, plugin: id, compile: time.Since(start),
		cache: cacheUse(before, e.cacheFiles()), onInstantiate: e.opts.OnInstantiate}
	if lm.cache != CacheMiss {
		// An upload's Validate compiled the module just before: its compile is the one this load stands for.
		sum := sha256.Sum256(wasm)
		e.vmu.Lock()
		if c := e.checked[sum]; c != nil && c.compile > 0 {
			lm.compile, lm.cache = c.compile, c.cache
			c.compile = 0
		}
		e.vmu.Unlock()
	}
	return lm, nil
}

// cacheUse tells a compile's use of CacheDir from its files before and after (cacheFiles; nil: no CacheDir).
func cacheUse(before, after map[string]time.Time) CacheUse {
	if before == nil || after == nil {
		return CacheUnknown
	}
	for name, mod := range after {
		if was, ok := before[name]; !ok || !was.Equal(mod) {
			return CacheMiss
		}
	}
	return CacheHit
}

// cacheFiles returns the files of CacheDir with their modification times, or nil without a CacheDir or when it
// cannot be read. wazero keeps them one folder down (one folder per wazero version and platform); files being
// written end in .tmp.
func (e *Engine) cacheFiles() map[string]time.Time {
	if e.opts.CacheDir == "" {
		return nil
	}
	files := map[string]time.Time{}
	dirs, err := os.ReadDir(e.opts.CacheDir)
	if err != nil {
		return nil
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		sub := filepath.Join(e.opts.CacheDir, d.Name())
		entries, _ := os.ReadDir(sub)
		for _, f := range entries {
			if !f.Type().IsRegular() || strings.HasSuffix(f.Name(), ".tmp") {
				continue
			}
			if info, err := f.Info(); err == nil {
				files[filepath.Join(d.Name(), f.Name())] = info.ModTime()
			}
		}
	}
	return files
}

// loadFigures fills the cold-start fields of s from the version's module.
func (v *version) loadFigures(s *Stats) {
	lm, ok := v.compiled.(*loadedModule)
	if !ok {
		return
	}
	s.Compile = lm.compile
	s.CompileCache = lm.cache
	s.Instantiations = lm.instances.Load()
	s.InstantiateLast = time.Duration(lm.lastNanos.Load())
	s.InstantiateMax = time.Duration(lm.maxNanos.Load())
}

// loaded logs a version that has just been swapped in, with what its load measured, and reports its compile
// to Options.OnCompile.
func (e *Engine) loaded(v *version, replaced bool) {
	var s Stats
	v.loadFigures(&s)
	e.log.Debug("plugin loaded", "workspace", v.ws.id, "plugin", v.id, "sha256", fmt.Sprintf("%x", v.sha), "replaced", replaced,
		"memory_per_instance", v.mem, "compile", s.Compile, "compile_cache", s.CompileCache, "instantiate", s.InstantiateLast)
	if e.opts.OnCompile != nil && s.CompileCache != "" {
		e.opts.OnCompile(v.id, s.Compile, string(s.CompileCache))
	}
}
