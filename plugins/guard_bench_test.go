package plugins

import (
	"context"
	"testing"
	"time"

	"github.com/llmgw/gateway/internal/wasmtest"
)

// BenchmarkGuard measures what the runaway guard costs on real plugins, for issue 23's question of whether a
// cheaper bound is worth having: the three examples (denylist, pii, router) of each SDK language, built as a
// plugin author would (wasmtest.Guest), on the examples' benchmark workload (wasmtest.BenchCalls, the one
// internal/examplecases' BenchmarkLanguages measures) at 1 KB and 64 KB, each in a guarded engine (as in
// production) and an unguarded one. Compare guarded/unguarded at the same example, language and size: the ratio
// is the guard's cost on that workload.
//
//	go test -run '^$' -bench BenchmarkGuard -benchtime 200x ./plugins
func BenchmarkGuard(b *testing.B) {
	for _, lang := range wasmtest.Languages {
		b.Run(string(lang), func(b *testing.B) {
			wasm := map[string][]byte{}
			for _, name := range []string{"denylist", "pii", "router"} {
				wasm[name] = wasmtest.Guest(b, lang, name) // skips when the toolchain is missing
			}
			// One engine per guard mode for all the examples of the language: a Go guest compiles in seconds, and
			// guarded and unguarded code are compiled (and cached) apart.
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
				text := wasmtest.BenchText(size.n)
				for _, ex := range wasmtest.BenchCalls(text) {
					for _, mode := range []struct {
						name      string
						unguarded bool
					}{{"guarded", false}, {"unguarded", true}} {
						b.Run(ex.Example+"/"+size.name+"/"+mode.name, func(b *testing.B) {
							e := engines[mode.unguarded]
							ctx := context.Background()
							if out := call(b, e, wsA, ex.Example, ex.Kind, ex.In, nil); out.Error != "" {
								b.Fatalf("%s answers an error: %s", ex.Example, out.Error)
							}
							b.SetBytes(int64(len(text)))
							b.ReportAllocs()
							b.ResetTimer()
							for b.Loop() {
								if _, err := e.Call(ctx, wsA, ex.Example, ex.Kind, ex.In, nil); err != nil {
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
