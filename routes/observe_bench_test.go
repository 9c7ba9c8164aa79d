package routes

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
)

// BenchmarkObserve is what reporting one answered request costs: the metrics, and the info log line through
// a text handler (BenchmarkObserveMetricsOnly: with the info level off).
func BenchmarkObserve(b *testing.B) { benchObserve(b, slog.LevelInfo) }

// BenchmarkObserveMetricsOnly is BenchmarkObserve with the log line switched off by the logger's level.
func BenchmarkObserveMetricsOnly(b *testing.B) { benchObserve(b, slog.LevelWarn) }

func benchObserve(b *testing.B, level slog.Level) {
	f := newFixture(b, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: level}))})
	body, err := schema.ReadBody([]byte(chatBody))
	if err != nil {
		b.Fatal(err)
	}
	req := &runtime.Request{Endpoint: providers.ChatCompletions, Body: body, TraceID: "trace"}
	resp := &runtime.Response{Status: 200, Body: []byte(chatAnswer), Provider: "openai", OptionPath: "config.targets[0]", CacheStatus: "DISABLED"}
	ctx, start := context.Background(), time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.srv.observe(ctx, start, req, resp, 200, false, streamTimes{})
	}
}
