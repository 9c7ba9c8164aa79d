package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// These tests build the real binary and run it as a user would: flags, environment, a bootstrap file, signals.

var gatewayBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gateway-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	gatewayBin = filepath.Join(dir, "gateway")
	build := exec.Command("go", "build", "-o", gatewayBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build gateway:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type gatewayProc struct {
	cmd    *exec.Cmd
	stdout *syncBuffer
	stderr *syncBuffer
	base   string // http://host:port once listening
	exited chan struct{}
	err    error
}

var listeningLine = regexp.MustCompile(`msg="gateway listening" addr=(http://\S+)`)

// startGateway runs the binary with args and extra environment, and waits until it listens (or exits).
func startGateway(t *testing.T, env []string, args ...string) *gatewayProc {
	t.Helper()
	p := &gatewayProc{cmd: exec.Command(gatewayBin, args...), stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("gateway stdout:\n%s\ngateway stderr:\n%s", p.stdout, p.stderr)
		}
	})
	deadline := time.After(20 * time.Second)
	for {
		if m := listeningLine.FindStringSubmatch(p.stderr.String()); m != nil {
			p.base = m[1]
			return p
		}
		select {
		case <-p.exited:
			return p
		case <-deadline:
			t.Fatalf("gateway did not start listening in time; stderr:\n%s", p.stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop sends sig and waits for the process to end; it returns the exit code.
func (p *gatewayProc) stop(t *testing.T, sig os.Signal) int {
	t.Helper()
	p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("gateway did not exit after %v", sig)
	}
	return p.cmd.ProcessState.ExitCode()
}

func (p *gatewayProc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("gateway did not exit")
	}
	return p.cmd.ProcessState.ExitCode()
}

var printedKey = regexp.MustCompile(`(?m)^\s+(gw-[A-Za-z0-9_-]{43})\s*$`)

func call(t *testing.T, method, url, key, body string) (int, map[string]any, http.Header) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, r)
	if key != "" {
		req.Header.Set("x-gateway-api-key", key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	var m map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s %s: body is not JSON: %s", method, url, raw)
	}
	return resp.StatusCode, m, resp.Header
}

