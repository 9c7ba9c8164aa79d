//go:build wasip1

package sdk

import (
	"unsafe"

	"github.com/llmgw/gateway/sdk-guest/internal/hostapi"
)

// gateway_transform (hostapi.ExportTransform): the same buffers and return value as gateway_call, for the
// transform handler.
//
//go:wasmexport gateway_transform
func gatewayTransform(kind int32, ptr, n uint32) uint64 {
	in, ok := allocated(ptr, n)
	var out []byte
	if !ok {
		o := errorOutput("sdk: the input is not in memory from gateway_alloc")
		outBuf = hostapi.AppendOutput(outBuf[:0], &o)
		out = outBuf
	} else {
		out = transform(hostapi.Kind(kind), in)
	}
	clear(pending)
	pending = pending[:0]
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(out))))<<32 | uint64(len(out))
}
