//go:build wasip1 && abi11

package main

// gateway_abi_version says ABI v1.1: 1<<16 | 1.
//
//go:wasmexport gateway_abi_version
func abiVersion() int32 { return 1<<16 | 1 }
