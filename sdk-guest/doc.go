// Package sdk is the guest SDK (import path github.com/llmgw/gateway/sdk-guest): plugin authors write a check
// (guardrail, hook check or transformer, on model requests or on MCP tool calls: see Input.IsToolCall) or a
// routing condition as a plain Go function, register it in init, and build the package with the stock Go
// toolchain:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugin.wasm .
//
// The SDK implements the ABI v1.1 exports (gateway_abi_v1, gateway_abi_version, gateway_alloc, gateway_call;
// the toolchain exports the memory as "memory") with //go:wasmexport and
// the gateway_v1 host functions (log, now_unix_ms, request_field) with //go:wasmimport, in files built only for
// wasip1; on other platforms stand-ins make the package build, and Run calls the registered handlers through the
// wire encoding so plugins can be tested natively with go test.
//
// It imports only hostapi and the standard library, so a plugin never pulls in fiber, pebble or wazero
// (TestGuestDependencies checks it with go list -deps for GOOS=wasip1 GOARCH=wasm). It must not import
// anything else of the gateway's.
//
// A wasm instance runs one call at a time. The SDK keeps one input buffer (grown as needed, and left alone
// between gateway_alloc calls, so that a v1.1 host writes each input into it without asking again) and one
// output buffer between calls; a call allocates one copy of the input plus one small slice for metadata and params.
// A panic in a handler becomes a check error (Output.Error "panic: ...") and is logged with its stack at
// error level; the instance stays usable.
//
// Example:
//
//	package main
//
//	import sdk "github.com/llmgw/gateway/sdk-guest"
//
//	func init() {
//		sdk.HandleCheck(func(in sdk.Input) sdk.Result {
//			words, _ := in.ParamStrings("words")
//			for _, w := range words {
//				if strings.Contains(in.Text, w) {
//					return sdk.Fail("deny-listed word").With("word", w)
//				}
//			}
//			return sdk.Pass()
//		})
//	}
//
//	func main() {} // never run in a -buildmode=c-shared module
package sdk
