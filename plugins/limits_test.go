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
	"testing"
	"time"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// wantStatus fails unless err is a *gwerr.Error with status whose message holds every one of want.
func wantStatus(t *testing.T, err error, status int, want ...string) *gwerr.Error {
	t.Helper()
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Status != status {
		t.Fatalf("err = %v, want a *gwerr.Error %d", err, status)
	}
	for _, w := range want {
		if !strings.Contains(ge.Message, w) {
			t.Errorf("message %q lacks %q", ge.Message, w)
		}
	}
	return ge
}

// TestCommandModuleRefused loads the basic guest built without -buildmode=c-shared: a WASI command whose Go
// runtime the host never starts, so that every call would trap in gateway_alloc. Validate and Load refuse it,
// naming the build flag; a hand-made command is refused too.
func TestCommandModuleRefused(t *testing.T) {
	e := newEngine(t, testOptions(t))
	ctx := context.Background()
	command := abiModule()
	command.command = true
	for name, wasm := range map[string][]byte{"Go guest": guest(t, "basic-command"), "hand-made": command.bytes()} {
		t.Run(name, func(t *testing.T) {
			wantStatus(t, e.Validate(ctx, wasm), http.StatusBadRequest, "WASI command", "-buildmode=c-shared")
			wantStatus(t, e.Load(ctx, wsA, "cmd", wasm), http.StatusBadRequest, "WASI command", "-buildmode=c-shared")
			if ids := e.Loaded(wsA); len(ids) != 0 {
				t.Errorf("Loaded = %v", ids)
			}
		})
	}
}

// TestFirstCallTraps loads a module whose gateway_alloc traps (as a Go guest's does when its runtime was never
// initialised): the smoke call at load finds it.
func TestFirstCallTraps(t *testing.T) {
	e := newEngine(t, testOptions(t))
	m := abiModule()
	m.funcs = maps(m.funcs)
	m.funcs["gateway_alloc"] = wasmFunc{params: fnAlloc.params, results: fnAlloc.results, body: []byte{0x00}} // unreachable
	wantStatus(t, e.Load(context.Background(), wsA, "p", m.bytes()), http.StatusBadRequest, "fails its first call, gateway_alloc(16)")
	m.funcs["gateway_alloc"] = wasmFunc{params: fnAlloc.params, results: fnAlloc.results, body: []byte{0x41, 0x7f}} // i32.const -1
	wantStatus(t, e.Load(context.Background(), wsA, "p", m.bytes()), http.StatusBadRequest, "outside the module's memory")
	if ids := e.Loaded(wsA); len(ids) != 0 {
		t.Errorf("Loaded = %v", ids)
	}
}

// TestFailedUpdateKeepsServing replaces a working plugin with modules that do not load: each is refused and the
// working version keeps answering; an Install's save is not called for them, and a save that fails keeps the
// old version too.
func TestFailedUpdateKeepsServing(t *testing.T) {
	e := newEngine(t, testOptions(t))
	ctx := context.Background()
	v1 := guest(t, "basic")
	load(t, e, wsA, "p", v1)
	before, _ := e.Stats(wsA, "p")
	trap := abiModule()
	trap.initial = "trap"
	saved := 0
	save := func() error { saved++; return nil }
	for name, wasm := range map[string][]byte{
		"not wasm":      []byte("\x00asm nonsense"),
		"breaks ABI":    guest(t, "badabi"),
		"command":       guest(t, "basic-command"),
		"traps in init": trap.bytes(),
	} {
		err := e.Install(ctx, wsA, "p", wasm, save)
		wantStatus(t, err, http.StatusBadRequest)
		out := call(t, e, wsA, "p", hostapi.KindCheck, &hostapi.Input{CheckID: "version"}, nil)
		if st, _ := e.Stats(wsA, "p"); string(out.Data) != `{"version":"v1"}` || st.SHA256 != before.SHA256 {
			t.Errorf("after %s: answers %s, sha256 %s", name, out.Data, st.SHA256)
		}
	}
	if saved != 0 {
		t.Errorf("save ran %d times for modules that did not load", saved)
	}
	failing := errors.New("disk full")
	if err := e.Install(ctx, wsA, "p", guest(t, "basic-v2"), func() error { return failing }); !errors.Is(err, failing) {
		t.Fatalf("Install with a failing save = %v", err)
	}
	if out := call(t, e, wsA, "p", hostapi.KindCheck, &hostapi.Input{CheckID: "version"}, nil); string(out.Data) != `{"version":"v1"}` {
		t.Errorf("a version whose save failed serves: %s", out.Data)
	}
	if err := e.Install(ctx, wsA, "p", guest(t, "basic-v2"), save); err != nil || saved != 1 {
		t.Fatalf("Install = %v, saved %d times", err, saved)
	}
	if out := call(t, e, wsA, "p", hostapi.KindCheck, &hostapi.Input{CheckID: "version"}, nil); string(out.Data) != `{"version":"v2"}` {
		t.Errorf("after a good update: %s", out.Data)
	}
}

