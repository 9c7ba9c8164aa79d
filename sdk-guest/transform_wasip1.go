//go:build wasip1

package sdk

// gateway_transform (hostapi.ExportTransform): the same buffers and return value as gateway_call, for the
// transform handler.
//
//go:wasmexport gateway_transform
func gatewayTransform(kind int32, ptr, n uint32) uint64 { return serve(kind, ptr, n, transform) }