const exampleBootstrap = `{
  "workspaces": [{"id": "11111111-1111-4111-8111-111111111111", "slug": "default", "organisation_id": "22222222-2222-4222-8222-222222222222"}],
  "api_keys": [{"key": "gw-secret", "workspace": "default", "admin": true}],
  "providers": [{"slug": "mock-openai", "workspace": "default", "provider": "openai", "api_key": "sk-x", "custom_host": "http://127.0.0.1:9911/v1"}],
  "configs": [{"id": "cfg-a", "workspace": "default", "config": {"virtual_key": "mock-openai"}}],
  "prompts": [{"id": "welcome", "workspace": "default", "versions": [{"published": true, "template": {"provider": "@mock-openai", "model": "m",
      "messages": [{"role": "user", "content": "Hi {{name}}"}], "temperature": 0.2}}]}],
  "rate_limit_policies": [{"id": "33333333-3333-4333-8333-333333333333", "workspace": "default", "type": "requests", "unit": "rpm", "value": 60,
      "status": "active", "name": "n", "conditions": [], "group_by": [{"key": "api_key"}]}],
  "guardrails": [{"id": "no-emails", "workspace": "default", "deny": true, "default.regexMatch": {"rule": "[a-z]+@[a-z]+\\.com", "not": true}}]
}`

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFirstStartWithBootstrapThenRestart(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	boot := writeFile(t, dir, "bootstrap.json", exampleBootstrap)
	args := []string{"--listen", "127.0.0.1:0", "--data", data, "--bootstrap", boot}

	p := startGateway(t, nil, args...)
	if p.base == "" {
		t.Fatalf("gateway exited: %v", p.err)
	}
	key := "gw-secret" // the bootstrap file's admin key: the first start makes none (TestFirstStartKey)
	if !strings.Contains(p.stderr.String(), `msg="bootstrap file applied"`) {
		t.Errorf("no log line for the bootstrap file")
	}

	status, body, hdr := call(t, "GET", p.base+"/health", "", "")
	if status != 200 || body["status"] != "ok" || hdr.Get("x-gateway-trace-id") == "" {
		t.Fatalf("/health = %d %v", status, body)
	}
	for _, k := range []string{key} {
		status, body, _ := call(t, "GET", p.base+"/v1/api-keys", k, "")
		if status != 200 {
			t.Fatalf("key %s… rejected: %d %v", k[:5], status, body)
		}
		// The key lives in the bootstrap file's workspace "default".
		for _, item := range body["data"].([]any) {
			if ws := item.(map[string]any)["workspace_id"]; ws != "11111111-1111-4111-8111-111111111111" {
				t.Errorf("key in workspace %v, want the bootstrap file's default", ws)
			}
		}
	}
	status, body, _ = call(t, "GET", p.base+"/v1/api-keys", "gw-wrong-key", "")
	if status != 401 || body["error"].(map[string]any)["code"] != "invalid_api_key" {
		t.Fatalf("unknown key: %d %v", status, body)
	}

	info, err := os.Stat(filepath.Join(data, "master.key"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("master.key: %v, mode %v; want 0600", err, info.Mode().Perm())
	}
	stored, _ := os.ReadFile(filepath.Join(data, "master.key"))
	if bytes.Contains(stored, []byte("gw-secret")) {
		t.Fatal("master key file holds a gateway key")
	}
	assertNotOnDisk(t, data, "gw-secret", "sk-x")

	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d", code)
	}
	if !strings.Contains(p.stderr.String(), `msg="gateway stopped"`) {
		t.Errorf("no clean-stop log line")
	}
	if printedKey.MatchString(p.stdout.String()) || strings.Contains(p.stdout.String(), "First start") {
		t.Fatalf("first start printed a key beside the bootstrap file's admin key; stdout:\n%s", p.stdout)
	}

	// A later start prints no key, applies the same file without changes, and every key still works.
	p2 := startGateway(t, nil, args...)
	if p2.base == "" {
		t.Fatalf("restart failed: %v", p2.err)
	}
	if printedKey.MatchString(p2.stdout.String()) || strings.Contains(p2.stdout.String(), "First start") {
		t.Fatalf("restart printed a key:\n%s", p2.stdout)
	}
	if !strings.Contains(p2.stderr.String(), "changed=0") {
		t.Errorf("re-applying the same bootstrap file changed something: %s", p2.stderr)
	}
	for _, k := range []string{key} {
		if status, body, _ := call(t, "GET", p2.base+"/v1/api-keys", k, ""); status != 200 {
			t.Fatalf("after restart key %s… rejected: %d %v", k[:5], status, body)
		}
	}
	p2.stop(t, syscall.SIGINT)
}

// assertNotOnDisk fails if any file under dir contains one of the secrets in clear.
func assertNotOnDisk(t *testing.T, dir string, secrets ...string) {
	t.Helper()
	filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds the secret %q in clear", path, s[:4]+"…")
			}
		}
		return nil
	})
}

func TestKillDashNineLosesNothingAcknowledged(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	p := startGateway(t, nil, "--listen", "127.0.0.1:0", "--data", data)
	m := printedKey.FindStringSubmatch(p.stdout.String())
	if m == nil {
		t.Fatalf("no key printed:\n%s", p.stdout)
	}
	admin := m[1]
	var created []string
	for i := 0; i < 5; i++ {
		status, body, _ := call(t, "POST", p.base+"/v1/api-keys", admin, fmt.Sprintf(`{"name": "k%d"}`, i))
		if status != 200 {
			t.Fatalf("create key: %d %v", status, body)
		}
		created = append(created, body["key"].(string))
	}
	p.stop(t, syscall.SIGKILL)

	p2 := startGateway(t, nil, "--listen", "127.0.0.1:0", "--data", data)
	if p2.base == "" {
		t.Fatalf("restart after kill -9 failed: %v\n%s", p2.err, p2.stderr)
	}
	if printedKey.MatchString(p2.stdout.String()) {
		t.Fatal("restart after kill -9 printed a new first-start key")
	}
	for _, k := range append(created, admin) {
		if status, body, _ := call(t, "GET", p2.base+"/health", "", ""); status != 200 {
			t.Fatalf("health: %d %v", status, body)
		}
		status, body, _ := call(t, "POST", p2.base+"/v1/api-keys", admin, `{}`)
		if status != 200 {
			t.Fatalf("admin after kill -9: %d %v", status, body)
		}
		// Every acknowledged key authenticates (plain keys get 403 on the admin list, not 401).
		if status, _, _ := call(t, "GET", p2.base+"/v1/api-keys", k, ""); status == 401 {
			t.Fatalf("key acknowledged before kill -9 is gone")
		}
	}
	p2.stop(t, syscall.SIGTERM)
}

