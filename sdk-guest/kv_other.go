//go:build !wasip1

package sdk

import "sync"

// Outside wasm there is no host: KVGet answers from a map a plugin's native tests set with SetKVForTest.
var kvForTest struct {
	mu     sync.RWMutex
	values map[string]string
}

// SetKVForTest makes KVGet answer from values (key → value) in a native build, for tests of a plugin's handlers;
// nil makes every key absent, as it is by default. It exists only outside wasm, where KVGet has no host to ask.
func SetKVForTest(values map[string]string) {
	kvForTest.mu.Lock()
	kvForTest.values = values
	kvForTest.mu.Unlock()
}

func hostKVGet(key string) (string, bool) {
	kvForTest.mu.RLock()
	defer kvForTest.mu.RUnlock()
	v, ok := kvForTest.values[key]
	return v, ok
}
