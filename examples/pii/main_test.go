package main

import (
	"reflect"
	"testing"

	"github.com/llmgw/gateway/internal/examplecases"
	"github.com/llmgw/gateway/internal/sdkrun"
	"github.com/llmgw/gateway/internal/wasmtest"
)

// The cases are the examples' table (examples/testdata/cases.json), which the Rust and AssemblyScript PII
// checks pass too.

// TestCheck runs the check natively, through the SDK's wire encoding.
func TestCheck(t *testing.T) {
	examplecases.RunNative(t, wasmtest.Go, "pii", sdkrun.Run)
}

func TestLuhn(t *testing.T) {
	for s, want := range map[string]bool{
		"4111111111111111": true, "4111-1111-1111-1111": true, "378282246310005": true, "6011111111111117": true,
		"4111111111111112": false, "1234567890123": false, "411111111111": false, "41111111111111111111": false,
	} {
		if luhn(s) != want {
			t.Errorf("luhn(%s) = %v", s, !want)
		}
	}
}

// Test_main builds the plugin for wasm and runs the cases in the gateway's engine.
func Test_main(t *testing.T) {
	examplecases.Run(t, wasmtest.Go, "pii", wasmtest.Build(t, "."))
	if deps := wasmtest.Deps(t, "."); !reflect.DeepEqual(deps, wasmtest.GuestDeps) {
		t.Errorf("the plugin depends on %v, want only %v", deps, wasmtest.GuestDeps)
	}
}
