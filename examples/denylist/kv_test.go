package main

import (
	"testing"

	"github.com/llmgw/gateway/internal/examplecases"
	"github.com/llmgw/gateway/internal/sdkrun"
	"github.com/llmgw/gateway/internal/wasmtest"
	sdk "github.com/llmgw/gateway/sdk-guest"
)

// The "kv" parameter (more words from the workspace's plugin key-value store, one per line) has its cases in
// the examples' table, which Test_main runs in the gateway's engine as the Rust and AssemblyScript denylists'
// tests do. What only Go has is a native store: sdk.SetKVForTest.

// TestKVNative runs the table's kv cases natively, the store answered by sdk.SetKVForTest: the SDK's KVGet
// outside wasm, and the list read on every call (the table changes the value between two cases).
func TestKVNative(t *testing.T) {
	examplecases.RunNativeKV(t, wasmtest.Go, "denylist", sdk.SetKVForTest, sdkrun.Run)
}
