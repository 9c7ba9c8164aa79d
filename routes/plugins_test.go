package routes

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"sync"
	"testing"

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

func (h *fakePluginHost) Load(_ context.Context, ws, id string, wasm []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
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
