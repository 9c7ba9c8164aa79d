//go:build !wasip1

package sdk

import "testing"

// TestKVNative: outside wasm KVGetGet answers what SetKVForTest set, and nothing by default or after nil.
func TestKVNative(t *testing.T) {
	if _, ok := KVGet("banned"); ok {
		t.Fatal("KVGet answers before SetKVForTest")
	}
	SetKVForTest(map[string]string{"banned": "alpha\nbeta"})
	t.Cleanup(func() { SetKVForTest(nil) })
	if v, ok := KVGet("banned"); !ok || v != "alpha\nbeta" {
		t.Fatalf("KVGet = %q, %v", v, ok)
	}
	if _, ok := KVGet("other"); ok {
		t.Fatal("KVGet answers an absent key")
	}
	SetKVForTest(nil)
	if _, ok := KVGet("banned"); ok {
		t.Fatal("KVGet answers after SetKVForTest(nil)")
	}
}
