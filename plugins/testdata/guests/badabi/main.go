//go:build wasip1

// Command badabi is a test guest that breaks ABI v1 on purpose: gateway_alloc takes an i64, gateway_call is
// missing, it imports "env"."fetch" and "gateway_v1"."http_get", which the host does not offer, and
// "gateway_v1"."log" with the wrong signature. Validate must name each of these.
package main

import "unsafe"

func main() {}

//go:wasmimport env fetch
func fetch(ptr unsafe.Pointer, n uint32) uint32

//go:wasmimport gateway_v1 http_get
func httpGet(ptr unsafe.Pointer, n uint32) uint32

//go:wasmimport gateway_v1 log
func hostLog(level int32)

//go:wasmexport gateway_abi_v1
func abiV1() {}

var buf []byte

//go:wasmexport gateway_alloc
func gatewayAlloc(size uint64) uint32 {
	buf = make([]byte, size)
	hostLog(1)
	n := fetch(unsafe.Pointer(&buf[0]), uint32(size))
	return n + httpGet(unsafe.Pointer(&buf[0]), uint32(size))
}
