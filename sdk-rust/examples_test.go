package sdkrust_test

import (
	"testing"

	"github.com/llmgw/gateway/internal/examplecases"
	"github.com/llmgw/gateway/internal/wasmtest"
)

// TestExamples runs the examples' table (examples/testdata/cases.json) against the Rust examples: they must
// answer as the Go ones do.
func TestExamples(t *testing.T) {
	for _, example := range examplecases.Examples {
		t.Run(example, func(t *testing.T) { examplecases.Run(t, wasmtest.Rust, example, module(t, example)) })
	}
}

// BenchmarkExamples measures the Rust examples as the gateway runs them (examplecases.Benchmark).
func BenchmarkExamples(b *testing.B) {
	examplecases.Benchmark(b, wasmtest.Rust)
}
