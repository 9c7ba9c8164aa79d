package sdkas_test

import (
	"testing"

	"github.com/llmgw/gateway/internal/wasmtest"
)

// The guests are built by wasmtest (npm ci, then asc with wasmtest.AssemblyScriptFlags, the build README.md
// gives): once per test binary, into temporary folders, so that every test shares one build and the source tree
// gets only node_modules (which .gitignore keeps out of git); without node or npm the tests skip, unless
// GATEWAY_REQUIRE_TOOLCHAINS=1.

// module returns the built module of guest name.
func module(tb testing.TB, name string) []byte {
	tb.Helper()
	return wasmtest.Guest(tb, wasmtest.AssemblyScript, name)
}
