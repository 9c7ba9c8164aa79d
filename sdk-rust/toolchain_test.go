package sdkrust_test

import (
	"context"
	"testing"
	"time"

	"github.com/llmgw/gateway/internal/wasmtest"
)

// The crates are built by wasmtest.BuildRust: once per test binary, into a temporary target directory, so that
// the source tree gets no target/ and every test shares one build; without a toolchain the tests skip, unless
// GATEWAY_REQUIRE_TOOLCHAINS=1.

// module returns the built module of crate.
func module(tb testing.TB, crate string) []byte {
	tb.Helper()
	return wasmtest.Guest(tb, wasmtest.Rust, crate)
}

// TestNativeCargoTest runs the SDK's and the examples' Rust unit tests (wire, JSON, regexp, Luhn) natively.
func TestNativeCargoTest(t *testing.T) {
	tc := wasmtest.RequireRust(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if out, err := tc.Command(ctx, ".", t.TempDir(), "test", "--offline", "--workspace", "--lib").CombinedOutput(); err != nil {
		t.Fatalf("cargo test: %v\n%s", err, out)
	}
}
