package main

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPluginKVThroughTheBinary: the denylist plugin reads its words from the plugin key-value store. A PUT of
// the key denies a chat completion on its word; a PUT of a new value denies the next request on the new word and
// lets the old one through, without uploading the plugin again; another workspace's admin key can neither read
// nor change the key, and its own key of the same name is another value; DELETE empties the list.
func TestPluginKVThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a wasm guest")
	}
	denylist := buildExample(t, "denylist")
	var calls atomicCounter
	up := newChatUpstream(t, &calls)
	dir := t.TempDir()
	boot := writeFile(t, dir, "b.json", `{
		"workspaces": [{"id": "0b6b8c1e-7a51-4a77-9d55-1f0c2a4e7b10", "slug": "team", "organisation_id": "3d1f6a0e-2c4b-4b8e-8f6a-5e7d9c1b2a30"}],
		"api_keys": [{"key": "gw-kv-admin", "admin": true}, {"key": "gw-kv-team", "workspace": "team", "admin": true}]
	}`)
	p := startGateway(t, nil, "--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--bootstrap", boot)
	const admin, team = "gw-kv-admin", "gw-kv-team"
	if status, body := putPlugin(t, p.base, admin, "denylist", denylist); status != 200 {
		t.Fatalf("upload: %d %v", status, body)
	}
	put := func(key, apiKey, value string) int {
		t.Helper()
		status, body, _ := call(t, "PUT", p.base+"/v1/plugin-kv/"+key, apiKey, `{"value": `+strconvQuote(value)+`}`)
		if status != 200 && status != 201 && status != 404 {
			t.Fatalf("PUT %s: %d %v", key, status, body)
		}
		return status
	}
	config := `{"provider":"openai","api_key":"sk","custom_host":"` + up.URL + `/v1",` +
		`"before_request_hooks":[{"id":"kv-words","checks":[{"id":"denylist.words","parameters":{"kv":"banned"}}],"on_fail":{"deny":true}}]}`
	chat := func(apiKey, content string) (int, string) {
		t.Helper()
		body := `{"model":"m","messages":[{"role":"user","content":` + strconvQuote(content) + `}]}`
		req, _ := http.NewRequest("POST", p.base+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-gateway-api-key", apiKey)
		req.Header.Set("x-gateway-config", config)
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	denied := func(content string) bool {
		t.Helper()
		switch status, body := chat(admin, content); status {
		case 446:
			return true
		case 200:
			return false
		default:
			t.Fatalf("chat %q: %d %s", content, status, body)
			return false
		}
	}

	if denied("about apollo") {
		t.Fatal("denied before the key exists")
	}
	if status := put("banned", admin, "apollo\n  artemis  \n"); status != 201 {
		t.Fatalf("first PUT: %d, want 201", status)
	}
	before := calls.n.Load()
	if status, body := chat(admin, "tell me about Apollo"); status != 446 || !strings.Contains(body, `"denylist.words"`) ||
		!strings.Contains(body, `"apollo"`) || calls.n.Load() != before {
		t.Fatalf("kv word: %d %s (upstream calls %d)", status, body, calls.n.Load()-before)
	}
	if !denied("and artemis") || denied("harmless") {
		t.Fatal("the list's second word, or a harmless text")
	}

	if status := put("banned", admin, "gemini"); status != 200 {
		t.Fatalf("replacing PUT: %d, want 200", status)
	}
	if !denied("gemini capsule") || denied("about apollo") {
		t.Fatal("after the new value: gemini must be denied and apollo pass, at the next request")
	}

	// Another workspace: its admin key reads nothing of this one, and its PUT writes its own key.
	if status, _, _ := call(t, "GET", p.base+"/v1/plugin-kv/banned", team, ""); status != 404 {
		t.Fatalf("another workspace's GET: %d", status)
	}
	if status, _, _ := call(t, "DELETE", p.base+"/v1/plugin-kv/banned", team, ""); status != 404 {
		t.Fatalf("another workspace's DELETE: %d", status)
	}
	if status := put("banned", team, "harmless"); status != 201 {
		t.Fatalf("another workspace's PUT: %d, want 201 (its own key)", status)
	}
	if denied("harmless") || !denied("gemini") {
		t.Fatal("another workspace's value reached this workspace's plugin")
	}
	status, got, _ := call(t, "GET", p.base+"/v1/plugin-kv/banned", admin, "")
	if status != 200 || got["value"] != "gemini" {
		t.Fatalf("GET: %d %v", status, got)
	}
	status, list, _ := call(t, "GET", p.base+"/v1/plugin-kv", admin, "")
	if data, _ := list["data"].([]any); status != 200 || len(data) != 1 || data[0].(map[string]any)["key"] != "banned" ||
		data[0].(map[string]any)["value"] != nil {
		t.Fatalf("list: %d %v", status, list)
	}

	status, del, _ := call(t, "DELETE", p.base+"/v1/plugin-kv/banned", admin, "")
	if status != 200 || del["deleted"] != true || del["key"] != "banned" {
		t.Fatalf("DELETE: %d %v", status, del)
	}
	if denied("gemini") {
		t.Fatal("denied after the key was deleted")
	}
	if status, _, _ := call(t, "DELETE", p.base+"/v1/plugin-kv/banned", admin, ""); status != 404 {
		t.Fatalf("second DELETE: %d", status)
	}
	p.stop(t, syscall.SIGTERM)
}
