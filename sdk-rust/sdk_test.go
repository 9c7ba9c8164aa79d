package sdkrust_test

import (
	"testing"

	"github.com/llmgw/gateway/internal/conformance"
	"github.com/llmgw/gateway/internal/wasmtest"
)

// TestConformance runs the golden table against the Rust conformance guest.
func TestConformance(t *testing.T) {
	conformance.Run(t, module(t, "conformance"))
}

// TestModules checks the ABI v1.1 shape of every module (version export, memory, no WASI _start) and logs the
// sizes.
func TestModules(t *testing.T) {
	tc := wasmtest.RequireRust(t)
	for _, crate := range wasmtest.SDKGuests {
		wasm := module(t, crate)
		wasmtest.CheckModule(t, crate, wasm)
		t.Logf("%s.wasm: %d bytes (%s, %s)", crate, len(wasm), tc.Rustc, tc.Target)
	}
}

// TestGuestABI proves the guest side of the ABI in wasm (wasmtest.CheckGuestABI): strict decoding errors,
// gateway_abi_version 1.1 and the v1.1 buffer rule.
func TestGuestABI(t *testing.T) {
	wasmtest.CheckGuestABI(t, module(t, "conformance"))
}
