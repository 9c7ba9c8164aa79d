package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// buildExample builds one of examples/ as a wasm plugin, as a plugin author would.
func buildExample(t testing.TB, name string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), name+".wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, ".")
	cmd.Dir = filepath.Join("..", "..", "examples", name)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", name, err, b)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}

func putPlugin(t *testing.T, base, key, id string, wasm []byte) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("PUT", base+"/v1/plugins/"+id, bytes.NewReader(wasm))
	req.Header.Set("x-gateway-api-key", key)
	req.Header.Set("Content-Type", "application/wasm")
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

// waitFor polls the process's stderr until it contains want.
func waitFor(t *testing.T, p *gatewayProc, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(p.stderr.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("stderr never said %q:\n%s", want, p.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPluginsThroughTheBinary uploads an example plugin through the admin endpoint, sees bad modules refused,
// restarts and sees the stored plugin reloaded, and deploys another from a watched folder.
func TestPluginsThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds wasm guests")
	}
	pii := buildExample(t, "pii")
	denylist := buildExample(t, "denylist")
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	boot := writeFile(t, dir, "b.json", `{"api_keys": [{"key": "gw-plugin-admin", "admin": true}]}`)
	args := []string{"--listen", "127.0.0.1:0", "--data", data, "--bootstrap", boot}

	p := startGateway(t, nil, args...)
	if status, body := putPlugin(t, p.base, "gw-plugin-admin", "pii", pii); status != 200 || body["sha256"] == nil {
		t.Fatalf("upload: %d %v", status, body)
	}
	status, body := putPlugin(t, p.base, "gw-plugin-admin", "empty", []byte("\x00asm\x01\x00\x00\x00"))
	if msg, _ := body["error"].(map[string]any)["message"].(string); status != 400 || !strings.Contains(msg, "gateway_call") {
		t.Fatalf("a module without the ABI: %d %v", status, body)
	}
	if status, _ := putPlugin(t, p.base, "gw-plugin-admin", "text", []byte("hello")); status != 400 {
		t.Fatalf("a file that is not wasm: %d", status)
	}
	if status, list, _ := call(t, "GET", p.base+"/v1/plugins", "gw-plugin-admin", ""); status != 200 || len(list["data"].([]any)) != 1 {
		t.Fatalf("list: %d %v", status, list)
	}
	p.stop(t, syscall.SIGTERM)

	// A restart reloads the stored plugin; a watched folder deploys another.
	folder := filepath.Join(dir, "plugins")
	os.MkdirAll(filepath.Join(folder, "default"), 0o755)
	os.WriteFile(filepath.Join(folder, "default", "denylist.wasm"), denylist, 0o644)
	p2 := startGateway(t, nil, append(args, "--plugins", folder)...)
	waitFor(t, p2, `msg="plugins: stored plugins loaded" loaded=1 failed=0`, time.Minute)
	waitFor(t, p2, `msg="plugin loaded from file" component=plugin-watcher`, time.Minute)
	status, list, _ := call(t, "GET", p2.base+"/v1/plugins", "gw-plugin-admin", "")
	if status != 200 || len(list["data"].([]any)) != 2 {
		t.Fatalf("list after restart: %d %v", status, list)
	}
	p2.stop(t, syscall.SIGTERM)
}

// TestWasmChecksThroughTheBinary uploads the denylist and router examples, then sends chat completions whose
// config uses them: a wasm guardrail that denies, and a $plugin routing condition.
func TestWasmChecksThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds wasm guests")
	}
	denylist := buildExample(t, "denylist")
	router := buildExample(t, "router")
	var calls atomicCounter
	up := newChatUpstream(t, &calls)
	dir := t.TempDir()
	boot := writeFile(t, dir, "b.json", `{"api_keys": [{"key": "gw-wasm-admin", "admin": true}]}`)
	p := startGateway(t, nil, "--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--bootstrap", boot)
	for id, wasm := range map[string][]byte{"denylist": denylist, "router": router} {
		if status, body := putPlugin(t, p.base, "gw-wasm-admin", id, wasm); status != 200 {
			t.Fatalf("upload %s: %d %v", id, status, body)
		}
	}
	chat := func(config, content string) (int, string, http.Header) {
		body := `{"model":"m","messages":[{"role":"user","content":` + strconvQuote(content) + `}]}`
		req, _ := http.NewRequest("POST", p.base+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-gateway-api-key", "gw-wasm-admin")
		req.Header.Set("x-gateway-config", config)
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	target := `"provider":"openai","api_key":"sk","custom_host":"` + up.URL + `/v1"`
	guarded := `{` + target + `,"input_guardrails":[{"id":"words","deny":true,"denylist.check":{"words":["forbidden"]}}]}`
	before := calls.n.Load()
	status, body, _ := chat(guarded, "this is forbidden talk")
	if status != 446 || !strings.Contains(body, `"denylist.check"`) || calls.n.Load() != before {
		t.Fatalf("wasm deny: %d %s (upstream calls %d)", status, body, calls.n.Load()-before)
	}
	if status, body, _ = chat(guarded, "harmless"); status != 200 {
		t.Fatalf("wasm pass: %d %s", status, body)
	}
	routed := `{"strategy":{"mode":"conditional","conditions":[{"query":{"$plugin":"router","$params":{"min_chars":20,"non_english":false}},"then":"long"}],"default":"short"},` +
		`"targets":[{"name":"short",` + target + `},{"name":"long",` + target + `}]}`
	if _, _, h := chat(routed, "hi"); h.Get("x-gateway-last-used-option-index") != "config.targets[0]" {
		t.Errorf("short prompt went to %s", h.Get("x-gateway-last-used-option-index"))
	}
	if _, _, h := chat(routed, "a rather long prompt that is over twenty characters"); h.Get("x-gateway-last-used-option-index") != "config.targets[1]" {
		t.Errorf("long prompt went to %s", h.Get("x-gateway-last-used-option-index"))
	}
	p.stop(t, syscall.SIGTERM)
}

type atomicCounter struct{ n atomic.Int64 }

func newChatUpstream(t *testing.T, calls *atomicCounter) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.n.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(up.Close)
	return up
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// buildGuest builds a Go guest from source in a module of its own, with the given extra build flags.
func buildGuest(t testing.TB, source string, flags ...string) []byte {
	t.Helper()
	return buildGuestModule(t, "module guest\n\ngo 1.24\n", source, flags...)
}

// buildGuestModule builds a Go guest from source in a module whose go.mod is goMod.
func buildGuestModule(t testing.TB, goMod, source string, flags ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{"go.mod": goMod, "main.go": source} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "guest.wasm")
	cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", out, ".")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=mod")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build guest: %v\n%s", err, b)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}

