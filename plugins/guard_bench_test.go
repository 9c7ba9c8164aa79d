package plugins

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

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/internal/wasmtest"
)

// BenchmarkGuard measures what the runaway guard (WithCloseOnContextDone and the per-call deadline) costs on
// real plugins, for issue 23's question of whether a cheaper bound is worth having: the three examples
// (denylist, pii, router) of each SDK language, built as a plugin author would, on 1 KB and 64 KB inputs, each
// in a guarded engine (as in production) and an unguarded one. Compare guarded/unguarded at the same
// example, language and size: the ratio is the guard's cost on that workload.
//
//	go test -run '^$' -bench BenchmarkGuard -benchtime 200x ./plugins
func BenchmarkGuard(b *testing.B) {
	for _, lang := range []struct {
		name  string
		build func(testing.TB) map[string][]byte // example name → module; skips when the toolchain is missing
	}{
		{"go", goExamples},
		{"rust", rustExamples},
	} {
		b.Run(lang.name, func(b *testing.B) {
			wasm := lang.build(b)
			// One engine per guard mode for all the examples of the language: a Go guest compiles in seconds, and
			// guarded and unguarded code are compiled (and cached) apart, since wazero keys code by the flag.
			engines := map[bool]*Engine{}
			for _, unguarded := range []bool{false, true} {
				opts := testOptions(b)
				opts.unguarded = unguarded
				opts.CallTimeout = time.Minute // a 64 KB call on loaded shared cores must not fail the run; the guard's cost does not depend on it
				opts.MaxInstances = 1
				e := newEngine(b, opts)
				for name, m := range wasm {
					load(b, e, wsA, name, m)
				}
				engines[unguarded] = e
			}
			for _, size := range []struct {
				name string
				n    int
			}{{"1KB", 1 << 10}, {"64KB", 64 << 10}} {
				text := guardBenchText(size.n)
				for _, ex := range guardBenchExamples(text) {
					for _, mode := range []struct {
						name      string
						unguarded bool
					}{{"guarded", false}, {"unguarded", true}} {
						b.Run(ex.name+"/"+size.name+"/"+mode.name, func(b *testing.B) {
							e := engines[mode.unguarded]
							ctx := context.Background()
							if out := call(b, e, wsA, ex.name, ex.kind, ex.in, nil); out.Error != "" {
								b.Fatalf("%s answers an error: %s", ex.name, out.Error)
							}
							b.SetBytes(int64(len(text)))
							b.ReportAllocs()
							b.ResetTimer()
							for b.Loop() {
								if _, err := e.Call(ctx, wsA, ex.name, ex.kind, ex.in, nil); err != nil {
									b.Fatal(err)
								}
							}
						})
					}
				}
			}
		})
	}
}

type guardBenchExample struct {
	name string
	kind hostapi.Kind
	in   *hostapi.Input
}

// guardBenchExamples are the calls of sdk-rust's BenchmarkExamples, so that both languages do the same work and
// the figures compare with that benchmark's: the denylist with two words and two patterns, the PII check
// redacting, and the router's condition with a min_chars it cannot reach, so that it reads the whole text for
// non-Latin script.
func guardBenchExamples(text string) []guardBenchExample {
	param := func(name, json string) hostapi.KV { return hostapi.KV{Key: name, Value: json} }
	return []guardBenchExample{
		{"denylist", hostapi.KindCheck, &hostapi.Input{Text: text, CheckID: "denylist.check", Params: []hostapi.KV{
			param("words", `["secret","password"]`), param("patterns", `["\\d{3}-\\d{2}-\\d{4}","(?i)api[_-]?key"]`)}}},
		{"pii", hostapi.KindCheck, &hostapi.Input{Text: text, CheckID: "pii.detect", Params: []hostapi.KV{param("action", `"redact"`)}}},
		{"router", hostapi.KindCondition, &hostapi.Input{Text: text, Stage: "condition", Params: []hostapi.KV{param("min_chars", "1000000")}}},
	}
}

// guardBenchText is about n bytes of prose with a little PII and a deny-listed word near the end, as in
// sdk-rust's benchmark.
func guardBenchText(n int) string {
	var b strings.Builder
	for b.Len() < n-64 {
		b.WriteString("The quarterly report covers revenue, costs and the roadmap for next year. ")
	}
	b.WriteString("mail jane@example.com, secret ")
	return b.String()
}

