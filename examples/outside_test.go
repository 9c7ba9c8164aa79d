package examples

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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

// TestOutsideModule builds the plugin of sdk-guest/README.md's "Use the SDK from your own module" in a module
// of its own outside the gateway's tree, with that section's go.mod (require + replace to this checkout) and
// build command, offline: GOPROXY=off, no go.sum, an empty module cache. Then it loads the module into the
// gateway's plugin engine and calls the checks it offers, which switch on Input.CheckID.
func TestOutsideModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a wasm guest")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("skipping: go is not on PATH: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "go.mod")); err != nil || !strings.HasPrefix(string(b), "module github.com/llmgw/gateway\n") {
		t.Fatalf("%s is not the gateway's root: %v", root, err)
	}

	section := readmeSection(t, filepath.Join(root, "sdk-guest", "README.md"), "## Use the SDK from your own module")
	var goMod, mainGo string
	infos, blocks := fencedBlocks(section)
	for i, b := range blocks {
		switch {
		case goMod == "" && strings.HasPrefix(b, "module "):
			goMod = b
		case mainGo == "" && infos[i] == "go":
			mainGo = b
		}
	}
	const replace = "replace github.com/llmgw/gateway => /path/to/gateway\n"
	const build = "GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o myplugin.wasm ."
	if !strings.Contains(goMod, "\nrequire github.com/llmgw/gateway v0.0.0-00010101000000-000000000000\n") ||
		!strings.HasSuffix(goMod, "\n"+replace) || !strings.Contains(mainGo, `sdk "github.com/llmgw/gateway/sdk-guest"`) ||
		!strings.Contains(section, "\n"+build+"\n") {
		t.Fatalf("the README's section lost its go.mod, main.go or build command:\ngo.mod:\n%s\nmain.go:\n%s", goMod, mainGo)
	}

	dir := t.TempDir()
	goMod = strings.Replace(goMod, "/path/to/gateway", filepath.ToSlash(root), 1)
	for name, content := range map[string]string{"go.mod": goMod, "main.go": mainGo} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := strings.Fields(strings.TrimPrefix(build, "GOOS=wasip1 GOARCH=wasm go "))
	cmd := exec.Command(goBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0",
		"GOPROXY=off", "GOSUMDB=off", "GOWORK=off", "GOTOOLCHAIN=local",
		"GOFLAGS=-mod=readonly -modcacherw", // -mod=readonly: go.mod must be right as written; no user GOFLAGS
		"GOMODCACHE="+t.TempDir())           // nothing to take from a module cache either
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s in %s: %v\n%s\ngo.mod:\n%s", build, dir, err, out, goMod)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.sum")); err == nil {
		t.Errorf("the build wrote a go.sum: the README says none is needed")
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
