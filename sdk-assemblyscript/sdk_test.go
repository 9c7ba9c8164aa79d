package sdkas_test

import (
	"strings"
	"testing"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/internal/conformance"
	"github.com/llmgw/gateway/internal/wasmtest"
)

// TestConformance runs the golden table against the AssemblyScript conformance guest.
func TestConformance(t *testing.T) {
	conformance.Run(t, module(t, "conformance"))
}

// TestModules checks the ABI v1.1 shape of every module (version export, memory, no WASI _start, no import
// but the host's: no env.abort, env.trace or env.seed) and logs the sizes.
func TestModules(t *testing.T) {
	for _, guest := range wasmtest.SDKGuests {
		wasm := module(t, guest)
		wasmtest.CheckModule(t, guest, wasm)
		t.Logf("%s.wasm: %d bytes", guest, len(wasm))
	}
}

// TestGuestABI proves the guest side of the ABI in wasm (wasmtest.CheckGuestABI): strict decoding errors,
// gateway_abi_version 1.1 and the v1.1 buffer rule.
func TestGuestABI(t *testing.T) {
	wasmtest.CheckGuestABI(t, module(t, "conformance"))
}

// echoPages sends the conformance guest n echo calls of a 64 KiB text and returns its memory's size in pages.
func echoPages(t *testing.T, r *wasmtest.Raw, n int) uint32 {
	t.Helper()
	in := hostapi.AppendInput(nil, &hostapi.Input{Text: strings.Repeat("héllo wörld ", 64<<10/14), CheckID: "conf.echo",
		Metadata: []hostapi.KV{{Key: "k", Value: "v"}}, Params: []hostapi.KV{{Key: "p", Value: `[1,"a"]`}}})
	for range n {
		if _, out := r.Send(t, uint32(len(in)), 0, in); out.Error != "" || !out.Verdict {
			t.Fatalf("echo: %+v", out)
		}
	}
	return r.Module.Memory().Size() / 65536
}

// TestMemoryBounded proves the runtime choice: with --runtime minimal and a collection at the end of every
// gateway_call, an instance's memory stops growing after the first calls however many calls it serves (every
// call allocates several times its 64 KiB input). The stub runtime, which never frees, is measured alongside:
// its memory grows with every call until the host's limit, which is why the SDK does not use it.
func TestMemoryBounded(t *testing.T) {
	r := wasmtest.InstantiateRaw(t, module(t, "conformance"))
	warm := echoPages(t, r, 20)
	after := echoPages(t, r, 300)
	t.Logf("minimal runtime: %d pages after 20 calls of 64 KiB, %d after 320", warm, after)
	if after > warm {
		t.Errorf("memory grew from %d to %d pages: the guest leaks", warm, after)
	}
	if testing.Short() {
		return
	}
	wasm := wasmtest.BuildAssemblyScript(t, ".", "conformance/index.ts", "--runtime", "stub")
	rs := wasmtest.InstantiateRaw(t, wasm)
	t.Logf("stub runtime (%d bytes): %d pages after 20 calls, %d after 60", len(wasm), echoPages(t, rs, 20), echoPages(t, rs, 40))
}
