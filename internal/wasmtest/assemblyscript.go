package wasmtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// AssemblyScriptFlags is the asc build of sdk-assemblyscript's guests, as its README.md gives it: the minimal
// runtime (TLSF and a mark-and-sweep collector that runs only when gateway_call asks, at the end of each call),
// no env.abort import, memory exported as "memory" (asc's default). The --use path is relative to the SDK's
// folder.
var AssemblyScriptFlags = []string{"-O3", "--noAssert", "--runtime", "minimal", "--use", "abort=assembly/abi/gatewayAbort"}

// asPackages is what to install when node or npm is missing.
const asPackages = "apt-get install -y nodejs npm"

// AssemblyScriptToolchain is the node, npm and npx that run asc.
type AssemblyScriptToolchain struct {
	NPM, NPX string
}

var asFound found[AssemblyScriptToolchain]

// RequireAssemblyScript returns node's npm and npx, found once per test binary. Without them it skips tb,
// naming the Debian packages, or fails it when GATEWAY_REQUIRE_TOOLCHAINS=1.
func RequireAssemblyScript(tb testing.TB) AssemblyScriptToolchain {
	tb.Helper()
	return asFound.require(tb, findAssemblyScript, "no AssemblyScript toolchain (%v): node and npm are needed; on Debian, "+asPackages)
}

func findAssemblyScript() (tc AssemblyScriptToolchain, err error) {
	if _, err := exec.LookPath("node"); err != nil {
		return tc, errors.New("no node in PATH")
	}
	if tc.NPM, err = exec.LookPath("npm"); err != nil {
		return tc, errors.New("no npm in PATH")
	}
	if tc.NPX, err = exec.LookPath("npx"); err != nil {
		return tc, errors.New("no npx in PATH")
	}
	return tc, nil
}

// run runs name args in dir, bounded by ctx, and returns its combined output.
func (tc AssemblyScriptToolchain) run(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s %s in %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), dir, err, out)
	}
	return out, nil
}

type onceResult struct {
	once sync.Once
	wasm []byte
	err  error
}

var (
	npmInstalls sync.Map // absolute dir → *onceResult
	ascBuilds   sync.Map // absolute dir, entry and flags → *onceResult
)

// install runs npm ci in dir once per test binary: it installs exactly package-lock.json's assemblyscript, and
// fails rather than update the lock file.
func (tc AssemblyScriptToolchain) install(dir string) error {
	v, _ := npmInstalls.LoadOrStore(dir, new(onceResult))
	r := v.(*onceResult)
	r.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		_, r.err = tc.run(ctx, dir, tc.NPM, "ci", "--no-audit", "--no-fund")
	})
	return r.err
}

// compile compiles entry (relative to dir) with AssemblyScriptFlags and extra (later flags win), once per
// (dir, entry, extra) per test binary.
func (tc AssemblyScriptToolchain) compile(dir, entry string, extra []string) ([]byte, error) {
	if err := tc.install(dir); err != nil {
		return nil, err
	}
	v, _ := ascBuilds.LoadOrStore(strings.Join(append([]string{dir, entry}, extra...), "\x00"), new(onceResult))
	r := v.(*onceResult)
	r.once.Do(func() {
		out, err := os.MkdirTemp("", "wasmtest-asc-")
		if err != nil {
			r.err = err
			return
		}
		defer os.RemoveAll(out)
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		path := filepath.Join(out, "guest.wasm")
		args := append([]string{"--no-install", "asc", entry, "-o", path}, AssemblyScriptFlags...)
		if _, r.err = tc.run(ctx, dir, tc.NPX, append(args, extra...)...); r.err != nil {
			return
		}
		r.wasm, r.err = os.ReadFile(path)
	})
	return r.wasm, r.err
}

// BuildAssemblyScript builds entry (a path relative to dir, an npm package with assemblyscript in its lock
// file) as a plugin author does: `npm ci` once per dir, then `npx asc entry` with AssemblyScriptFlags and extra
// (later flags win), once per entry and flags per test binary. It skips tb as RequireAssemblyScript does.
func BuildAssemblyScript(tb testing.TB, dir, entry string, extra ...string) []byte {
	tb.Helper()
	tc := RequireAssemblyScript(tb)
	abs, err := filepath.Abs(dir)
	if err != nil {
		tb.Fatal(err)
	}
	wasm, err := tc.compile(abs, entry, extra)
	if err != nil {
		tb.Fatal(err)
	}
	return wasm
}
