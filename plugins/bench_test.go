package plugins

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/llmgw/gateway/hostapi"
)

// text1K is a kilobyte of prose with nothing for the regex check to find.
var text1K = strings.Repeat("The quick brown fox jumps over the lazy dog; ", 24)[:1024]

// BenchmarkCall measures one Call of a loaded plugin with a 1 KB input: the no-op check (the engine's own
// overhead: pool, encoding, gateway_alloc, gateway_call, decoding) guarded by the fuel counter (guard.go) and a
// per-call deadline, as in production, and unguarded (no deadline, no termination checks; test-only), and a
// realistic check (two regexes over the kilobyte); each for the ABI v1.0 guest (two guest calls per call:
// gateway_alloc, gateway_call) and the same guest speaking v1.1 (one: gateway_call).
func BenchmarkCall(b *testing.B) {
	for _, bc := range []struct {
		name      string
		guest     string
		unguarded bool
		checkID   string
	}{
		{"v1.0/noop/guarded", "basic", false, "noop"},
		{"v1.0/noop/unguarded", "basic", true, "noop"},
		{"v1.0/regex/guarded", "basic", false, "regex"},
		{"v1.0/regex/unguarded", "basic", true, "regex"},
		{"v1.1/noop/guarded", "basic-v11", false, "noop"},
		{"v1.1/noop/unguarded", "basic-v11", true, "noop"},
		{"v1.1/regex/guarded", "basic-v11", false, "regex"},
		{"v1.1/regex/unguarded", "basic-v11", true, "regex"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			wasm := guest(b, bc.guest)
			opts := testOptions(b)
			opts.unguarded = bc.unguarded
			e := newEngine(b, opts)
			load(b, e, wsA, "p", wasm)
			in := &hostapi.Input{Text: text1K, CheckID: bc.checkID, Model: "gpt-4o", Stage: "before", Endpoint: "chat"}
			ctx := context.Background()
			out := call(b, e, wsA, "p", hostapi.KindCheck, in, nil)
			if !out.Verdict {
				b.Fatalf("check fails: %+v", out)
			}
			b.SetBytes(int64(len(text1K)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := e.Call(ctx, wsA, "p", hostapi.KindCheck, in, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCallParallel is the guarded no-op call from GOMAXPROCS goroutines at once.
func BenchmarkCallParallel(b *testing.B) {
	e := newEngine(b, testOptions(b))
	load(b, e, wsA, "p", guest(b, "basic"))
	in := &hostapi.Input{Text: text1K, CheckID: "noop"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := e.Call(context.Background(), wsA, "p", hostapi.KindCheck, in, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkSwap is a hot reload: Load of the other version (compiled code in the cache: decode, ABI check,
// one instantiation) and the swap.
func BenchmarkSwap(b *testing.B) {
	v := [2][]byte{guest(b, "basic"), guest(b, "basic-v2")}
	e := newEngine(b, testOptions(b))
	load(b, e, wsA, "p", v[0])
	load(b, e, wsA, "p", v[1])
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		load(b, e, wsA, "p", v[i%2])
		i++
	}
}

// BenchmarkLoad is a Go guest's first Load in a fresh engine (a restart): cold compiles from scratch into an
// empty file cache; cached finds the compiled code in CacheDir.
func BenchmarkLoad(b *testing.B) {
	wasm := guest(b, "basic")
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			n++
			e := newEngine(b, Options{CacheDir: filepath.Join(b.TempDir(), strconv.Itoa(n))})
			load(b, e, wsA, "p", wasm)
			_ = e.Close(context.Background())
		}
	})
	b.Run("cached", func(b *testing.B) {
		dir := b.TempDir()
		warm := newEngine(b, Options{CacheDir: dir})
		load(b, warm, wsA, "p", wasm)
		_ = warm.Close(context.Background())
		b.ReportAllocs()
		for b.Loop() {
			e := newEngine(b, Options{CacheDir: dir})
			load(b, e, wsA, "p", wasm)
			_ = e.Close(context.Background())
		}
	})
}
