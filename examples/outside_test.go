package examples

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/plugins"
)

// readmeSection returns the section of the markdown file that starts with the heading line title ("## ...") and
// ends at the next heading of the same or a higher level outside code blocks.
func readmeSection(t *testing.T, path, title string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, s, ok := strings.Cut(string(b), "\n"+title+"\n")
	if !ok {
		t.Fatalf("%s has no heading %q", path, title)
	}
	level := strings.Index(title, " ")
	lines := strings.SplitAfter(s, "\n")
	fenced := false
	for i, line := range lines {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if n := len(line) - len(strings.TrimLeft(line, "#")); !fenced && n > 0 && n <= level && strings.HasPrefix(line[n:], " ") {
			return strings.Join(lines[:i], "")
		}
	}
	return s
}

// fencedBlocks returns the contents of the ``` blocks of a markdown text, each with its info string ("go", "sh").
func fencedBlocks(s string) (infos, blocks []string) {
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines); i++ {
		info, ok := strings.CutPrefix(lines[i], "```")
		if !ok {
			continue
		}
		var body []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			body = append(body, lines[i])
		}
		infos, blocks = append(infos, info), append(blocks, strings.Join(body, "\n")+"\n")
	}
	return infos, blocks
}

// Module paths of the out-of-tree example.
const (
	sdkModule    = "github.com/llmgw/gateway/sdk-guest"
	pluginModule = "example.com/myplugin"
)

// gatewayRoot returns the checkout's root, the parent of examples/.
func gatewayRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "go.mod")); err != nil || !strings.HasPrefix(string(b), "module github.com/llmgw/gateway\n") {
		t.Fatalf("%s is not the gateway's root: %v", root, err)
	}
	return root
}

// goCommand runs the go command in dir with the environment's variables overridden by env, and returns its
// standard output; it fails t with the combined output when the command fails.
func goCommand(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("skipping: go is not on PATH: %v", err)
	}
	cmd := exec.Command(goBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s in %s: %v\n%s%s", strings.Join(args, " "), dir, err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.String()
}

// offline is the environment of a build that may use only what is on disk: no proxy, no workspace, no other
// toolchain, no user GOFLAGS.
var offline = []string{"GOPROXY=off", "GOSUMDB=off", "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod -modcacherw"}

