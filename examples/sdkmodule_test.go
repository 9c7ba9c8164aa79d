package examples

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestSDKModule runs what `go test ./...` and `go vet ./...` at the gateway's root cannot reach, because each
// folder has a go.mod of its own: sdk-guest, the SDK's module (its go.mod must be tidy, vet must pass natively
// and for wasip1, its tests must pass), and examples/outside, the out-of-tree plugin as checked in (its relative
// replace included). Offline: GOPROXY=off, GOWORK=off, GOTOOLCHAIN=local, GOFLAGS=-mod=mod.
func TestSDKModule(t *testing.T) {
	root := gatewayRoot(t)
	wasm := append(slices.Clone(offline), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	for _, dir := range []string{"sdk-guest", filepath.Join("examples", "outside")} {
		t.Run(filepath.ToSlash(dir), func(t *testing.T) {
			abs := filepath.Join(root, dir)
			goCommand(t, abs, offline, "mod", "tidy", "-diff")
			goCommand(t, abs, offline, "vet", "./...")
			goCommand(t, abs, wasm, "vet", "./...")
			goCommand(t, abs, offline, append(append([]string{"test", "-count=1"}, raceFlags...), "./...")...)
		})
	}
}
