package examplecases

import (
	"context"
	"log/slog"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/llmgw/gateway/internal/wasmtest"
	"github.com/llmgw/gateway/plugins"
)

// BenchmarkLanguages measures every language's examples as the gateway runs them (Benchmark), with the no-op
// call of each:
//
//	go test -run '^$' -bench BenchmarkLanguages -benchtime 200x ./internal/examplecases
func BenchmarkLanguages(b *testing.B) {
	for _, lang := range wasmtest.Languages {
		b.Run(string(lang), func(b *testing.B) { Benchmark(b, lang) })
	}
}

// BenchmarkColdStart measures what loading each language's examples costs: every iteration loads the module
// into a new engine whose compilation cache is an empty folder, so that the compile is cold. It reports the
// module's size and the engine's own figures (plugins.Stats): the compile and the first instantiation (the
// guest's _initialize included); ns/op is the whole load.
//
//	go test -run '^$' -bench BenchmarkColdStart -benchtime 3x ./internal/examplecases
func BenchmarkColdStart(b *testing.B) {
	for _, lang := range wasmtest.Languages {
		for _, example := range Examples {
			b.Run(string(lang)+"/"+example, func(b *testing.B) {
				wasm := wasmtest.Guest(b, lang, example)
				dir := b.TempDir()
				var compile, instantiate time.Duration
				i := 0
				for b.Loop() {
					i++
					e, err := plugins.New(plugins.Options{CacheDir: filepath.Join(dir, strconv.Itoa(i)), Logger: slog.New(slog.DiscardHandler)})
					if err != nil {
						b.Fatal(err)
					}
					if err := e.Load(context.Background(), Workspace, example, wasm); err != nil {
						b.Fatal(err)
					}
					s, _ := e.Stats(Workspace, example)
					if s.CompileCache != plugins.CacheMiss {
						b.Fatalf("the compile was a cache %s, want a miss", s.CompileCache)
					}
					compile += s.Compile
					instantiate += s.InstantiateLast
					b.StopTimer()
					_ = e.Close(context.Background())
					b.StartTimer()
				}
				b.ReportMetric(float64(len(wasm)), "module-bytes")
				b.ReportMetric(float64(compile.Microseconds())/1000/float64(i), "compile-ms")
				b.ReportMetric(float64(instantiate.Microseconds())/1000/float64(i), "instantiate-ms")
			})
		}
	}
}
