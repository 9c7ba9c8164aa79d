package sdk

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"strings"
	"testing"

	"github.com/llmgw/gateway/sdk-guest/internal/hostapi"
)

// TestGuestDependencies proves that a plugin importing the SDK pulls in nothing but the SDK's copy of hostapi
// and the standard library when built for wasm (never fiber, pebble or wazero), and that the SDK's module
// requires no other module.
func TestGuestDependencies(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("skipping: go is not on PATH: %v", err)
	}
	for _, env := range [][]string{{"GOOS=wasip1", "GOARCH=wasm"}, nil} {
		cmd := exec.Command(goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")
		cmd.Env = append(cmd.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v go list: %v\n%s", env, err, out)
		}
		got := strings.Fields(string(out))
		want := []string{"github.com/llmgw/gateway/sdk-guest/internal/hostapi", "github.com/llmgw/gateway/sdk-guest"}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%v: non-standard dependencies %v, want exactly %v", env, got, want)
		}
	}
	out, err := exec.Command(goBin, "list", "-m", "-f", "{{.Path}}", "all").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -m all: %v\n%s", err, out)
	}
	if got := strings.Fields(string(out)); len(got) != 1 || got[0] != "github.com/llmgw/gateway/sdk-guest" {
		t.Errorf("the module graph is %v, want the SDK's module alone", got)
	}
}

// TestExportNames checks that the //go:wasmexport and //go:wasmimport directives use hostapi's names (the
// SDK's copy, which TestCopyIsCurrent in the gateway's hostapi/internal/gensdkcopy keeps equal to the source).
func TestExportNames(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "host_wasip1.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	exports := map[string]bool{}
	imports := map[string]bool{}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Doc == nil {
			continue
		}
		for _, c := range fn.Doc.List {
			fields := strings.Fields(c.Text)
			switch {
			case len(fields) == 2 && fields[0] == "//go:wasmexport":
				exports[fields[1]] = true
			case len(fields) == 3 && fields[0] == "//go:wasmimport":
				if fields[1] != hostapi.ModuleName {
					t.Errorf("imports from module %s, want %s", fields[1], hostapi.ModuleName)
				}
				imports[fields[2]] = true
			}
		}
	}
	for _, name := range []string{hostapi.ExportMarker, hostapi.ExportAlloc, hostapi.ExportCall, hostapi.ExportVersion} {
		if !exports[name] {
			t.Errorf("no //go:wasmexport %s", name)
		}
	}
	for _, name := range []string{hostapi.ImportLog, hostapi.ImportNowUnixMs, hostapi.ImportRequestField} {
		if !imports[name] {
			t.Errorf("no //go:wasmimport %s %s", hostapi.ModuleName, name)
		}
	}
	if len(exports) != 4 || len(imports) != 3 {
		t.Errorf("exports %v, imports %v", exports, imports)
	}
}
