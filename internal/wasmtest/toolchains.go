package wasmtest

import (
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"testing"
)

// Language is a guest language with an SDK in this repository, named as the benchmarks and the example table
// name it.
type Language string

// The guest languages.
const (
	Go             Language = "go"
	Rust           Language = "rust"
	AssemblyScript Language = "assemblyscript"
)

// Languages are every guest language, in the order benchmarks list them.
var Languages = []Language{Go, Rust, AssemblyScript}

// Guest builds (once per test binary) and returns lang's build of a guest every SDK has: an example
// ("denylist", "pii", "router") or "conformance", the conformance guest of package conformance. It skips tb
// when lang's toolchain is missing, as the builders do.
func Guest(tb testing.TB, lang Language, name string) []byte {
	tb.Helper()
	root := repoRoot()
	switch lang {
	case Go:
		if name == "conformance" {
			return Build(tb, filepath.Join(root, "internal", "conformance", "testdata", "goguest"))
		}
		return Build(tb, filepath.Join(root, "examples", name))
	case Rust:
		return BuildRust(tb, filepath.Join(root, "sdk-rust"), name)
	case AssemblyScript:
		dir := filepath.Join(root, "sdk-assemblyscript")
		tc := RequireAssemblyScript(tb)
		asWarm.Do(func() {
			// asc takes seconds a guest: the SDK's guests compile in parallel, once, whichever is asked first.
			var wg sync.WaitGroup
			for _, g := range SDKGuests {
				wg.Go(func() { _, _ = tc.compile(dir, asEntry(g), nil) }) // an error is reported by the build that asks
			}
			wg.Wait()
		})
		return BuildAssemblyScript(tb, dir, asEntry(name))
	}
	tb.Fatalf("wasmtest: no guest language %q", lang)
	return nil
}

// SDKGuests are the guests every SDK has: the three examples and the conformance guest.
var SDKGuests = []string{"conformance", "denylist", "pii", "router"}

var asWarm sync.Once

// asEntry is the entry file of sdk-assemblyscript's guest name, relative to the SDK's folder.
func asEntry(name string) string {
	if name == "conformance" {
		return filepath.Join("conformance", "index.ts")
	}
	return filepath.Join("examples", name, "index.ts")
}

// repoRoot is the root of the source tree this package was built from.
func repoRoot() string {
	_, file, _, ok := goruntime.Caller(0)
	if !ok {
		panic("wasmtest: no caller information to find the source tree")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// RequireToolchainsEnv makes a missing guest toolchain fail a test instead of skipping it (CI sets it).
const RequireToolchainsEnv = "GATEWAY_REQUIRE_TOOLCHAINS"

// found is a toolchain looked for once per test binary.
type found[T any] struct {
	once sync.Once
	tc   T
	err  error
}

// require returns the toolchain find finds. Without one it skips tb, or fails it when RequireToolchainsEnv is 1,
// with missing (a format of find's error) naming what to install.
func (f *found[T]) require(tb testing.TB, find func() (T, error), missing string) T {
	tb.Helper()
	f.once.Do(func() { f.tc, f.err = find() })
	if f.err != nil {
		msg := fmt.Sprintf(missing, f.err)
		if os.Getenv(RequireToolchainsEnv) == "1" {
			tb.Fatal(msg + " (" + RequireToolchainsEnv + "=1)")
		}
		tb.Skip(msg)
	}
	return f.tc
}
