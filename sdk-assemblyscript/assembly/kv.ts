// The plugin key-value store of the plugin's workspace (ABI v1.1's kv_get, hostapi/abi.go): text values the
// gateway's admins set through its admin API (PUT /v1/plugin-kv/{key}), so that a plugin's data (a deny list,
// say) changes without a new module. The import is in the module only when a plugin calls kvGet.
import { askHost } from "./host";

@external("gateway_v1", "kv_get")
declare function hostKVGet(keyPtr: usize, keyLen: u32, outPtr: usize, outCap: u32): i32;

/** The first kv_get buffer: most values fit; a longer one costs a second call of its length. */
const KV_BUFFER = 4096;

/**
 * The value stored under key in the workspace's plugin key-value store, or null when the key is absent. It asks
 * the host on every call (the host answers from memory), so a value changed through the admin API is seen by
 * the next check: read it per call rather than keeping it. Keys are 1 to 256 bytes of printable ASCII without
 * spaces or '/'; values are at most 1 MiB of text. A plugin that uses it needs a gateway speaking ABI v1.1.
 */
export function kvGet(key: string): string | null {
  return askHost(key, KV_BUFFER, (keyPtr: usize, keyLen: u32, outPtr: usize, outCap: u32): i32 =>
    hostKVGet(keyPtr, keyLen, outPtr, outCap));
}