// TestOutsideModule builds examples/outside, a plugin in a module of its own (example.com/myplugin) whose go.mod
// requires only the SDK's module, with a replace to this checkout's sdk-guest, in a temporary folder outside the
// gateway's tree: offline (GOPROXY=off) with an empty module cache. It proves the module graph is the plugin and
// the SDK alone (never fiber, pebble or wazero), that the build needs no go.sum and no change to go.mod, and
// that sdk-guest/README.md shows the same go.mod and main.go. Then it loads the module into the gateway's plugin
// engine and calls the checks it offers, which switch on Input.CheckID.
func TestOutsideModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a wasm guest")
	}
	root := gatewayRoot(t)
	src := filepath.Join(root, "examples", "outside")
	files := map[string]string{}
	for _, name := range []string{"go.mod", "main.go", "main_test.go"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(b)
	}
	const treeReplace = "replace " + sdkModule + " => ../../sdk-guest\n"
	if !strings.HasPrefix(files["go.mod"], "module "+pluginModule+"\n") ||
		!strings.Contains(files["go.mod"], "\nrequire "+sdkModule+" v0.0.0-00010101000000-000000000000\n") ||
		!strings.HasSuffix(files["go.mod"], "\n"+treeReplace) {
		t.Fatalf("examples/outside/go.mod lost its module, require or replace line:\n%s", files["go.mod"])
	}

	section := readmeSection(t, filepath.Join(root, "sdk-guest", "README.md"), "## Use the SDK from your own module")
	var readmeGoMod, readmeMainGo string
	infos, blocks := fencedBlocks(section)
	for i, b := range blocks {
		switch {
		case readmeGoMod == "" && strings.HasPrefix(b, "module "):
			readmeGoMod = b
		case readmeMainGo == "" && infos[i] == "go":
			readmeMainGo = b
		}
	}
	const build = "GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o myplugin.wasm ."
	if want := strings.Replace(files["go.mod"], "=> ../../sdk-guest", "=> /path/to/gateway/sdk-guest", 1); readmeGoMod != want {
		t.Errorf("sdk-guest/README.md's go.mod:\n%s\nwant examples/outside/go.mod with its replace to /path/to/gateway/sdk-guest:\n%s", readmeGoMod, want)
	}
	if readmeMainGo != files["main.go"] {
		t.Errorf("sdk-guest/README.md's main.go differs from examples/outside/main.go:\n%s", readmeMainGo)
	}
	if !strings.Contains(section, "\n"+build+"\n") {
		t.Errorf("sdk-guest/README.md's section lost its build command %q", build)
	}

	dir := t.TempDir()
	goMod := strings.Replace(files["go.mod"], "=> ../../sdk-guest", "=> "+filepath.ToSlash(filepath.Join(root, "sdk-guest")), 1)
	files["go.mod"] = goMod
	t.Logf("go.mod of the plugin's module, in %s:\n%s", dir, goMod)
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(slices.Clone(offline), "GOMODCACHE="+t.TempDir()) // nothing to take from a module cache either
	wasmEnv := append(slices.Clone(env), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	args := strings.Fields(strings.TrimPrefix(build, "GOOS=wasip1 GOARCH=wasm go "))
	goCommand(t, dir, wasmEnv, args...)
	if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err != nil || string(b) != goMod {
		t.Errorf("the build changed go.mod (%v): the go.mod as written must do:\n%s", err, b)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.sum")); err == nil {
		t.Errorf("the build wrote a go.sum: the README says none is needed")
	}
	if got := strings.Fields(goCommand(t, dir, env, "list", "-m", "-f", "{{.Path}}", "all")); !slices.Equal(got, []string{pluginModule, sdkModule}) {
		t.Errorf("go list -m all: %v, want exactly %s and %s", got, pluginModule, sdkModule)
	}
	deps := strings.Fields(goCommand(t, dir, wasmEnv, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "."))
	slices.Sort(deps)
	if want := []string{pluginModule, sdkModule, sdkModule + "/internal/hostapi"}; !slices.Equal(deps, want) {
		t.Errorf("non-standard packages of the wasm build: %v, want exactly %v", deps, want)
	}
	wasm, err := os.ReadFile(filepath.Join(dir, "myplugin.wasm"))
	if err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	e, err := plugins.New(plugins.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	if err := e.Validate(ctx, wasm); err != nil {
		t.Fatalf("the engine refuses the module: %v", err)
	}
	if err := e.Load(ctx, "outside", "myplugin", wasm); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, checkID, text, params string
		verdict                     bool
		data, err                   string
	}{
		{"maxChars passes", "myplugin.maxChars", "héllo", `{"max": 5}`, true, "", ""},
		{"maxChars fails", "myplugin.maxChars", "héllo!", `{"max": 5}`, false, `{"chars":6,"max":5,"reason":"text too long"}`, ""},
		{"maxChars without max", "myplugin.maxChars", "x", `{}`, false, "", `maxChars: parameter "max" (an integer) is required`},
		{"noDigits passes", "myplugin.noDigits", "no digits", `{}`, true, "", ""},
		{"noDigits fails", "myplugin.noDigits", "route 66", `{}`, false, `{"reason":"the text has digits"}`, ""},
		{"unknown name", "myplugin.maxchars", "x", `{}`, false, "", "unknown check myplugin.maxchars (this plugin has maxChars and noDigits)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := &hostapi.Input{Text: tc.text, CheckID: tc.checkID, Stage: "before", Endpoint: "chat"}
			var params map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tc.params), &params); err != nil {
				t.Fatal(err)
			}
			for k, v := range params {
				in.Params = append(in.Params, hostapi.KV{Key: k, Value: string(v)})
			}
			out, err := e.Call(ctx, "outside", "myplugin", hostapi.KindCheck, in, nil)
			if err != nil {
				t.Fatal(err)
			}
			if out.Verdict != tc.verdict || string(out.Data) != tc.data || out.Error != tc.err {
				t.Fatalf("out = {Verdict:%v Data:%s Error:%q}, want {Verdict:%v Data:%s Error:%q}",
					out.Verdict, out.Data, out.Error, tc.verdict, tc.data, tc.err)
			}
		})
	}
}
