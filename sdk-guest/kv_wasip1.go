//go:build wasip1

package sdk

import "unsafe"

// The name must match hostapi.ImportKVGet.
//
//go:wasmimport gateway_v1 kv_get
func importKVGet(key string, out *byte, outCap int32) int32

// kvBuf is reused by KVGet. It starts at 4 KiB, enough for most values, and grows to the length the host names
// when a value is longer (up to the store's 1 MiB): the next KVGet of a long value then needs one host call.
var kvBuf = make([]byte, 4<<10)

func hostKVGet(key string) (string, bool) {
	// A value can change between the call that names its length and the next (an admin's write): ask again a
	// few times, but not for ever.
	for range 3 {
		n := importKVGet(key, unsafe.SliceData(kvBuf), int32(len(kvBuf)))
		if n < 0 {
			return "", false
		}
		if int(n) <= len(kvBuf) {
			return string(kvBuf[:n]), true
		}
		kvBuf = make([]byte, n)
	}
	return "", false
}
