//go:build wasip1

package sdk

import (
	"unsafe"

	"github.com/llmgw/gateway/sdk-guest/internal/hostapi"
)

// The ABI v1.1 exports. The names must match hostapi.ExportMarker, hostapi.ExportVersion, hostapi.ExportAlloc
// and hostapi.ExportCall (TestExportNames checks them). The Go toolchain exports the linear memory as "memory",
// as v1.1 requires.

//go:wasmexport gateway_abi_v1
func gatewayABIv1() {}

//go:wasmexport gateway_abi_version
func gatewayABIVersion() int32 {
	return hostapi.EncodeVersion(hostapi.VersionMajor, hostapi.VersionMinor)
}

// inBuf is the buffer gateway_alloc hands out. ABI v1.1 lets the host write every input that fits into the
// last buffer without asking again, so inBuf changes only in gateway_alloc, and only to grow; nothing else
// writes it. pending keeps earlier ones alive until the next gateway_call returns, in case a v1.0 host asks
// twice before calling.
var (
	inBuf   = make([]byte, 4096)
	pending [][]byte
)

//go:wasmexport gateway_alloc
func gatewayAlloc(size int32) unsafe.Pointer {
	if size < 0 {
		return nil
	}
	if int(size) > len(inBuf) {
		pending = append(pending, inBuf)
		inBuf = make([]byte, max(int(size), 2*len(inBuf)))
	}
	return unsafe.Pointer(unsafe.SliceData(inBuf))
}

//go:wasmexport gateway_call
func gatewayCall(kind int32, ptr, n uint32) uint64 { return serve(kind, ptr, n, call) }

// serve answers one call of an export that takes gateway_call's (kind, ptr, len) and returns its
// (out_ptr<<32 | out_len): gateway_call and gateway_transform.
func serve(kind int32, ptr, n uint32, handle func(hostapi.Kind, []byte) []byte) uint64 {
	in, ok := allocated(ptr, n)
	var out []byte
	if !ok {
		o := errorOutput("sdk: the input is not in memory from gateway_alloc")
		outBuf = hostapi.AppendOutput(outBuf[:0], &o)
		out = outBuf
	} else {
		out = handle(hostapi.Kind(kind), in)
	}
	clear(pending)
	pending = pending[:0]
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(out))))<<32 | uint64(len(out))
}

// allocated returns the n bytes at ptr when they lie inside a buffer handed out by gateway_alloc.
func allocated(ptr, n uint32) ([]byte, bool) {
	for i := -1; i < len(pending); i++ {
		b := inBuf
		if i >= 0 {
			b = pending[i]
		}
		base := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
		if uint64(ptr) >= base && uint64(ptr)+uint64(n) <= base+uint64(len(b)) {
			off := uint64(ptr) - base
			return b[off : off+uint64(n)], true
		}
	}
	return nil, false
}

//go:wasmimport gateway_v1 log
func importLog(level int32, msg string)

//go:wasmimport gateway_v1 now_unix_ms
func importNowUnixMs() int64

//go:wasmimport gateway_v1 request_field
func importRequestField(path string, out *byte, outCap int32) int32

func hostLog(level Level, msg string) { importLog(int32(level), msg) }

func hostNowUnixMs() int64 { return importNowUnixMs() }

// fieldBuf is reused by RequestField; it grows when a field is longer.
var fieldBuf = make([]byte, 512)

func hostRequestField(path string) (string, bool) {
	return askHost(&fieldBuf, func(out *byte, outCap int32) int32 { return importRequestField(path, out, outCap) })
}

// askHost is the guest side of the protocol request_field and kv_get share: ask fills *buf when the value fits
// and answers its length (-1: absent); a longer value grows *buf to that length for another ask, a few times
// at most (a value can change between two asks, and a misbehaving host must not keep us looping).
func askHost(buf *[]byte, ask func(out *byte, outCap int32) int32) (string, bool) {
	for range 3 {
		n := ask(unsafe.SliceData(*buf), int32(len(*buf)))
		if n < 0 {
			return "", false
		}
		if int(n) <= len(*buf) {
			return string((*buf)[:n]), true
		}
		*buf = make([]byte, n)
	}
	return "", false
}
