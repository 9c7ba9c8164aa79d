// Package hostapi is the ABI between the gateway and its wasm guests: exported and imported function names, the
// memory protocol, result codes and versioned wire types. It is pure Go with no dependencies, so guests built
// with sdk-guest can import it.
//
// Empty until the plugin-runtime issue fills it.
package hostapi
