package control

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports keeps doc.go's promise: control speaks no HTTP and sits below routes and runtime/bootstrap; only
// those and cmd call it.
func TestImports(t *testing.T) {
	const mod = "github.com/llmgw/gateway"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, mod+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	under := func(pkg, dir string) bool { return pkg == mod+"/"+dir || strings.HasPrefix(pkg, mod+"/"+dir+"/") }
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		for _, imp := range imports {
			switch {
			case under(pkg, "control") && (strings.HasPrefix(imp, "github.com/gofiber/") || strings.HasPrefix(imp, "github.com/valyala/") ||
				under(imp, "routes") || under(imp, "cmd") || under(imp, "runtime/bootstrap")):
				t.Errorf("%s imports %s: control speaks no HTTP and sits below routes and runtime/bootstrap", pkg, imp)
			case under(imp, "control") && !under(pkg, "control") && !under(pkg, "routes") && !under(pkg, "cmd") &&
				!under(pkg, "runtime/bootstrap"):
				t.Errorf("%s imports %s: only routes, runtime/bootstrap and cmd call the control plane", pkg, imp)
			}
		}
	}
}
