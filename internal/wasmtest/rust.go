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
	"time"
)

// RustToolchain is a cargo and rustc that can build for a wasm32 WASI target.
type RustToolchain struct {
	Cargo, Rustc, Target string
}

// rustPackages is what to install when no toolchain is found.
const rustPackages = "apt-get install -y rustc cargo libstd-rust-dev-wasm32"

var rustFound found[RustToolchain]

// RequireRust returns the Rust toolchain for wasm, found once per test binary: Debian's cargo with wasm32-wasi
// (Rust 1.63, what sdk-rust targets) first, then a cargo in PATH with wasm32-wasip1 or wasm32-wasi when its
// rustc lists the target and its sysroot has the std for it. Without one it skips tb, naming the Debian
// packages, or fails it when GATEWAY_REQUIRE_TOOLCHAINS=1.
func RequireRust(tb testing.TB) RustToolchain {
	tb.Helper()
	return rustFound.require(tb, findRust, "no Rust toolchain for wasm (%v): on Debian, "+rustPackages)
}

func findRust() (RustToolchain, error) {
	if tc, ok := usableRust("/usr/bin/cargo", "/usr/bin/rustc", "wasm32-wasi"); ok {
		return tc, nil
	}
	cargo, err := exec.LookPath("cargo")
	if err != nil {
		return RustToolchain{}, errors.New("no cargo in PATH")
	}
	rustc := filepath.Join(filepath.Dir(cargo), "rustc")
	if _, err := os.Stat(rustc); err != nil {
		if rustc, err = exec.LookPath("rustc"); err != nil {
			return RustToolchain{}, errors.New("no rustc next to cargo or in PATH")
		}
	}
	for _, target := range []string{"wasm32-wasip1", "wasm32-wasi"} {
		if tc, ok := usableRust(cargo, rustc, target); ok {
			return tc, nil
		}
	}
	return RustToolchain{}, fmt.Errorf("%s has no std for wasm32-wasip1 or wasm32-wasi", rustc)
}

// usableRust reports whether rustc lists target and its sysroot holds the std for it.
func usableRust(cargo, rustc, target string) (RustToolchain, bool) {
	if _, err := os.Stat(cargo); err != nil {
		return RustToolchain{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := exec.CommandContext(ctx, rustc, "--print", "target-list").Output()
	if err != nil || !strings.Contains("\n"+string(list), "\n"+target+"\n") {
		return RustToolchain{}, false
	}
	sysroot, err := exec.CommandContext(ctx, rustc, "--print", "sysroot").Output()
	if err != nil {
		return RustToolchain{}, false
	}
	if _, err := os.Stat(filepath.Join(strings.TrimSpace(string(sysroot)), "lib", "rustlib", target)); err != nil {
		return RustToolchain{}, false
	}
	return RustToolchain{Cargo: cargo, Rustc: rustc, Target: target}, true
}

// Command is cargo args run in dir with the toolchain's rustc, building into targetDir (so that the source tree
// gets no target/), bounded by ctx.
func (tc RustToolchain) Command(ctx context.Context, dir, targetDir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, tc.Cargo, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RUSTC="+tc.Rustc, "CARGO_TARGET_DIR="+targetDir, "CARGO_TERM_COLOR=never")
	return cmd
}

type rustBuild struct {
	once    sync.Once
	modules map[string][]byte // crate → module
	err     error
}

var rustBuilds sync.Map // absolute dir → *rustBuild

// buildTimeout bounds one toolchain build (a whole cargo workspace, or npm ci with the asc runs).
const buildTimeout = 10 * time.Minute

// BuildRust builds the cargo workspace (or package) in dir for wasm, as a plugin author does — `cargo build
// --offline --release --workspace --target <wasm32 target>` — into a temporary target directory, once per
// directory per test binary, and returns the module of crate. It skips tb as RequireRust does.
func BuildRust(tb testing.TB, dir, crate string) []byte {
	tb.Helper()
	tc := RequireRust(tb)
	abs, err := filepath.Abs(dir)
	if err != nil {
		tb.Fatal(err)
	}
	v, _ := rustBuilds.LoadOrStore(abs, new(rustBuild))
	b := v.(*rustBuild)
	b.once.Do(func() { b.modules, b.err = buildRust(tc, abs, tb.TempDir()) })
	if b.err != nil {
		tb.Fatal(b.err)
	}
	wasm, ok := b.modules[crate]
	if !ok {
		tb.Fatalf("cargo build in %s made no %s.wasm", abs, crate)
	}
	return wasm
}

func buildRust(tc RustToolchain, dir, targetDir string) (map[string][]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := tc.Command(ctx, dir, targetDir, "build", "--offline", "--release", "--workspace", "--target", tc.Target)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("cargo build in %s: %v\n%s", dir, err, msg)
	}
	out := filepath.Join(targetDir, tc.Target, "release")
	wasms, err := filepath.Glob(filepath.Join(out, "*.wasm"))
	if err != nil {
		return nil, err
	}
	modules := map[string][]byte{}
	for _, path := range wasms {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		modules[strings.TrimSuffix(filepath.Base(path), ".wasm")] = b
	}
	return modules, nil
}