func goExamples(tb testing.TB) map[string][]byte {
	out := map[string][]byte{}
	for _, name := range []string{"denylist", "pii", "router"} {
		out[name] = wasmtest.Build(tb, filepath.Join("..", "examples", name))
	}
	return out
}

// The Rust examples are built here with sdk-rust's cargo command: its builder lives in that package's tests,
// which import this package.
var rustBuild struct {
	once   sync.Once
	wasm   map[string][]byte
	err    error
	noTool error
}

// rustExamples builds sdk-rust's examples once per run into the run's temp dir. It skips tb when no Rust
// toolchain for wasm is found, unless GATEWAY_REQUIRE_TOOLCHAINS=1.
func rustExamples(tb testing.TB) map[string][]byte {
	tb.Helper()
	rustBuild.once.Do(buildRustExamples)
	if rustBuild.noTool != nil {
		msg := "no Rust toolchain for wasm (" + rustBuild.noTool.Error() + "): on Debian, apt-get install -y rustc cargo libstd-rust-dev-wasm32"
		if os.Getenv("GATEWAY_REQUIRE_TOOLCHAINS") == "1" {
			tb.Fatal(msg + " (GATEWAY_REQUIRE_TOOLCHAINS=1)")
		}
		tb.Skip(msg)
	}
	if rustBuild.err != nil {
		tb.Fatal(rustBuild.err)
	}
	return rustBuild.wasm
}

func buildRustExamples() {
	cargo, rustc, target, err := rustToolchain()
	if err != nil {
		rustBuild.noTool = err
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	targetDir := filepath.Join(testDir, "cargo-target")
	cmd := exec.CommandContext(ctx, cargo, "build", "--offline", "--release", "--workspace", "--target", target)
	cmd.Dir = filepath.Join("..", "sdk-rust")
	cmd.Env = append(os.Environ(), "RUSTC="+rustc, "CARGO_TARGET_DIR="+targetDir, "CARGO_TERM_COLOR=never")
	if msg, err := cmd.CombinedOutput(); err != nil {
		rustBuild.err = fmt.Errorf("cargo build in sdk-rust: %v\n%s", err, msg)
		return
	}
	rustBuild.wasm = map[string][]byte{}
	for _, name := range []string{"denylist", "pii", "router"} {
		b, err := os.ReadFile(filepath.Join(targetDir, target, "release", name+".wasm"))
		if err != nil {
			rustBuild.err = err
			return
		}
		rustBuild.wasm[name] = b
	}
}

// rustToolchain finds a toolchain as sdk-rust's tests do: Debian's cargo with wasm32-wasi (Rust 1.63, what the
// SDK targets) first, then the cargo in PATH with wasm32-wasip1 or wasm32-wasi.
func rustToolchain() (cargo, rustc, target string, err error) {
	if rustTargetUsable("/usr/bin/cargo", "/usr/bin/rustc", "wasm32-wasi") {
		return "/usr/bin/cargo", "/usr/bin/rustc", "wasm32-wasi", nil
	}
	if cargo, err = exec.LookPath("cargo"); err != nil {
		return "", "", "", errors.New("no cargo in PATH")
	}
	rustc = filepath.Join(filepath.Dir(cargo), "rustc")
	if _, err := os.Stat(rustc); err != nil {
		if rustc, err = exec.LookPath("rustc"); err != nil {
			return "", "", "", errors.New("no rustc next to cargo or in PATH")
		}
	}
	for _, target := range []string{"wasm32-wasip1", "wasm32-wasi"} {
		if rustTargetUsable(cargo, rustc, target) {
			return cargo, rustc, target, nil
		}
	}
	return "", "", "", fmt.Errorf("%s has no std for wasm32-wasip1 or wasm32-wasi", rustc)
}

// rustTargetUsable reports whether rustc lists target and its sysroot holds the std for it.
func rustTargetUsable(cargo, rustc, target string) bool {
	if _, err := os.Stat(cargo); err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := exec.CommandContext(ctx, rustc, "--print", "target-list").Output()
	if err != nil || !strings.Contains("\n"+string(list), "\n"+target+"\n") {
		return false
	}
	sysroot, err := exec.CommandContext(ctx, rustc, "--print", "sysroot").Output()
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(strings.TrimSpace(string(sysroot)), "lib", "rustlib", target))
	return err == nil
}
