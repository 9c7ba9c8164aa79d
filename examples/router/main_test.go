package main

import (
	"reflect"
	"testing"

	"github.com/llmgw/gateway/internal/examplecases"
	"github.com/llmgw/gateway/internal/sdkrun"
	"github.com/llmgw/gateway/internal/wasmtest"
)

// The cases are the examples' table (examples/testdata/cases.json), which the Rust and AssemblyScript routers
// pass too.

// TestScript runs the condition natively, through the SDK's wire encoding; the cases that read request fields
// need the host, so only Test_main runs them.
func TestScript(t *testing.T) {
	examplecases.RunNative(t, wasmtest.Go, "router", sdkrun.Run)
}

// Test_main builds the plugin for wasm and runs the cases in the gateway's engine, request fields and debug
// lines included.
func Test_main(t *testing.T) {
	examplecases.Run(t, wasmtest.Go, "router", wasmtest.Build(t, "."))
	if deps := wasmtest.Deps(t, "."); !reflect.DeepEqual(deps, wasmtest.GuestDeps) {
		t.Errorf("the plugin depends on %v, want only %v", deps, wasmtest.GuestDeps)
	}
}
