package sdk

// KVGet returns the value stored under key in the plugin key-value store of the plugin's workspace, which the
// gateway's admins fill through its admin API (PUT /v1/plugin-kv/{key}); ok is false when the key is absent.
// It asks the host on every call (the host answers from memory), so a value changed through the admin API is
// seen by the next check: read it per call rather than caching it. Keys are 1 to 256 bytes of printable ASCII
// without spaces or '/'; values are at most 1 MiB of text. It needs a gateway speaking ABI v1.1 (the kv_get host
// function): an older gateway refuses to load a plugin that uses it.
//
// Outside wasm (a plugin's native tests) there is no host: KVGet answers what SetKVForTest set.
func KVGet(key string) (value string, ok bool) { return hostKVGet(key) }
