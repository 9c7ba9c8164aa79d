package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/routes"
	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/storage"
)

var updateGolden = flag.Bool("update", false, "rewrite the CLI's golden outputs in testdata/cli")

// cliFixture is a gateway serving the real routes over an in-memory store on a loopback listener, with an
// admin key and a plain key of workspace "default".
type cliFixture struct {
	url, admin, plain string
}

func newCLIFixture(t *testing.T) *cliFixture {
	t.Helper()
	master := make([]byte, storage.MasterKeySize)
	rand.Read(master)
	st, err := storage.Open("mem", storage.Options{MasterKey: master, InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ws := &storage.Workspace{ID: storage.NewUUID(), Slug: "default", OrganisationID: storage.NewUUID()}
	if _, err := st.Workspaces.Put(ws); err != nil {
		t.Fatal(err)
	}
	f := &cliFixture{}
	if f.admin, _, err = st.APIKeys.Create(ws.ID, "admin", true); err != nil {
		t.Fatal(err)
	}
	if f.plain, _, err = st.APIKeys.Create(ws.ID, "plain", false); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := routes.New(st, runtime.New(st, runtime.Options{Logger: log}), routes.Options{Logger: log, Plugins: &recordingHost{loaded: map[string][]byte{}}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(time.Second) })
	f.url = "http://" + ln.Addr().String()
	return f
}

// run runs the CLI in-process with the admin key (GATEWAY_URL and GATEWAY_API_KEY from the environment it
// is given) and returns its exit status, stdout and stderr.
func (f *cliFixture) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return f.runAs(t, f.admin, args...)
}

func (f *cliFixture) runAs(t *testing.T, key string, args ...string) (int, string, string) {
	t.Helper()
	env := map[string]string{"GATEWAY_URL": f.url, "GATEWAY_API_KEY": key}
	var stdout, stderr bytes.Buffer
	code := runCLI(context.Background(), args, func(k string) string { return env[k] }, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// mustRun runs the CLI and fails the test unless it exits 0.
func (f *cliFixture) mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := f.run(t, args...)
	if code != 0 {
		t.Fatalf("gateway %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// Values that differ between runs, each replaced by a placeholder of its own length so that tables stay aligned.
var (
	uuidRE    = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timeRE    = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	unixRE    = regexp.MustCompile(`\b1\d{9}\b`)
	fileIDRE  = regexp.MustCompile(`\bfile-[A-Za-z0-9_-]+`)
	sameWidth = func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
				return '0'
			}
			return r
		}, s)
	}
)

func normalize(s string) string {
	s = uuidRE.ReplaceAllStringFunc(s, sameWidth)
	digits := func(v string) string { return regexp.MustCompile(`\d`).ReplaceAllString(v, "0") }
	s = timeRE.ReplaceAllStringFunc(s, digits)
	s = unixRE.ReplaceAllStringFunc(s, digits)
	return fileIDRE.ReplaceAllStringFunc(s, func(id string) string { return "file-" + sameWidth(id[5:]) })
}

// golden compares got, normalized, with testdata/cli/name; -update rewrites the file.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "cli", name)
	got = normalize(got)
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/gateway -run CLI -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (-update rewrites it)\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCLIKeys(t *testing.T) {
	f := newCLIFixture(t)
	out := f.mustRun(t, "keys", "create", "--name", "ci")
	if !regexp.MustCompile(`(?m)^key\s+\S+`).MatchString(out) || !regexp.MustCompile(`(?m)^name\s+ci$`).MatchString(out) {
		t.Errorf("keys create shows no secret or name:\n%s", out)
	}
	out = f.mustRun(t, "keys", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(out, " ci ") {
		t.Errorf("keys list: want a header and 3 keys, ci among them:\n%s", out)
	}
	var list struct {
		Object string           `json:"object"`
		Data   []map[string]any `json:"data"`
	}
	out = f.mustRun(t, "keys", "list", "--json")
	if err := json.Unmarshal([]byte(out), &list); err != nil || list.Object != "list" || len(list.Data) != 3 {
		t.Errorf("keys list --json: %v %s", err, out)
	}
	id, _ := list.Data[0]["id"].(string)
	if out := f.mustRun(t, "keys", "delete", id); out != "deleted "+id+"\n" {
		t.Errorf("keys delete: %q", out)
	}
}

// TestCLITablesAndJSON compares tables and --json with golden outputs, over resources the CLI made itself.
func TestCLITablesAndJSON(t *testing.T) {
	f := newCLIFixture(t)
	f.mustRun(t, "guardrails", "put", "no-emails", "-f",
		writeTemp(t, "g.json", `{"deny": true, "default.regexMatch": {"rule": "[a-z]+@[a-z]+\\.com", "not": true}}`))
	f.mustRun(t, "prompts", "create", "--id", "welcome", "--name", "Welcome",
		"--template", `{"model": "m", "messages": [{"role": "user", "content": "Hi {{name}}"}]}`)
	f.mustRun(t, "prompts", "add-version", "welcome", "--template", `{"model": "m2", "messages": [{"role": "user", "content": "Hello"}]}`)
	f.mustRun(t, "policies", "create", "--type", "requests", "--unit", "rpm", "--value", "60", "--name", "per-key",
		"--group-by", `[{"key": "api_key"}]`)
	tests := []struct {
		name   string
		args   []string
		golden string
	}{
		{"guardrails table", []string{"guardrails", "list"}, "guardrails_list.txt"},
		{"guardrails json", []string{"guardrails", "list", "--json"}, "guardrails_list.json"},
		{"prompts table", []string{"prompts", "list"}, "prompts_list.txt"},
		{"prompt fields", []string{"prompts", "get", "welcome"}, "prompts_get.txt"},
		{"policies table", []string{"policies", "list"}, "policies_list.txt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			golden(t, tc.golden, f.mustRun(t, tc.args...))
		})
	}
}

func TestCLIFiles(t *testing.T) {
	f := newCLIFixture(t)
	content := `{"custom_id": "a", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "m", "messages": []}}` + "\n"
	out := f.mustRun(t, "files", "upload", writeTemp(t, "in.jsonl", content), "--purpose", "batch", "--json")
	var file struct{ ID, Filename string }
	if err := json.Unmarshal([]byte(out), &file); err != nil || file.Filename != "in.jsonl" {
		t.Fatalf("files upload --json: %v %s", err, out)
	}
	golden(t, "files_list.txt", f.mustRun(t, "files", "list"))
	if got := f.mustRun(t, "files", "content", file.ID); got != content {
		t.Errorf("files content: %q", got)
	}
	if code, _, errOut := f.run(t, "files", "upload", writeTemp(t, "x.jsonl", content), "--purpose", "nonsense"); code != 1 || !strings.Contains(errOut, "purpose") {
		t.Errorf("a bad purpose: exit %d, stderr %s", code, errOut)
	}
}

func TestCLIPluginsPush(t *testing.T) {
	f := newCLIFixture(t)
	wasm := filepath.Join("..", "..", "runtime", "bootstrap", "testdata", "empty.wasm")
	out := f.mustRun(t, "plugins", "push", wasm, "--id", "pii")
	if !regexp.MustCompile(`(?m)^id\s+pii$`).MatchString(out) {
		t.Errorf("plugins push:\n%s", out)
	}
	if out := f.mustRun(t, "plugins", "list"); !strings.Contains(out, "pii ") {
		t.Errorf("plugins list:\n%s", out)
	}
	if code, _, errOut := f.run(t, "plugins", "push", writeTemp(t, "x.wasm", "\x00asm bad-load"), "--id", "x"); code != 1 || !strings.Contains(errOut, "does not initialise") {
		t.Errorf("pushing a non-module: exit %d, stderr %s", code, errOut)
	}
}

// TestCLIAPIError: an API error is printed to stderr as the API gave it, and the exit status is 1.
func TestCLIAPIError(t *testing.T) {
	f := newCLIFixture(t)
	tests := []struct {
		name, key string
		args      []string
		status    string // the error's code in the JSON on stderr
	}{
		{"non-admin key", f.plain, []string{"keys", "list"}, "forbidden"},
		{"unknown ID", f.admin, []string{"guardrails", "get", "nope"}, "not_found"},
		{"bad body names the field", f.admin, []string{"policies", "create", "--type", "requests", "--unit", "rpm", "--value", "-1"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := f.runAs(t, tc.key, tc.args...)
			var e struct {
				Error struct{ Message, Code string }
			}
			if code != 1 || out != "" {
				t.Fatalf("exit %d, stdout %q", code, out)
			}
			if err := json.Unmarshal([]byte(errOut), &e); err != nil || e.Error.Message == "" {
				t.Fatalf("stderr is not the API's error: %v %s", err, errOut)
			}
			if tc.status != "" && e.Error.Code != tc.status {
				t.Errorf("code %q, want %q: %s", e.Error.Code, tc.status, errOut)
			}
		})
	}
	// Not an API error: a usage error and an unreachable gateway exit 1 too.
	if code, _, errOut := f.run(t, "keys", "get"); code != 1 || errOut == "" {
		t.Errorf("missing argument: exit %d, %q", code, errOut)
	}
	if code, _, _ := f.run(t, "keys", "list", "--url", "http://127.0.0.1:1"); code != 1 {
		t.Errorf("no gateway: exit %d", code)
	}
}

func TestCLIDispatch(t *testing.T) {
	tests := []struct {
		args []string
		cli  bool
	}{
		{nil, false}, {[]string{"serve", "--listen", "x"}, false}, {[]string{"--listen", "x"}, false},
		{[]string{"keys", "list"}, true}, {[]string{"help"}, true},
		{[]string{"--json", "keys", "list"}, true}, {[]string{"--url", "http://127.0.0.1:1", "providers", "list"}, true},
		{[]string{"--data", "./keys-dir", "--listen", "127.0.0.1:0"}, false},
	}
	for _, tc := range tests {
		if got := isCLI(tc.args); got != tc.cli {
			t.Errorf("isCLI(%q) = %v", tc.args, got)
		}
	}
}

// TestCLIBinaryKeysList runs `gateway keys list` through the built binary against a started gateway.
func TestCLIBinaryKeysList(t *testing.T) {
	dir := t.TempDir()
	boot := writeFile(t, dir, "bootstrap.json", `{"workspaces": [{"id": "44444444-4444-4444-8444-444444444444", "slug": "default",
		"organisation_id": "55555555-5555-4555-8555-555555555555"}],
		"api_keys": [{"key": "gw-cli-admin", "workspace": "default", "admin": true}]}`)
	p := startGateway(t, nil, "--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--bootstrap", boot)
	if p.base == "" {
		t.Fatalf("gateway exited: %v", p.err)
	}
	defer p.stop(t, os.Interrupt)
	cmd := exec.Command(gatewayBin, "keys", "list", "--url", p.base)
	cmd.Env = append(os.Environ(), "GATEWAY_API_KEY=gw-cli-admin")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ID ") {
		t.Fatalf("gateway keys list: %v\n%s", err, out)
	}
	cmd = exec.Command(gatewayBin, "keys", "list", "--url", p.base, "--key", "gw-wrong")
	out, err = cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), `"error"`) {
		t.Errorf("a wrong key: %v\n%s", err, out)
	}
}

// TestCLIProvidersAndConfigs: flags in kebab case become the body's fields; a secret never comes back.
func TestCLIProvidersAndConfigs(t *testing.T) {
	f := newCLIFixture(t)
	f.mustRun(t, "providers", "add", "--slug", "s", "--provider", "openai", "--api-key", "sk-secret-abcd")
	out := f.mustRun(t, "providers", "list")
	if !strings.Contains(out, "s ") || !strings.Contains(out, "abcd") || strings.Contains(out, "sk-secret") {
		t.Errorf("providers list:\n%s", out)
	}
	f.mustRun(t, "configs", "create", "--id", "cfg-a", "--config", `{"retry": {"attempts": 2}}`)
	f.mustRun(t, "configs", "put", "cfg-a", "-f", writeTemp(t, "c.json", `{"config": {"retry": {"attempts": 3}}}`))
	if out := f.mustRun(t, "configs", "get", "cfg-a", "--json"); !strings.Contains(out, `"attempts":3`) {
		t.Errorf("configs get --json: %s", out)
	}
	if out := f.mustRun(t, "providers", "delete", "s"); out != "deleted s\n" {
		t.Errorf("providers delete: %q", out)
	}
}
