package routes

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/metrics"
	"github.com/llmgw/gateway/plugins"
	"github.com/llmgw/gateway/runtime/gwerr"
)

// fakePluginHost validates by the wasm magic and records what was loaded and removed.
type fakePluginHost struct {
	mu      sync.Mutex
	loaded  map[string][]byte // workspace/id → bytes
	removed []string
}

func (h *fakePluginHost) Validate(_ context.Context, wasm []byte) error {
	if !bytes.HasPrefix(wasm, []byte("\x00asm")) {
		return gwerr.BadRequest("body", "not a WebAssembly module")
	}
	if bytes.Contains(wasm, []byte("no-exports")) {
		return gwerr.BadRequest("body", `missing export "gateway_call"`)
	}
	return nil
}

// Install refuses a module containing "bad-load" as the engine refuses one that traps in _initialize, and one
// containing "too-big" as it refuses one past the workspace's memory bound.
func (h *fakePluginHost) Install(_ context.Context, ws, id string, wasm []byte, save func() error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case bytes.Contains(wasm, []byte("bad-load")):
		return gwerr.BadRequest("body", "plugin %q does not initialise: unreachable", id)
	case bytes.Contains(wasm, []byte("too-big")):
		return gwerr.New(409, gwerr.CodeConflict, "more than the 1024 MiB allowed (--plugin-memory-per-workspace)")
	}
	if err := save(); err != nil {
		return err
	}
	if h.loaded == nil {
		h.loaded = map[string][]byte{}
	}
	h.loaded[ws+"/"+id] = wasm
	return nil
}

func (h *fakePluginHost) Remove(ws, id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, had := h.loaded[ws+"/"+id]
	delete(h.loaded, ws+"/"+id)
	h.removed = append(h.removed, ws+"/"+id)
	return had
}