// TestErrorsNotRepeated checks that a refused module's error says its cause once.
func TestErrorsNotRepeated(t *testing.T) {
	e := newEngine(t, testOptions(t))
	trap := abiModule()
	trap.initial = "trap"
	for name, err := range map[string]error{
		"Validate": e.Validate(context.Background(), []byte("not a module")),
		"Load":     e.Load(context.Background(), wsA, "p", []byte("not a module")),
		"init":     e.Load(context.Background(), wsA, "p", trap.bytes()),
	} {
		msg := err.Error()
		for _, cause := range []string{"invalid magic number", "unreachable"} {
			if n := strings.Count(msg, cause); n > 1 {
				t.Errorf("%s: %q says %q %d times", name, msg, cause, n)
			}
		}
	}
}

// TestWorkspaceBounds loads plugins past the workspace's count and memory bounds: each is refused with a 409
// naming the flag and nothing changes; another workspace has bounds of its own.
func TestWorkspaceBounds(t *testing.T) {
	opts := testOptions(t)
	opts.MemoryLimitMiB = 1 // 16 pages per instance for modules without a maximum
	opts.PluginsPerWorkspace = 3
	opts.MemoryPerWorkspace = 2 << 20
	e := newEngine(t, opts)
	ctx := context.Background()
	small, big := abiModule(), abiModule()
	small.maxPages = 4 // 256 KiB
	load(t, e, wsA, "big", big.bytes())
	if st, _ := e.Stats(wsA, "big"); st.Memory != 1<<20 {
		t.Errorf("a module without a maximum is charged %d bytes, want the 1 MiB limit", st.Memory)
	}
	load(t, e, wsA, "small", small.bytes())
	if st, _ := e.Stats(wsA, "small"); st.Memory != 4<<16 {
		t.Errorf("a module of 4 pages at most is charged %d bytes", st.Memory)
	}
	// 1 MiB + 256 KiB + 1 MiB > 2 MiB, as a new plugin or as a new version of small.
	wantStatus(t, e.Load(ctx, wsA, "big2", big.bytes()), http.StatusConflict, "--plugin-memory-per-workspace", "2 MiB")
	small2 := small
	small2.maxPages = 3
	load(t, e, wsA, "third", small2.bytes())
	wantStatus(t, e.Load(ctx, wsA, "small", big.bytes()), http.StatusConflict, "--plugin-memory-per-workspace")
	if st, _ := e.Stats(wsA, "small"); st.Memory != 4<<16 {
		t.Errorf("a refused version replaced small: %+v", st)
	}
	wantStatus(t, e.Load(ctx, wsA, "fourth", small2.bytes()), http.StatusConflict, "3 plugins", "--plugins-per-workspace")
	load(t, e, wsA, "third", small.bytes()) // a new version of a plugin does not count twice
	if got := e.Loaded(wsA); len(got) != 3 {
		t.Errorf("Loaded = %v", got)
	}
	load(t, e, wsB, "fourth", big.bytes())
	load(t, e, wsB, "fifth", big.bytes())
}

