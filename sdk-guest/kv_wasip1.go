//go:build wasip1

package sdk

// The name must match hostapi.ImportKVGet.
//
//go:wasmimport gateway_v1 kv_get
func importKVGet(key string, out *byte, outCap int32) int32

// kvBuf is reused by KVGet. It starts at 4 KiB, enough for most values, and grows to the length the host names
// when a value is longer (up to the store's 1 MiB): the next KVGet of a long value then needs one host call.
var kvBuf = make([]byte, 4<<10)

func hostKVGet(key string) (string, bool) {
	return askHost(&kvBuf, func(out *byte, outCap int32) int32 { return importKVGet(key, out, outCap) })
}
