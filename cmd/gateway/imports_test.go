package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportDirection keeps the layout of DESIGN.md and STYLE.md: imports point one way
// (cmd → routes → runtime → {providers, guardrails, storage, plugins}; guardrails, plugins, sdk-guest → hostapi),
// only storage imports pebble, only routes imports fiber, and leaf packages stay leaves.
func TestImportDirection(t *testing.T) {
	const mod = "github.com/llmgw/gateway"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, mod+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	under := func(pkg, dir string) bool {
		p := mod + "/" + dir
		return pkg == p || strings.HasPrefix(pkg, p+"/")
	}
	ours := func(imp string) bool { return imp == mod || strings.HasPrefix(imp, mod+"/") }
	type rule struct {
		name    string
		applies func(pkg string) bool
		bans    func(pkg, imp string) bool
	}
	rules := []rule{
		{"nothing imports routes or cmd but cmd",
			func(pkg string) bool { return !under(pkg, "cmd") },
			func(_, imp string) bool { return under(imp, "routes") || under(imp, "cmd") }},
		{"storage imports nothing of ours but the leaf internal/jsonstr",
			func(pkg string) bool { return under(pkg, "storage") },
			func(_, imp string) bool { return ours(imp) && imp != mod+"/internal/jsonstr" }},
		{"internal/jsonstr and tracing import nothing of ours",
			func(pkg string) bool { return under(pkg, "internal/jsonstr") || under(pkg, "tracing") },
			func(_, imp string) bool { return ours(imp) && !under(imp, "tracing") }},
		{"reqlog imports only storage of ours",
			func(pkg string) bool { return under(pkg, "reqlog") },
			func(_, imp string) bool { return ours(imp) && !under(imp, "storage") }},
		{"hostapi and runtime/gwerr import only the standard library",
			func(pkg string) bool { return under(pkg, "hostapi") || under(pkg, "runtime/gwerr") },
			func(_, imp string) bool { return strings.Contains(strings.Split(imp, "/")[0], ".") }},
		{"runtime/jsonfield is a leaf: the standard library and runtime/gwerr only",
			func(pkg string) bool { return under(pkg, "runtime/jsonfield") },
			func(_, imp string) bool {
				return strings.Contains(strings.Split(imp, "/")[0], ".") && imp != mod+"/runtime/gwerr"
			}},
		{"runtime/config and runtime/bootstrap know providers through the registry, never an adapter",
			func(pkg string) bool { return under(pkg, "runtime/config") || under(pkg, "runtime/bootstrap") },
			func(_, imp string) bool { return under(imp, "runtime/providers") && imp != mod+"/runtime/providers" }},
		{"metrics imports nothing of ours",
			func(pkg string) bool { return under(pkg, "metrics") },
			func(_, imp string) bool { return ours(imp) }},
		{"guardrails and plugins do not import each other",
			func(pkg string) bool { return under(pkg, "guardrails") || under(pkg, "plugins") },
			func(pkg, imp string) bool {
				return (under(pkg, "guardrails") && under(imp, "plugins")) || (under(pkg, "plugins") && under(imp, "guardrails"))
			}},
		{"sdk-guest and examples import only hostapi and sdk-guest of ours",
			func(pkg string) bool { return under(pkg, "sdk-guest") },
			func(_, imp string) bool { return ours(imp) && !under(imp, "hostapi") && !under(imp, "sdk-guest") }},
		{"provider adapters do not import routes, storage or each other",
			func(pkg string) bool { return under(pkg, "runtime/providers") },
			func(pkg, imp string) bool {
				if under(imp, "storage") || under(imp, "routes") {
					return true
				}
				// runtime/providers/<a> may import runtime/providers and its internal helpers, not <b>.
				if !under(imp, "runtime/providers") || imp == mod+"/runtime/providers" || under(imp, "runtime/providers/internal") {
					return false
				}
				return adapterOf(pkg) != adapterOf(imp)
			}},
		{"only storage imports pebble",
			func(pkg string) bool { return !under(pkg, "storage") },
			func(_, imp string) bool { return strings.HasPrefix(imp, "github.com/cockroachdb/pebble") }},
		{"only routes imports fiber",
			func(pkg string) bool { return !under(pkg, "routes") },
			func(_, imp string) bool { return strings.HasPrefix(imp, "github.com/gofiber/") }},
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		for _, r := range rules {
			if !r.applies(pkg) {
				continue
			}
			for _, imp := range imports {
				if r.bans(pkg, imp) {
					t.Errorf("%s imports %s: %s", pkg, imp, r.name)
				}
			}
		}
	}
}

// adapterOf returns the adapter folder of a package under runtime/providers ("openai" for .../providers/openai/x).
func adapterOf(pkg string) string {
	_, rest, _ := strings.Cut(pkg, "/runtime/providers/")
	name, _, _ := strings.Cut(rest, "/")
	return name
}
