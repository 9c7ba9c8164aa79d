package bootstrap

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmgw/gateway/storage"
)

// Fixed identifiers of the DESIGN.md example, with real UUIDs in place of "uuid".
const (
	exampleWorkspaceID = "3f1c1e8a-5b7d-4c2e-9a10-0d6b1f2a3c4d"
	exampleOrgID       = "7b2e4d10-1c3a-4f5e-8d9c-aa0b1c2d3e4f"
	examplePolicyID    = "0c9d8e7f-6a5b-4c3d-9e1f-123456789abc"
)

// wasmModule is the smallest valid WebAssembly module: the header of an empty module.
var wasmModule = []byte("\x00asm\x01\x00\x00\x00")

// designExample is DESIGN.md's bootstrap example with real UUIDs; its plugin lives at path/to/pii.wasm
// relative to the base folder (see writeExampleWasm).
const designExample = `{"workspaces": [{"id": "` + exampleWorkspaceID + `", "slug": "default", "organisation_id": "` + exampleOrgID + `"}],
 "api_keys": [{"key": "gw-secret", "workspace": "default", "admin": true}],
 "providers": [{"slug": "mock-openai", "workspace": "default", "provider": "openai",
                "api_key": "sk-x", "custom_host": "http://127.0.0.1:9911/v1"}],
 "configs": [{"id": "cfg-a", "workspace": "default", "config": {}}],
 "prompts": [{"id": "welcome", "workspace": "default",
              "versions": [{"published": true, "template": {"provider": "@mock-openai", "model": "m",
                "messages": [{"role": "user", "content": "Hi {{name}}"}], "temperature": 0.2}}]}],
 "rate_limit_policies": [{"id": "` + examplePolicyID + `", "workspace": "default", "type": "requests", "unit": "rpm", "value": 60,
                          "status": "active", "name": "n", "conditions": [], "group_by": [{"key": "api_key"}]}],
 "guardrails": [{"id": "no-emails", "workspace": "default", "deny": true,
                 "default.regexMatch": {"rule": "[a-z]+@[a-z]+\\.com", "not": true}}],
 "plugins": [{"id": "pii", "workspace": "default", "wasm": "path/to/pii.wasm"}]}`

// exampleEntries is how many entries designExample holds: Apply on an empty store writes each once.
const exampleEntries = 8

// writeFile writes data at dir/rel, creating folders, and returns the full path.
func writeFile(t testing.TB, dir, rel string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// exampleDir returns a new folder holding the example's plugin at path/to/pii.wasm.
func exampleDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "path/to/pii.wasm", wasmModule)
	return dir
}

// mustParse parses doc against baseDir and fails the test on any error.
func mustParse(t testing.TB, doc, baseDir string) *File {
	t.Helper()
	f, err := Parse([]byte(doc), baseDir)
	if err != nil {
		t.Fatalf("Parse: unexpected error: %v", err)
	}
	if f == nil {
		t.Fatal("Parse returned a nil *File without an error")
	}
	return f
}

// validationError asserts that err is a *ValidationError and returns it.
func validationError(t testing.TB, err error) *ValidationError {
	t.Helper()
	if err == nil {
		t.Fatal("want a *ValidationError, got nil")
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("want a *ValidationError, got %T: %v", err, err)
	}
	if len(ve.Problems) == 0 {
		t.Fatalf("ValidationError without problems: %v", err)
	}
	return ve
}

// findProblem returns the problem at exactly path whose message holds every keyword.
func findProblem(problems []Problem, path string, keywords ...string) (Problem, bool) {
	for _, p := range problems {
		if p.Path != path {
			continue
		}
		ok := true
		for _, k := range keywords {
			ok = ok && strings.Contains(p.Message, k)
		}
		if ok {
			return p, true
		}
	}
	return Problem{}, false
}

func dumpProblems(problems []Problem) string {
	var b strings.Builder
	for _, p := range problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// newStore opens an empty in-memory store.
func newStore(t testing.TB) *storage.Store {
	t.Helper()
	st, err := storage.Open("mem", storage.Options{MasterKey: bytes.Repeat([]byte{7}, storage.MasterKeySize), InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// compactJSON returns raw compacted, so that JSON values compare by content.
func compactJSON(t testing.TB, raw []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("invalid JSON %q: %v", raw, err)
	}
	return b.String()
}

// sameJSON reports whether a and b hold the same JSON value (key order and spacing aside).
func sameJSON(t testing.TB, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("invalid JSON %q: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("invalid JSON %q: %v", b, err)
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return string(xs) == string(ys)
}