func TestBadBootstrapStopsTheStart(t *testing.T) {
	dir := t.TempDir()
	boot := writeFile(t, dir, "bad.json", `{
  "providers": [{"slug": "p1", "provider": "openai", "api_key": "sk", "custom_host": "ftp://nope"}],
  "api_keys": [{"key": "short", "admin": "yes"}]
}`)
	p := startGateway(t, nil, "--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--bootstrap", boot)
	if code := p.wait(t); code == 0 {
		t.Fatal("gateway started with a bad bootstrap file")
	}
	out := p.stderr.String()
	for _, want := range []string{boot, "providers[0].custom_host", "api_keys[0].key", "api_keys[0].admin"} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr does not name %q:\n%s", want, out)
		}
	}
	if printedKey.MatchString(p.stdout.String()) {
		t.Error("a failed start printed a key")
	}
}

func TestEnvironmentAndMasterKey(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	master := strings.Repeat("ab", 32)
	env := []string{"GATEWAY_LISTEN=127.0.0.1:0", "GATEWAY_DATA_DIR=" + data, "GATEWAY_MASTER_KEY=" + master,
		"GATEWAY_BOOTSTRAP=" + writeFile(t, dir, "b.json", `{"api_keys": [{"key": "gw-env-key-1"}]}`)}
	p := startGateway(t, env)
	if p.base == "" {
		t.Fatalf("start with environment failed: %v", p.err)
	}
	if status, body, _ := call(t, "POST", p.base+"/v1/api-keys", "gw-env-key-1", `{}`); status != 403 {
		t.Fatalf("non-admin bootstrap key: %d %v (want 403)", status, body)
	}
	if _, err := os.Stat(filepath.Join(data, "master.key")); !os.IsNotExist(err) {
		t.Errorf("a key file was written although GATEWAY_MASTER_KEY was set: %v", err)
	}
	p.stop(t, syscall.SIGTERM)

	// Another master key does not open the store, and says why.
	wrong := append(env[:len(env):len(env)], "GATEWAY_MASTER_KEY="+strings.Repeat("cd", 32))
	p2 := startGateway(t, wrong)
	if code := p2.wait(t); code == 0 {
		t.Fatal("gateway opened the store with another master key")
	}
	if !strings.Contains(p2.stderr.String(), "master key") {
		t.Errorf("error does not mention the master key:\n%s", p2.stderr)
	}
	// A malformed key is refused by name.
	bad := append(env[:len(env):len(env)], "GATEWAY_MASTER_KEY=short")
	p3 := startGateway(t, bad)
	if code := p3.wait(t); code == 0 || !strings.Contains(p3.stderr.String(), "GATEWAY_MASTER_KEY") {
		t.Fatalf("malformed master key: exit %d, stderr:\n%s", code, p3.stderr)
	}
}

func TestMissingKeyFileForExistingStoreIsRefused(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	p := startGateway(t, nil, "--listen", "127.0.0.1:0", "--data", data)
	p.stop(t, syscall.SIGTERM)
	if err := os.Remove(filepath.Join(data, "master.key")); err != nil {
		t.Fatal(err)
	}
	p2 := startGateway(t, nil, "--listen", "127.0.0.1:0", "--data", data)
	if code := p2.wait(t); code == 0 || !strings.Contains(p2.stderr.String(), "master.key") {
		t.Fatalf("exit %d, stderr:\n%s", code, p2.stderr)
	}
	if _, err := os.Stat(filepath.Join(data, "master.key")); !os.IsNotExist(err) {
		t.Error("a new key file was made for a store written with another key")
	}
}

func TestSecondGatewayOnTheSameDataIsRefused(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	p := startGateway(t, nil, "--listen", "127.0.0.1:0", "--data", data)
	p2 := startGateway(t, nil, "--listen", "127.0.0.1:0", "--data", data)
	if code := p2.wait(t); code == 0 || !strings.Contains(p2.stderr.String(), "in use by another gateway") {
		t.Fatalf("exit %d, stderr:\n%s", code, p2.stderr)
	}
	p.stop(t, syscall.SIGTERM)
}
