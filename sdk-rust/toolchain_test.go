package sdkrust_test

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
	"time"
)

// The Rust crates are built once per test binary, into a temporary target directory, so that the source tree
// gets no target/ and every test shares one build.

// toolchain is a working (cargo, rustc, target) triple.
type toolchain struct {
	cargo, rustc, target string
}

// debianPackages is what to install when no toolchain is found.
const debianPackages = "apt-get install -y rustc cargo libstd-rust-dev-wasm32"

// findToolchain prefers Debian's cargo with wasm32-wasi (Rust 1.63, what the SDK targets), then a cargo in PATH
// with wasm32-wasip1 or wasm32-wasi when rustc lists the target and its sysroot has the std for it.
func findToolchain() (toolchain, error) {
	if tc, ok := usable("/usr/bin/cargo", "/usr/bin/rustc", "wasm32-wasi"); ok {
		return tc, nil
	}
	cargo, err := exec.LookPath("cargo")
	if err != nil {
		return toolchain{}, errors.New("no cargo in PATH")
	}
	rustc := filepath.Join(filepath.Dir(cargo), "rustc")
	if _, err := os.Stat(rustc); err != nil {
		if rustc, err = exec.LookPath("rustc"); err != nil {
			return toolchain{}, errors.New("no rustc next to cargo or in PATH")
		}
	}
	for _, target := range []string{"wasm32-wasip1", "wasm32-wasi"} {
		if tc, ok := usable(cargo, rustc, target); ok {
			return tc, nil
		}
	}
	return toolchain{}, fmt.Errorf("%s has no std for wasm32-wasip1 or wasm32-wasi", rustc)
}

func usable(cargo, rustc, target string) (toolchain, bool) {
	if _, err := os.Stat(cargo); err != nil {
		return toolchain{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := exec.CommandContext(ctx, rustc, "--print", "target-list").Output()
	if err != nil || !strings.Contains("\n"+string(list), "\n"+target+"\n") {
		return toolchain{}, false
	}
	sysroot, err := exec.CommandContext(ctx, rustc, "--print", "sysroot").Output()
	if err != nil {
		return toolchain{}, false
	}
	if _, err := os.Stat(filepath.Join(strings.TrimSpace(string(sysroot)), "lib", "rustlib", target)); err != nil {
		return toolchain{}, false
	}
	return toolchain{cargo: cargo, rustc: rustc, target: target}, true
}

var (
	buildOnce sync.Once
	built     map[string][]byte // crate name -> module
	buildErr  error
	buildTC   toolchain
	noTC      error // no toolchain: skip (or fail when required)
	targetDir = ""  // set by TestMain
	buildTime time.Duration
)

// cargo runs cargo with the toolchain's rustc, offline, in this directory.
func cargo(ctx context.Context, tc toolchain, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, tc.cargo, args...)
	cmd.Env = append(os.Environ(), "RUSTC="+tc.rustc, "CARGO_TARGET_DIR="+targetDir, "CARGO_TERM_COLOR=never")
	return cmd.CombinedOutput()
}

// crates are the workspace's plugin crates.
var crates = []string{"conformance", "denylist", "pii", "router"}

func buildAll() {
	tc, err := findToolchain()
	if err != nil {
		noTC = err
		return
	}
	buildTC = tc
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	if out, err := cargo(ctx, tc, "build", "--offline", "--release", "--workspace", "--target", tc.target); err != nil {
		buildErr = fmt.Errorf("cargo build: %v\n%s", err, out)
		return
	}
	buildTime = time.Since(start)
	built = map[string][]byte{}
	for _, c := range crates {
		b, err := os.ReadFile(filepath.Join(targetDir, tc.target, "release", c+".wasm"))
		if err != nil {
			buildErr = err
			return
		}
		built[c] = b
	}
}

// requireToolchain skips tb when no Rust toolchain is found, unless GATEWAY_REQUIRE_TOOLCHAINS=1.
func requireToolchain(tb testing.TB) toolchain {
	tb.Helper()
	buildOnce.Do(buildAll)
	if noTC != nil {
		msg := "no Rust toolchain for wasm (" + noTC.Error() + "): on Debian, " + debianPackages
		if os.Getenv("GATEWAY_REQUIRE_TOOLCHAINS") == "1" {
			tb.Fatal(msg + " (GATEWAY_REQUIRE_TOOLCHAINS=1)")
		}
		tb.Skip(msg)
	}
	return buildTC
}

// module returns the built module of crate.
func module(tb testing.TB, crate string) []byte {
	tb.Helper()
	requireToolchain(tb)
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return built[crate]
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sdk-rust-target-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	targetDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