func (f *fixture) putWasm(t *testing.T, key, id, contentType string, wasm []byte) answer {
	t.Helper()
	req := httptest.NewRequest("PUT", "/v1/plugins/"+id, bytes.NewReader(wasm))
	req.Header.Set(HeaderAPIKey, key)
	req.Header.Set("Content-Type", contentType)
	resp, err := f.srv.Handler().Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

func TestPluginEndpoints(t *testing.T) {
	host := &fakePluginHost{}
	f := newFixture(t, Options{Plugins: host})
	module := []byte("\x00asm\x01\x00\x00\x00 v1")

	a := f.putWasm(t, f.admin, "pii", "application/wasm", module)
	if a.status != 200 || a.json(t)["sha256"] == "" || a.json(t)["size"] != float64(len(module)) {
		t.Fatalf("put: %d %s", a.status, a.body)
	}
	if !bytes.Equal(host.loaded[f.ws.ID+"/pii"], module) {
		t.Error("the module was not loaded into the engine")
	}
	if stored, err := f.store.Plugins.Wasm(f.ws.ID, "pii"); err != nil || !bytes.Equal(stored, module) {
		t.Errorf("stored bytes: %v", err)
	}
	// A new version replaces the old one.
	v2 := []byte("\x00asm\x01\x00\x00\x00 v2")
	if a = f.putWasm(t, f.admin, "pii", "application/octet-stream", v2); a.status != 200 || !bytes.Equal(host.loaded[f.ws.ID+"/pii"], v2) {
		t.Fatalf("put v2: %d %s", a.status, a.body)
	}

	// An update that does not load, or does not fit, leaves the stored and loaded module as it was.
	for _, bad := range []struct {
		wasm   string
		status int
		code   string
		param  any
	}{{"\x00asm\x01\x00\x00\x00 bad-load", 400, "invalid_request", "body"}, {"\x00asm\x01\x00\x00\x00 too-big", 409, "conflict", nil}} {
		checkError(t, f.putWasm(t, f.admin, "pii", "application/wasm", []byte(bad.wasm)), bad.status, bad.code, bad.param)
		if stored, err := f.store.Plugins.Wasm(f.ws.ID, "pii"); err != nil || !bytes.Equal(stored, v2) {
			t.Fatalf("after a failed update the store holds %q (%v), want v2", stored, err)
		}
		if got := f.do(t, "GET", "/v1/plugins/pii", "", HeaderAPIKey, f.admin).json(t)["sha256"]; got != a.json(t)["sha256"] {
			t.Fatalf("after a failed update GET says sha256 %v, want v2's %v", got, a.json(t)["sha256"])
		}
		if !bytes.Equal(host.loaded[f.ws.ID+"/pii"], v2) {
			t.Fatal("after a failed update v2 is no longer loaded")
		}
	}
	checkError(t, f.putWasm(t, f.admin, "new", "application/wasm", []byte("\x00asm\x01\x00\x00\x00 bad-load")), 400, "invalid_request", "body")
	if _, err := f.store.Plugins.Get(f.ws.ID, "new"); err == nil {
		t.Error("a module that did not load was stored")
	}

	checkError(t, f.putWasm(t, f.admin, "bad", "application/wasm", []byte("hello")), 400, "invalid_request", "body")
	checkError(t, f.putWasm(t, f.admin, "bad", "application/wasm", []byte("\x00asm no-exports")), 400, "invalid_request", "body")
	checkError(t, f.putWasm(t, f.admin, "bad", "application/json", module), 415, "unsupported_media_type", "content-type")
	checkError(t, f.putWasm(t, f.admin, "a%2Fb", "application/wasm", module), 400, "invalid_request", "id")
	checkError(t, f.putWasm(t, f.plain, "pii", "application/wasm", module), 403, "forbidden", nil)
	if _, err := f.store.Plugins.Get(f.ws.ID, "bad"); err == nil {
		t.Error("a refused module was stored")
	}

	list := f.do(t, "GET", "/v1/plugins", "", HeaderAPIKey, f.admin)
	if data := list.json(t)["data"].([]any); len(data) != 1 || data[0].(map[string]any)["id"] != "pii" {
		t.Fatalf("list: %s", list.body)
	}
	// Another workspace sees nothing of it.
	if data := f.do(t, "GET", "/v1/plugins", "", HeaderAPIKey, f.otherKey).json(t)["data"].([]any); len(data) != 0 {
		t.Fatalf("other workspace lists %v", data)
	}
	checkError(t, f.do(t, "GET", "/v1/plugins/pii", "", HeaderAPIKey, f.otherKey), 404, "not_found", nil)
	checkError(t, f.do(t, "DELETE", "/v1/plugins/pii", "", HeaderAPIKey, f.otherKey), 404, "not_found", nil)

	if a = f.do(t, "DELETE", "/v1/plugins/pii", "", HeaderAPIKey, f.admin); a.status != 200 {
		t.Fatalf("delete: %d %s", a.status, a.body)
	}
	if _, ok := host.loaded[f.ws.ID+"/pii"]; ok {
		t.Error("a deleted plugin stays loaded")
	}
	checkError(t, f.do(t, "GET", "/v1/plugins/pii", "", HeaderAPIKey, f.admin), 404, "not_found", nil)
}

func TestPluginEndpointsWithoutAnEngine(t *testing.T) {
	f := newFixture(t, Options{})
	checkError(t, f.putWasm(t, f.admin, "pii", "application/wasm", []byte("\x00asm\x01\x00\x00\x00")), 503, "unavailable", nil)
}

// Hand-made ABI v1 modules (made with package plugins' test encoder): gateway_call returns 0 (pass).
const (
	// wasmSmall declares a memory of at most one page (64 KiB).
	wasmSmall = "\x00asm\x01\x00\x00\x00\x01\x10\x03`\x00\x00`\x01\x7f\x01\x7f`\x03\x7f\x7f\x7f\x01~\x03\x04\x03\x00\x01\x02\x05\x04\x01\x01\x01\x01\a:\x04\x0egateway_abi_v1\x00\x00\rgateway_alloc\x00\x01\fgateway_call\x00\x02\x06memory\x02\x00\n\x0e\x03\x02\x00\v\x04\x00A\x00\v\x04\x00B\x00\v"
	// wasmTrapInit is wasmSmall with an _initialize that traps.
	wasmTrapInit = "\x00asm\x01\x00\x00\x00\x01\x10\x03`\x00\x00`\x01\x7f\x01\x7f`\x03\x7f\x7f\x7f\x01~\x03\x05\x04\x00\x01\x02\x00\x05\x04\x01\x01\x01\x01\aH\x05\x0egateway_abi_v1\x00\x00\rgateway_alloc\x00\x01\fgateway_call\x00\x02\v_initialize\x00\x03\x06memory\x02\x00\n\x12\x04\x02\x00\v\x04\x00A\x00\v\x04\x00B\x00\v\x03\x00\x00\v"
	// wasmNoMax declares no maximum memory, so each instance may grow to the engine's per-instance limit.
	wasmNoMax = "\x00asm\x01\x00\x00\x00\x01\x10\x03`\x01\x7f\x01\x7f`\x03\x7f\x7f\x7f\x01~`\x00\x00\x03\x04\x03\x00\x01\x02\x05\x03\x01\x00\x01\a:\x04\rgateway_alloc\x00\x00\fgateway_call\x00\x01\x0egateway_abi_v1\x00\x02\x06memory\x02\x00\n\x0e\x03\x04\x00A\x00\v\x04\x00B\x00\v\x02\x00\v"
)

// TestPluginUploadsWithTheEngine uploads hand-made modules to the real engine: a failed update leaves the
// good module stored and serving, and uploads past the workspace's plugin count or memory bound are refused
// with a 409 naming the flag, and not stored.
func TestPluginUploadsWithTheEngine(t *testing.T) {
	engine, err := plugins.New(plugins.Options{Logger: slog.New(slog.DiscardHandler),
		PluginsPerWorkspace: 3, MemoryPerWorkspace: plugins.DefaultMemoryLimitMiB << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { engine.Close(context.Background()) })
	f := newFixture(t, Options{Plugins: engine})
	put := func(id, wasm string) answer { return f.putWasm(t, f.admin, id, "application/wasm", []byte(wasm)) }
	stored := func(id string) string {
		b, err := f.store.Plugins.Wasm(f.ws.ID, id)
		if err != nil {
			return ""
		}
		return string(b)
	}

	for _, id := range []string{"a", "b"} {
		if a := put(id, wasmSmall); a.status != 200 {
			t.Fatalf("put %s: %d %s", id, a.status, a.body)
		}
	}
	// A failed update: 400, the good module stays stored and loaded.
	a := put("a", wasmTrapInit)
	checkError(t, a, 400, "invalid_request", "body")
	if !strings.Contains(string(a.body), "does not initialise") || stored("a") != wasmSmall {
		t.Fatalf("failed update: %s; stored module changed: %v", a.body, stored("a") != wasmSmall)
	}
	if st, ok := engine.Stats(f.ws.ID, "a"); !ok || st.SHA256 != f.do(t, "GET", "/v1/plugins/a", "", HeaderAPIKey, f.admin).json(t)["sha256"] {
		t.Fatalf("the engine serves %+v, not the stored module", st)
	}

	// Memory: a module without a maximum is charged the whole 64 MiB per instance, which does not fit beside a
	// and b, as a new plugin or as an update.
	for _, id := range []string{"big", "a"} {
		a = put(id, wasmNoMax)
		checkError(t, a, 409, "conflict", "body")
		if !strings.Contains(string(a.body), "--plugin-memory-per-workspace") {
			t.Errorf("the memory refusal does not name the flag: %s", a.body)
		}
	}
	if stored("big") != "" || stored("a") != wasmSmall {
		t.Fatal("a module past the memory bound was stored")
	}

	// Count: a third plugin fits, a fourth does not; replacing one does not count twice.
	if a = put("c", wasmSmall); a.status != 200 {
		t.Fatalf("put c: %d %s", a.status, a.body)
	}
	a = put("d", wasmSmall)
	checkError(t, a, 409, "conflict", "id")
	if !strings.Contains(string(a.body), "--plugins-per-workspace") || stored("d") != "" {
		t.Fatalf("the count refusal: %s (stored %v)", a.body, stored("d") != "")
	}
	if a = put("c", wasmSmall+"\x00\x03\x01x\x00"); a.status != 200 { // a custom section "x" makes other bytes
		t.Fatalf("replacing c at the count bound: %d %s", a.status, a.body)
	}
	// Another workspace has bounds of its own.
	if a = f.putWasm(t, f.otherKey, "d", "application/wasm", []byte(wasmNoMax)); a.status != 200 {
		t.Fatalf("put in another workspace: %d %s", a.status, a.body)
	}
}

// TestPluginLoadFigures: GET /v1/plugins and /v1/plugins/{id} (and the PUT's answer) show what loading the
// stored module cost the engine: compile_ms, compiled_from_cache (with a cache folder; after an upload the
// validation compiled the module just before, so the load found it cached) and instantiate_ms. A module the
// engine does not serve shows none, and without a cache folder compiled_from_cache is absent.
func TestPluginLoadFigures(t *testing.T) {
	for _, cacheDir := range []string{t.TempDir(), ""} {
		engine, err := plugins.New(plugins.Options{Logger: slog.New(slog.DiscardHandler), CacheDir: cacheDir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { engine.Close(context.Background()) })
		f := newFixture(t, Options{Plugins: engine})
		checkFigures := func(where string, v map[string]any) {
			t.Helper()
			if _, ok := v["compile_ms"].(float64); !ok {
				t.Errorf("%s: compile_ms %v", where, v["compile_ms"])
			}
			// An upload reports its validation's compile: into a fresh cache folder, not from the cache.
			if fromCache, ok := v["compiled_from_cache"]; cacheDir != "" && fromCache != false || cacheDir == "" && ok {
				t.Errorf("%s with cache folder %q: compiled_from_cache %v", where, cacheDir, fromCache)
			}
			inst, _ := v["instantiate_ms"].(map[string]any)
			_, last := inst["last"].(float64)
			_, hasMax := inst["max"].(float64)
			if !last || !hasMax || inst["count"] != float64(1) {
				t.Errorf("%s: instantiate_ms %v", where, v["instantiate_ms"])
			}
		}
		a := f.putWasm(t, f.admin, "a", "application/wasm", []byte(wasmSmall))
		if a.status != 200 {
			t.Fatalf("put: %d %s", a.status, a.body)
		}
		checkFigures("PUT", a.json(t))
		checkFigures("GET", f.do(t, "GET", "/v1/plugins/a", "", HeaderAPIKey, f.admin).json(t))
		list := f.do(t, "GET", "/v1/plugins", "", HeaderAPIKey, f.admin).json(t)["data"].([]any)
		if len(list) != 1 {
			t.Fatalf("list: %v", list)
		}
		checkFigures("list", list[0].(map[string]any))

		// Stored but not served (as by another replica, not yet synced): no figures.
		if _, _, err := f.store.Plugins.Put(f.ws.ID, "b", []byte(wasmNoMax)); err != nil {
			t.Fatal(err)
		}
		b := f.do(t, "GET", "/v1/plugins/b", "", HeaderAPIKey, f.admin).json(t)
		for _, field := range []string{"compile_ms", "compiled_from_cache", "instantiate_ms"} {
			if v, ok := b[field]; ok {
				t.Errorf("a module the engine does not serve shows %s %v", field, v)
			}
		}
	}
}

// TestPluginLoadMetrics: an engine wired to the metrics as cmd wires it reports a loaded plugin's compile
// and instantiate times and its calls.
func TestPluginLoadMetrics(t *testing.T) {
	m := metrics.New()
	engine, err := plugins.New(plugins.Options{Logger: slog.New(slog.DiscardHandler), CacheDir: t.TempDir(),
		OnCall: m.PluginCall, OnCompile: m.PluginCompiled, OnInstantiate: m.PluginInstantiated})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { engine.Close(context.Background()) })
	f := newFixture(t, Options{Plugins: engine, Metrics: m})
	if a := f.putWasm(t, f.admin, "a", "application/wasm", []byte(wasmSmall)); a.status != 200 {
		t.Fatalf("put: %d %s", a.status, a.body)
	}
	if _, err := engine.Call(context.Background(), f.ws.ID, "a", hostapi.KindCheck, &hostapi.Input{CheckID: "x"}, nil); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		`gateway_plugin_compile_seconds_count{cache="miss",plugin="a"} 1`, // the upload's validation compiled it
		`gateway_plugin_instantiate_seconds_count{plugin="a"} 1`,
		`gateway_plugin_call_duration_seconds_count{plugin="a"} 1`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("the metrics lack %s", want)
		}
	}
}