// panicsInInit follows ABI v1 but panics while it initialises: it passes the ABI check and fails to load.
const panicsInInit = `package main

func init() { panic("this guest cannot start") }

func main() {}

//go:wasmexport gateway_abi_v1
func abiV1() {}

//go:wasmexport gateway_alloc
func alloc(n uint32) uint32 { return 0 }

//go:wasmexport gateway_call
func call(kind int32, ptr, n uint32) uint64 { return 0 }
`

// TestFailedPluginUpdateThroughTheBinary uploads a working guardrail plugin, then updates that do not load (a
// guest that panics in init, a guest built without -buildmode=c-shared): each is refused with a 400, the
// working module stays stored and keeps denying, also after a restart; an upload past the workspace's memory
// bound is refused with a 409 and not stored; a bootstrap file whose plugin does not load stops the start and
// leaves the stored module alone.
func TestFailedPluginUpdateThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds wasm guests")
	}
	denylist := buildExample(t, "denylist")
	command := buildGuest(t, strings.Replace(panicsInInit, `func init() { panic("this guest cannot start") }`, "", 1))
	broken := buildGuest(t, panicsInInit, "-buildmode=c-shared")
	var calls atomicCounter
	up := newChatUpstream(t, &calls)
	dir := t.TempDir()
	boot := writeFile(t, dir, "b.json", `{"api_keys": [{"key": "gw-update-admin", "admin": true}]}`)
	args := []string{"--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--bootstrap", boot}
	guarded := `{"provider":"openai","api_key":"sk","custom_host":"` + up.URL + `/v1",` +
		`"input_guardrails":[{"id":"words","deny":true,"denylist.check":{"words":["forbidden"]}}]}`
	denies := func(p *gatewayProc) {
		t.Helper()
		req, _ := http.NewRequest("POST", p.base+"/v1/chat/completions",
			strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"this is forbidden talk"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-gateway-api-key", "gw-update-admin")
		req.Header.Set("x-gateway-config", guarded)
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 446 {
			t.Fatalf("the guardrail did not deny: %d %s", resp.StatusCode, b)
		}
	}

	p := startGateway(t, nil, args...)
	status, body := putPlugin(t, p.base, "gw-update-admin", "denylist", denylist)
	if status != 200 {
		t.Fatalf("upload: %d %v", status, body)
	}
	good := body["sha256"]
	for name, c := range map[string]struct {
		wasm []byte
		want string
	}{
		"panics in init": {broken, "does not initialise"},
		"command":        {command, "-buildmode=c-shared"},
	} {
		status, body := putPlugin(t, p.base, "gw-update-admin", "denylist", c.wasm)
		msg, _ := body["error"].(map[string]any)["message"].(string)
		if status != 400 || !strings.Contains(msg, c.want) {
			t.Fatalf("update that %s: %d %v, want a 400 mentioning %q", name, status, body, c.want)
		}
		if status, got, _ := call(t, "GET", p.base+"/v1/plugins/denylist", "gw-update-admin", ""); status != 200 || got["sha256"] != good {
			t.Fatalf("after the update that %s the plugin is %v, want sha256 %v", name, got, good)
		}
		denies(p)
	}
	p.stop(t, syscall.SIGTERM)

	// The restart loads the working module; a second plugin does not fit in 100 MiB beside it (a Go guest's
	// instance may grow to 64 MiB).
	p2 := startGateway(t, nil, append(args, "--plugin-memory-per-workspace", "100MiB")...)
	waitFor(t, p2, `msg="plugins: stored plugins loaded" loaded=1 failed=0`, time.Minute)
	denies(p2)
	status, body = putPlugin(t, p2.base, "gw-update-admin", "second", denylist)
	msg, _ := body["error"].(map[string]any)["message"].(string)
	if status != 409 || !strings.Contains(msg, "--plugin-memory-per-workspace") {
		t.Fatalf("an upload past the memory bound: %d %v", status, body)
	}
	if status, list, _ := call(t, "GET", p2.base+"/v1/plugins", "gw-update-admin", ""); status != 200 || len(list["data"].([]any)) != 1 {
		t.Fatalf("list: %d %v", status, list)
	}
	p2.stop(t, syscall.SIGTERM)

	// A bootstrap file whose plugin does not load stops the start and stores nothing.
	os.WriteFile(filepath.Join(dir, "broken.wasm"), broken, 0o644)
	badBoot := writeFile(t, dir, "bad.json", `{"api_keys": [{"key": "gw-update-admin", "admin": true}],
		"plugins": [{"id": "denylist", "wasm": "broken.wasm"}]}`)
	p3 := startGateway(t, nil, "--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--bootstrap", badBoot)
	if code := p3.wait(t); code == 0 || !strings.Contains(p3.stderr.String(), "plugins[0].wasm") || !strings.Contains(p3.stderr.String(), "does not load") {
		t.Fatalf("a bootstrap file with a plugin that does not load: exit %d\n%s", code, p3.stderr)
	}
	p4 := startGateway(t, nil, args...)
	waitFor(t, p4, `msg="plugins: stored plugins loaded" loaded=1 failed=0`, time.Minute)
	if status, got, _ := call(t, "GET", p4.base+"/v1/plugins/denylist", "gw-update-admin", ""); status != 200 || got["sha256"] != good {
		t.Fatalf("after the refused bootstrap file the plugin is %v, want sha256 %v", got, good)
	}
	denies(p4)
	p4.stop(t, syscall.SIGTERM)
}
