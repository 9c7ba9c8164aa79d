package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/llmgw/gateway/internal/examplecases"
	"github.com/llmgw/gateway/internal/sdkrun"
	"github.com/llmgw/gateway/internal/wasmtest"
)

// The cases are the examples' table (examples/testdata/cases.json), which the Rust and AssemblyScript
// denylists pass too.

// TestCheck runs the check natively, through the SDK's wire encoding.
func TestCheck(t *testing.T) {
	examplecases.RunNative(t, wasmtest.Go, "denylist", sdkrun.Run)
}

func TestCompileCacheBounded(t *testing.T) {
	for i := range maxCompiled + 10 {
		if _, err := compile("x" + strings.Repeat("y", i)); err != nil {
			t.Fatal(err)
		}
	}
	if len(compiled) > maxCompiled {
		t.Fatalf("cache holds %d patterns", len(compiled))
	}
}

// Test_main builds the plugin for wasm and runs the cases in the gateway's engine.
func Test_main(t *testing.T) {
	examplecases.Run(t, wasmtest.Go, "denylist", wasmtest.Build(t, "."))
	if deps := wasmtest.Deps(t, "."); !reflect.DeepEqual(deps, wasmtest.GuestDeps) {
		t.Errorf("the plugin depends on %v, want only %v", deps, wasmtest.GuestDeps)
	}
}
