package sdkas_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The guests are built once per test binary, into a temporary directory, so that every test shares one build
// and the source tree gets only node_modules (which .gitignore keeps out of git).

// debianPackages is what to install when node or npm is missing.
const debianPackages = "apt-get install -y nodejs npm"

// guests maps each guest's name to its entry file.
var guests = map[string]string{
	"conformance": "conformance/index.ts",
	"denylist":    "examples/denylist/index.ts",
	"pii":         "examples/pii/index.ts",
	"router":      "examples/router/index.ts",
}

// guestNames is guests' keys in a fixed order.
var guestNames = []string{"conformance", "denylist", "pii", "router"}

// ascFlags is the build of every guest, as README.md gives it: the minimal runtime (TLSF and a
// mark-and-sweep collector that runs only when gateway_call asks, at the end of each call), no env.abort
// import, memory exported as "memory" (asc's default).
var ascFlags = []string{"-O3", "--noAssert", "--runtime", "minimal", "--use", "abort=assembly/abi/gatewayAbort"}

var (
	buildOnce sync.Once
	built     map[string][]byte // guest name -> module
	buildErr  error
	noTC      error // no node or npm: skip (or fail when required)
	outDir    = ""  // set by TestMain
	npx       = ""
	buildTime time.Duration
)

func findToolchain() (npm, npx string, err error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", "", errors.New("no node in PATH")
	}
	if npm, err = exec.LookPath("npm"); err != nil {
		return "", "", errors.New("no npm in PATH")
	}
	if npx, err = exec.LookPath("npx"); err != nil {
		return "", "", errors.New("no npx in PATH")
	}
	return npm, npx, nil
}

// run runs a command in this directory, bounded by ctx, and returns its combined output.
func run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s %v: %w\n%s", name, args, err, out)
	}
	return out, nil
}

// asc compiles entry into out with ascFlags and extra.
func asc(ctx context.Context, entry, out string, extra ...string) error {
	args := append([]string{"--no-install", "asc", entry, "-o", out}, ascFlags...)
	_, err := run(ctx, npx, append(args, extra...)...)
	return err
}

func buildAll() {
	npm, x, err := findToolchain()
	if err != nil {
		noTC = err
		return
	}
	npx = x
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	// npm ci installs exactly package-lock.json's assemblyscript, and fails rather than update the lock file.
	if _, err := run(ctx, npm, "ci", "--no-audit", "--no-fund"); err != nil {
		buildErr = err
		return
	}
	var wg sync.WaitGroup
	errs := make([]error, len(guestNames))
	for i, name := range guestNames {
		wg.Go(func() { errs[i] = asc(ctx, guests[name], filepath.Join(outDir, name+".wasm")) })
	}
	wg.Wait()
	if buildErr = errors.Join(errs...); buildErr != nil {
		return
	}
	buildTime = time.Since(start)
	built = map[string][]byte{}
	for _, name := range guestNames {
		b, err := os.ReadFile(filepath.Join(outDir, name+".wasm"))
		if err != nil {
			buildErr = err
			return
		}
		built[name] = b
	}
}

// requireToolchain skips tb when node or npm is missing, unless GATEWAY_REQUIRE_TOOLCHAINS=1.
func requireToolchain(tb testing.TB) {
	tb.Helper()
	buildOnce.Do(buildAll)
	if noTC != nil {
		msg := "no AssemblyScript toolchain (" + noTC.Error() + "): node and npm are needed; on Debian, " + debianPackages
		if os.Getenv("GATEWAY_REQUIRE_TOOLCHAINS") == "1" {
			tb.Fatal(msg + " (GATEWAY_REQUIRE_TOOLCHAINS=1)")
		}
		tb.Skip(msg)
	}
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
}

// module returns the built module of guest name.
func module(tb testing.TB, name string) []byte {
	tb.Helper()
	requireToolchain(tb)
	return built[name]
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sdk-assemblyscript-build-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	outDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
