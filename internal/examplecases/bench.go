package examplecases

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/llmgw/gateway/internal/wasmtest"
	"github.com/llmgw/gateway/plugins"
)

// BenchSizes are the text sizes the examples are measured on.
var BenchSizes = []struct {
	Name string
	N    int
}{{"1KB", 1 << 10}, {"64KB", 64 << 10}}

// Benchmark measures lang's examples as the gateway runs them, guarded, through a plugins.Engine:
// <example>/<size> for each example and size of wasmtest.BenchCalls, and noop/1KB, wasmtest.NoopCall, a
// call's own cost. It builds the guests with wasmtest.Guest, so it skips as the builders do.
func Benchmark(b *testing.B, lang wasmtest.Language) {
	// A deadline far above the gateway's 100 ms: a 64 KB call on loaded shared cores must not fail the run.
	e, err := plugins.New(plugins.Options{MaxInstances: 1, CallTimeout: time.Minute, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close(context.Background()) })
	ctx := context.Background()
	for _, name := range append(Examples[:len(Examples):len(Examples)], "conformance") {
		if err := e.Load(ctx, Workspace, name, wasmtest.Guest(b, lang, name)); err != nil {
			b.Fatalf("load %s (%s): %v", name, lang, err)
		}
	}
	run := func(b *testing.B, call wasmtest.BenchCall) {
		out, err := e.Call(ctx, Workspace, call.Example, call.Kind, call.In, nil) // the instance is made outside the timing
		if err != nil || out.Error != "" {
			b.Fatalf("%s: %v %+v", call.Example, err, out)
		}
		b.SetBytes(int64(len(call.In.Text)))
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if _, err := e.Call(ctx, Workspace, call.Example, call.Kind, call.In, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, size := range BenchSizes {
		for _, call := range wasmtest.BenchCalls(wasmtest.BenchText(size.N)) {
			b.Run(call.Example+"/"+size.Name, func(b *testing.B) { run(b, call) })
		}
	}
	b.Run("noop/1KB", func(b *testing.B) { run(b, wasmtest.NoopCall(wasmtest.BenchText(1<<10))) })
}
