package plugins

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/gateway/hostapi"
)

// coldStartHeard records what OnCompile and OnInstantiate hear.
type coldStartHeard struct {
	mu           sync.Mutex
	compiles     []string // "<plugin> <cache>"
	instantiated map[string]int
}

func (h *coldStartHeard) hook(t *testing.T, opts *Options) {
	h.instantiated = map[string]int{}
	opts.OnCompile = func(plugin string, d time.Duration, cache string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if d <= 0 {
			t.Errorf("OnCompile(%s): no compile time", plugin)
		}
		h.compiles = append(h.compiles, plugin+" "+cache)
	}
	opts.OnInstantiate = func(plugin string, d time.Duration) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if d <= 0 {
			t.Errorf("OnInstantiate(%s): no instantiate time", plugin)
		}
		h.instantiated[plugin]++
	}
}

func (h *coldStartHeard) take() (compiles []string, instantiated map[string]int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	compiles, instantiated = h.compiles, h.instantiated
	h.compiles, h.instantiated = nil, map[string]int{}
	return compiles, instantiated
}

// coldStats returns the plugin's stats after checking the figures every loaded version has: a compile time,
// and n instantiations with their times.
func coldStats(t *testing.T, e *Engine, ws, id string, n uint64) Stats {
	t.Helper()
	s, ok := e.Stats(ws, id)
	if !ok {
		t.Fatalf("%s is not loaded", id)
	}
	if s.Compile <= 0 || s.Instantiations != n || s.InstantiateLast <= 0 || s.InstantiateMax < s.InstantiateLast {
		t.Fatalf("%s: compile %v, %d instantiations (want %d), last %v, max %v", id, s.Compile, s.Instantiations, n,
			s.InstantiateLast, s.InstantiateMax)
	}
	t.Logf("%s in %s: compile %v (cache %s), %d instantiations, last %v, max %v", id, ws[:8], s.Compile, s.CompileCache,
		s.Instantiations, s.InstantiateLast, s.InstantiateMax)
	return s
}

// TestColdStartCacheDir: with a CacheDir, the first load of a module compiles it (a miss), a load of the same
// module in another workspace finds it in memory and a restart (a new engine on the same folder) finds it in
// the folder (hits); without a CacheDir a hit cannot be told from a miss. Each is reported to OnCompile, and
// each instance to OnInstantiate.
func TestColdStartCacheDir(t *testing.T) {
	wasm := abiModule().bytes()
	dir := t.TempDir()
	var heard coldStartHeard
	opts := testOptions(t)
	opts.cache, opts.CacheDir = nil, dir
	heard.hook(t, &opts)

	first := newEngine(t, opts)
	load(t, first, wsA, "m", wasm)
	if s := coldStats(t, first, wsA, "m", 1); s.CompileCache != CacheMiss {
		t.Errorf("first compile into an empty CacheDir: %q, want a miss", s.CompileCache)
	}
	load(t, first, wsB, "m", wasm)
	if s := coldStats(t, first, wsB, "m", 1); s.CompileCache != CacheHit {
		t.Errorf("the same module in another workspace: %q, want a hit (compiled in memory)", s.CompileCache)
	}
	compiles, instantiated := heard.take()
	if len(compiles) != 2 || compiles[0] != "m miss" || compiles[1] != "m hit" || instantiated["m"] != 2 {
		t.Errorf("heard compiles %q and instantiations %v, want [m miss, m hit] and 2", compiles, instantiated)
	}

	// A restart: a new engine over the same folder, nothing in memory.
	second := newEngine(t, opts)
	load(t, second, wsA, "m", wasm)
	if s := coldStats(t, second, wsA, "m", 1); s.CompileCache != CacheHit {
		t.Errorf("after a restart: %q, want a hit (compiled code read from CacheDir)", s.CompileCache)
	}
	if compiles, _ := heard.take(); len(compiles) != 1 || compiles[0] != "m hit" {
		t.Errorf("heard compiles %q after the restart, want [m hit]", compiles)
	}

	// Loading the current version's bytes again loads nothing: nothing is heard, the figures stay.
	load(t, second, wsA, "m", wasm)
	coldStats(t, second, wsA, "m", 1)
	if compiles, instantiated := heard.take(); len(compiles) != 0 || len(instantiated) != 0 {
		t.Errorf("a no-op load was heard: %q %v", compiles, instantiated)
	}

	noDir := newEngine(t, testOptions(t))
	load(t, noDir, wsA, "m", wasm)
	if s := coldStats(t, noDir, wsA, "m", 1); s.CompileCache != CacheUnknown {
		t.Errorf("without a CacheDir: %q, want unknown", s.CompileCache)
	}
}

// TestColdStartGoGuest: a real Go guest loaded by a restarted engine (the run's compilation cache folder, into
// which the guests were compiled at the start) comes from the cache; every new instance of the current
// version is counted, a new version starts its own figures.
func TestColdStartGoGuest(t *testing.T) {
	wasm := guest(t, "basic")
	var heard coldStartHeard
	opts := testOptions(t)
	opts.cache, opts.CacheDir = nil, filepath.Join(testDir, "wasm-cache")
	heard.hook(t, &opts)
	e := newEngine(t, opts)

	load(t, e, wsA, "basic", wasm)
	if s := coldStats(t, e, wsA, "basic", 1); s.CompileCache != CacheHit {
		t.Errorf("a Go guest compiled before the restart: %q, want a hit", s.CompileCache)
	}
	call(t, e, wsA, "basic", hostapi.KindCheck, &hostapi.Input{CheckID: "pass"}, nil)
	coldStats(t, e, wsA, "basic", 1) // the call took the instance made at load

	// The janitor closes the idle instance; the next call makes a new one, which is timed.
	e.evictIdle(time.Now().Add(2 * e.opts.IdleTimeout))
	call(t, e, wsA, "basic", hostapi.KindCheck, &hostapi.Input{CheckID: "pass"}, nil)
	coldStats(t, e, wsA, "basic", 2)

	load(t, e, wsA, "basic", guest(t, "basic-v2"))
	if s := coldStats(t, e, wsA, "basic", 1); s.CompileCache != CacheHit {
		t.Errorf("the new version: %q, want a hit", s.CompileCache)
	}
	compiles, instantiated := heard.take()
	if len(compiles) != 2 || compiles[0] != "basic hit" || compiles[1] != "basic hit" || instantiated["basic"] != 3 {
		t.Errorf("heard compiles %q and instantiations %v, want [basic hit, basic hit] and 3", compiles, instantiated)
	}
}

// An upload validates, then loads: the load finds the module compiled by the validation, and reports that
// compile (a miss into an empty CacheDir), once; a later load elsewhere is a hit again.
func TestColdStartUploadReportsValidationCompile(t *testing.T) {
	wasm := abiModule().bytes()
	opts := testOptions(t)
	opts.cache, opts.CacheDir = nil, t.TempDir()
	e := newEngine(t, opts)
	if err := e.Validate(context.Background(), wasm); err != nil {
		t.Fatal(err)
	}
	load(t, e, wsA, "m", wasm)
	if s := coldStats(t, e, wsA, "m", 1); s.CompileCache != CacheMiss || s.Compile <= 0 {
		t.Errorf("the upload's load: %q %v, want the validation's miss", s.CompileCache, s.Compile)
	}
	load(t, e, wsB, "m", wasm)
	if s := coldStats(t, e, wsB, "m", 1); s.CompileCache != CacheHit {
		t.Errorf("a later load of the same module: %q, want a hit", s.CompileCache)
	}
}
