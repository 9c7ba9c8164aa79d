package plugins

import (
	"context"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/tracing"
)

// TestOnCallAndSpan: Options.OnCall hears of every guest call, failed or not, with the plugin's id; with
// tracing on each call is a span of its own, and a failed call's span records the error.
func TestOnCallAndSpan(t *testing.T) {
	wasm := guest(t, "basic")
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	off := tracing.Use(tp)
	t.Cleanup(func() { off(); tp.Shutdown(context.Background()) })

	var mu sync.Mutex
	heard := map[string]int{}
	opts := testOptions(t)
	opts.OnCall = func(plugin string, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if d <= 0 {
			t.Errorf("call of %s took %v", plugin, d)
		}
		heard[plugin]++
	}
	e := newEngine(t, opts)
	load(t, e, wsA, "basic", wasm)
	call(t, e, wsA, "basic", hostapi.KindCheck, &hostapi.Input{CheckID: "pass"}, nil)
	if _, err := e.Call(context.Background(), wsA, "basic", hostapi.KindCheck, &hostapi.Input{CheckID: "panic"}, nil); err == nil {
		t.Fatal("the panicking check did not fail")
	}
	if _, err := e.Call(context.Background(), wsA, "missing", hostapi.KindCheck, nil, nil); err == nil {
		t.Fatal("a call of an unknown plugin succeeded")
	}
	mu.Lock()
	if heard["basic"] != 2 || len(heard) != 1 {
		t.Errorf("OnCall heard %v, want basic twice (an unknown plugin is no call)", heard)
	}
	mu.Unlock()
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	for i, s := range spans {
		if s.Name != "plugin basic" {
			t.Errorf("span name %q", s.Name)
		}
		if failed := len(s.Events) > 0; failed != (i == 1) {
			t.Errorf("span %d: error recorded %v", i, failed)
		}
	}
}
