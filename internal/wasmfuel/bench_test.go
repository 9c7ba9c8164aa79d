package wasmfuel

import (
	"path/filepath"
	"testing"

	"github.com/llmgw/gateway/internal/wasmtest"
)

// BenchmarkInstrument is the load-time cost of the pass on a real Go guest (examples/pii, a few MB), and what it
// adds to the module's size.
func BenchmarkInstrument(b *testing.B) {
	wasm := wasmtest.Build(b, filepath.Join("..", "..", "examples", "pii"))
	out, err := Instrument(wasm)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(wasm)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Instrument(wasm); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(out)-len(wasm))/float64(len(wasm))*100, "%growth")
}