// TestMemoryBoundAtCallTime runs more long calls than the workspace's memory holds instances for: the engine
// closes another plugin's idle instance to make room, then makes the rest wait, and the memory charged never
// exceeds the bound.
func TestMemoryBoundAtCallTime(t *testing.T) {
	opts := testOptions(t)
	opts.MemoryLimitMiB = 1
	opts.MemoryPerWorkspace = 2 << 20 // two instances of a module without a maximum
	opts.MaxInstances = 4
	opts.CallTimeout = 200 * time.Millisecond
	e := newEngine(t, opts)
	slow := abiModule()
	slow.funcs = maps(slow.funcs)
	// loop br 0 end; i64.const 0: runs until the deadline.
	slow.funcs["gateway_call"] = wasmFunc{params: fnCall.params, results: fnCall.results, body: []byte{0x03, 0x40, 0x0c, 0x00, 0x0b, 0x42, 0x00}}
	load(t, e, wsA, "slow", slow.bytes())
	load(t, e, wsA, "other", abiModule().bytes())
	e.mu.RLock()
	ws := e.workspaces[wsA]
	e.mu.RUnlock()
	used := func() int64 {
		ws.memMu.Lock()
		defer ws.memMu.Unlock()
		return ws.memUsed
	}

	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if u := used(); u > peak.Load() {
				peak.Store(u)
			}
			select {
			case <-stop:
				return
			default:
				time.Sleep(time.Millisecond)
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			_, err := e.Call(context.Background(), wsA, "slow", hostapi.KindCheck, &hostapi.Input{}, nil)
			errs <- err
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	close(errs)
	for err := range errs {
		if !errors.Is(err, ErrTimeout) {
			t.Errorf("a slow call = %v, want ErrTimeout", err)
		}
	}
	t.Logf("peak charge %d of %d bytes", peak.Load(), opts.MemoryPerWorkspace)
	if p := peak.Load(); p > opts.MemoryPerWorkspace {
		t.Errorf("the workspace's instances were charged %d bytes at the peak, over the bound of %d", p, opts.MemoryPerWorkspace)
	}
	// The other plugin still runs, on memory freed by the failed instances.
	call(t, e, wsA, "other", hostapi.KindCheck, &hostapi.Input{}, nil)
	a, _ := e.Stats(wsA, "slow")
	b, _ := e.Stats(wsA, "other")
	if got, want := used(), int64(a.Instances)*a.Memory+int64(b.Instances)*b.Memory; got != want || got > opts.MemoryPerWorkspace {
		t.Errorf("charged %d bytes for %d+%d instances (%d)", got, a.Instances, b.Instances, want)
	}
}

// TestLogFlood runs a guest that logs 10,000 lines in one call: LogLinesPerCall are written, the rest dropped and
// counted, and one summary line reports them; the per-plugin rate bounds the lines of calls together.
func TestLogFlood(t *testing.T) {
	opts := testOptions(t)
	logs := newRecords()
	opts.Logger = slog.New(logs)
	e := newEngine(t, opts)
	load(t, e, wsA, "p", guest(t, "basic"))
	count := func(msg string) int {
		logs.mu.Lock()
		defer logs.mu.Unlock()
		n := 0
		for _, r := range *logs.recs {
			if r.Message == msg {
				n++
			}
		}
		return n
	}
	flood := &hostapi.Input{CheckID: "flood", Text: "flooding", Params: []hostapi.KV{{Key: "lines", Value: "10000"}}}
	call(t, e, wsA, "p", hostapi.KindCheck, flood, nil)
	if n := count("flooding"); n != DefaultLogLinesPerCall {
		t.Errorf("one call wrote %d lines, want %d", n, DefaultLogLinesPerCall)
	}
	st, _ := e.Stats(wsA, "p")
	if st.LogLinesDropped != 10000-DefaultLogLinesPerCall {
		t.Errorf("LogLinesDropped = %d, want %d", st.LogLinesDropped, 10000-DefaultLogLinesPerCall)
	}
	attrs, level, ok := logs.find("plugin log lines dropped")
	if !ok || level != slog.LevelWarn || attrs["dropped"] != fmt.Sprint(10000-DefaultLogLinesPerCall) || attrs["plugin"] != "p" {
		t.Errorf("summary line: %v %v %v", ok, level, attrs)
	}
	call(t, e, wsA, "p", hostapi.KindCheck, flood, nil)
	if n := count("plugin log lines dropped"); n != 1 {
		t.Errorf("%d summary lines after two calls, want 1 (at most one every %v)", n, logSummaryEvery)
	}
	if st, _ := e.Stats(wsA, "p"); st.LogLinesDropped != 2*(10000-DefaultLogLinesPerCall) {
		t.Errorf("LogLinesDropped = %d after two calls", st.LogLinesDropped)
	}

	// The plugin's rate: a bucket of 4 s worth of lines, shared by its calls.
	opts.LogLinesPerSecond = 1
	slowLog := newRecords()
	opts.Logger = slog.New(slowLog)
	e2 := newEngine(t, opts)
	load(t, e2, wsA, "p", guest(t, "basic"))
	call(t, e2, wsA, "p", hostapi.KindCheck, flood, nil)
	if _, _, ok := slowLog.find("flooding"); !ok {
		t.Fatal("no line written")
	}
	slowLog.mu.Lock()
	n := 0
	for _, r := range *slowLog.recs {
		if r.Message == "flooding" {
			n++
		}
	}
	slowLog.mu.Unlock()
	if n != 4 {
		t.Errorf("a plugin allowed 1 line a second wrote %d lines at once, want its burst of 4", n)
	}
}

// TestLoadStoredSkipsKnownBad stores a module that fails to load: the first LoadStored marks it in the store,
// the next skips it without loading it, and storing the plugin again clears the mark.
func TestLoadStoredSkipsKnownBad(t *testing.T) {
	st, err := storage.Open("mem", storage.Options{MasterKey: make([]byte, storage.MasterKeySize), InMemory: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Workspaces.Put(&storage.Workspace{ID: wsA, Slug: "a", OrganisationID: "33333333-3333-4333-8333-333333333333"}); err != nil {
		t.Fatal(err)
	}
	trap := abiModule()
	trap.initial = "trap"
	if _, _, err := st.Plugins.Put(wsA, "bad", trap.bytes()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Plugins.Put(wsA, "good", abiModule().bytes()); err != nil {
		t.Fatal(err)
	}
	loop := abiModule()
	loop.initial = "loop"
	if _, _, err := st.Plugins.Put(wsA, "slow", loop.bytes()); err != nil { // runs out of time: may load another time
		t.Fatal(err)
	}
	start := func() *records {
		opts := testOptions(t)
		opts.initTimeout = 100 * time.Millisecond
		logs := newRecords()
		opts.Logger = slog.New(logs)
		e := newEngine(t, opts)
		if err := e.LoadStored(context.Background(), st); err != nil {
			t.Fatal(err)
		}
		if ids := e.Loaded(wsA); len(ids) != 1 || ids[0] != "good" {
			t.Errorf("Loaded = %v", ids)
		}
		return logs
	}
	logs := start()
	if a, _, _ := logs.find("plugins: stored plugins loaded"); a["failed"] != "2" || a["skipped"] != "0" {
		t.Errorf("first start: %v", a)
	}
	meta, _ := st.Plugins.Get(wsA, "bad")
	if !strings.Contains(meta.LoadError, "does not initialise") {
		t.Fatalf("the failure is not recorded: %+v", meta)
	}
	if meta, _ := st.Plugins.Get(wsA, "slow"); meta.LoadError != "" {
		t.Errorf("a deadline was recorded as the module's fault: %q", meta.LoadError)
	}
	logs = start()
	if a, _, _ := logs.find("plugins: stored plugins loaded"); a["failed"] != "1" || a["skipped"] != "1" {
		t.Errorf("second start: %v", a)
	}
	if _, _, ok := logs.find("plugins: skipping a stored plugin that failed to load before; store it again to retry"); !ok {
		t.Error("the skipped plugin is not logged")
	}
	if _, _, err := st.Plugins.Put(wsA, "bad", trap.bytes()); err != nil {
		t.Fatal(err)
	}
	if meta, _ := st.Plugins.Get(wsA, "bad"); meta.LoadError != "" {
		t.Errorf("storing again keeps the mark %q", meta.LoadError)
	}
}

// TestMemoryHammer calls three plugins from 8 goroutines for about a second while they are swapped, in a
// workspace whose memory holds only three instances: every call must succeed (instances are closed and made
// for one another, nobody waits forever), the charge never passes the bound, and at the end it matches the
// live instances exactly.
func TestMemoryHammer(t *testing.T) {
	opts := testOptions(t)
	opts.Logger = slog.New(slog.DiscardHandler)
	opts.MemoryLimitMiB = 1
	opts.MemoryPerWorkspace = 3 << 20
	opts.CallTimeout = 5 * time.Second
	e := newEngine(t, opts)
	ids := []string{"p0", "p1", "p2"}
	versions := [][]byte{abiModule().bytes(), append(abiModule().bytes(), 0x00, 0x03, 0x01, 'v', 0x02)}
	for _, id := range ids {
		load(t, e, wsA, id, versions[0])
	}
	e.mu.RLock()
	ws := e.workspaces[wsA]
	e.mu.RUnlock()
	used := func() int64 {
		ws.memMu.Lock()
		defer ws.memMu.Unlock()
		return ws.memUsed
	}

	var (
		stop  atomic.Bool
		calls atomic.Int64
		peak  atomic.Int64
		wg    sync.WaitGroup
		fails = make(chan error, 8)
	)
	for g := range 8 {
		wg.Go(func() {
			for i := g; !stop.Load(); i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := e.Call(ctx, wsA, ids[i%len(ids)], hostapi.KindCheck, &hostapi.Input{Text: "x"}, nil)
				cancel()
				calls.Add(1)
				if u := used(); u > peak.Load() {
					peak.Store(u)
				}
				if err != nil {
					select {
					case fails <- err:
					default:
					}
				}
			}
		})
	}
	for i := range 10 {
		time.Sleep(100 * time.Millisecond)
		load(t, e, wsA, ids[i%len(ids)], versions[(i/len(ids)+1)%2])
	}
	stop.Store(true)
	wg.Wait()
	close(fails)
	for err := range fails {
		t.Error(err)
	}
	t.Logf("%d calls, peak charge %d of %d bytes", calls.Load(), peak.Load(), opts.MemoryPerWorkspace)
	if p := peak.Load(); p > opts.MemoryPerWorkspace {
		t.Errorf("peak charge %d over the bound", p)
	}
	// Retired versions close their instances once their last caller leaves, which has happened by now.
	var live int64
	for _, id := range ids {
		st, _ := e.Stats(wsA, id)
		live += int64(st.Instances) * st.Memory
	}
	if got := used(); got != live {
		t.Errorf("charged %d bytes, live instances hold %d", got, live)
	}
}

func TestBoundOptions(t *testing.T) {
	if _, err := New(Options{MemoryPerWorkspace: 32 << 20}); err == nil || !strings.Contains(err.Error(), "--plugin-memory-per-workspace") {
		t.Errorf("New with room for no instance = %v", err)
	}
	o := Options{}
	o.EnsureDefaults()
	if o.PluginsPerWorkspace != 32 || o.MemoryPerWorkspace != 1<<30 || o.LogLinesPerCall != 16 || o.LogLinesPerSecond != 50 {
		t.Errorf("defaults %+v", o)
	}
}
