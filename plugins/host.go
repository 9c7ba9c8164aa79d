package plugins

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/llmgw/gateway/hostapi"
)

// callCtx is the context of one guest call (or instantiation): it carries what the host functions need.
type callCtx struct {
	context.Context
	v   *version
	req RequestView

	logged, dropped int // log lines of this call written and dropped

	// deadline ends the call (guard.go's refuel stops the guest past it); zero: none. requestDeadline: it is
	// the request's context's, sooner than the engine's own limit.
	deadline        time.Time
	requestDeadline bool
}

type callKey struct{}

// Value implements context.Context.
func (c *callCtx) Value(key any) any {
	if key == (callKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// callFrom returns the call's callCtx. wazero hands host functions the context given to the call.
func callFrom(ctx context.Context) *callCtx {
	if c, ok := ctx.(*callCtx); ok {
		return c
	}
	c, _ := ctx.Value(callKey{}).(*callCtx)
	return c
}

// maxLogBytes is the longest log message kept; the rest is cut.
const maxLogBytes = 4 << 10

// hostModule builds the gateway_v1 module of ABI v1. A guest that hands a host function a pointer outside its
// memory traps (the host function panics; wazero turns that into the call's error).
func hostModule(rt wazero.Runtime) wazero.HostModuleBuilder {
	return rt.NewHostModuleBuilder(hostapi.ModuleName).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostLog), []api.ValueType{i32, i32, i32}, nil).
		WithParameterNames("level", "ptr", "len").
		Export(hostapi.ImportLog).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostNowUnixMs), nil, []api.ValueType{i64}).
		Export(hostapi.ImportNowUnixMs).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostRequestField), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		WithParameterNames("path_ptr", "path_len", "out_ptr", "out_cap").
		WithResultNames("len").
		Export(hostapi.ImportRequestField).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostKVGet), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		WithParameterNames("key_ptr", "key_len", "out_ptr", "out_cap").
		WithResultNames("len").
		Export(hostapi.ImportKVGet) // kv.go
}

// hostLog writes a guest's message to the engine's logger with the plugin's workspace and ID, within the limits
// of LogLinesPerCall and the plugin's LogLinesPerSecond; lines past them are dropped and counted (a guest that
// logs in a loop would otherwise write megabytes per request).
func hostLog(ctx context.Context, mod api.Module, stack []uint64) {
	level, ptr, n := api.DecodeI32(stack[0]), api.DecodeU32(stack[1]), api.DecodeU32(stack[2])
	cut := n > maxLogBytes
	if cut {
		n = maxLogBytes
	}
	b, ok := mod.Memory().Read(ptr, n)
	if !ok {
		panic(fmt.Errorf("%s: message at %#x+%d is outside the module's memory", hostapi.ImportLog, ptr, n))
	}
	c := callFrom(ctx)
	if c == nil {
		return
	}
	var lv slog.Level
	switch level {
	case hostapi.LevelDebug:
		lv = slog.LevelDebug
	case hostapi.LevelWarn:
		lv = slog.LevelWarn
	case hostapi.LevelError:
		lv = slog.LevelError
	default:
		lv = slog.LevelInfo
	}
	if !c.v.log.Enabled(ctx, lv) {
		return
	}
	if c.logged >= c.v.e.opts.LogLinesPerCall || !c.v.logs.allow(time.Now()) {
		c.dropped++
		c.v.logs.dropped.Add(1)
		return
	}
	c.logged++
	msg := strings.ToValidUTF8(string(b), "\uFFFD")
	if cut {
		c.v.log.Log(ctx, lv, msg, "truncated", true)
		return
	}
	c.v.log.Log(ctx, lv, msg)
}

// endLogs reports the log lines the call dropped, if any, in a summary line: at most one per plugin every
// logSummaryEvery, counting every line dropped since the last.
func (c *callCtx) endLogs() {
	if c.dropped == 0 {
		return
	}
	l := c.v.logs
	now := time.Now().UnixNano()
	last := l.summaryAt.Load()
	if last != 0 && now-last < int64(logSummaryEvery) || !l.summaryAt.CompareAndSwap(last, now) {
		return
	}
	total := l.dropped.Load()
	if n := total - l.reported.Swap(total); n > 0 {
		c.v.log.Warn("plugin log lines dropped", "dropped", n, "dropped_total", total,
			"lines_per_call", c.v.e.opts.LogLinesPerCall, "lines_per_second", c.v.e.opts.LogLinesPerSecond)
	}
}

// logSummaryEvery spaces the summaries of dropped log lines of one plugin.
const logSummaryEvery = 10 * time.Second

// logLimiter is a plugin's token bucket of log lines, shared by its versions, and its count of dropped lines.
type logLimiter struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
	rate   float64 // lines per second
	burst  float64

	dropped   atomic.Uint64
	reported  atomic.Uint64 // dropped, as of the last summary
	summaryAt atomic.Int64  // unix nanoseconds of the last summary
}

func newLogLimiter(perSecond int) *logLimiter {
	r := float64(perSecond)
	return &logLimiter{rate: r, burst: 4 * r, tokens: 4 * r}
}

// allow takes a token for one line, if there is one.
func (l *logLimiter) allow(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() {
		l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	}
	l.last = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}

func hostNowUnixMs(_ context.Context, _ api.Module, stack []uint64) {
	stack[0] = uint64(time.Now().UnixMilli())
}

// hostRequestField copies the JSON text of one request field into the guest; see RequestView.
func hostRequestField(ctx context.Context, mod api.Module, stack []uint64) {
	hostLookup(ctx, mod, stack, hostapi.ImportRequestField, "path", func(c *callCtx, path []byte) ([]byte, bool) {
		if c.req == nil {
			return nil, false
		}
		c.stopIfOver() // guard.go: a loop of megabyte copies costs the fuel counter a few instructions a call
		return c.req.Field(string(path))
	})
}

// hostLookup is the protocol request_field and kv_get share, (name_ptr, name_len, out_ptr, out_cap) -> i32: it
// reads the name out of the guest, asks lookup for its value, and answers -1 when there is none, else the
// value's length, writing the value at out_ptr only when it fits in out_cap (a guest whose buffer is too small
// calls again with a larger one). A pointer outside the guest's memory traps. what names the name in errors.
func hostLookup(ctx context.Context, mod api.Module, stack []uint64, fn, what string, lookup func(c *callCtx, name []byte) ([]byte, bool)) {
	namePtr, nameLen := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	outPtr, outCap := api.DecodeU32(stack[2]), api.DecodeU32(stack[3])
	mem := mod.Memory()
	name, ok := mem.Read(namePtr, nameLen)
	if !ok {
		panic(fmt.Errorf("%s: %s at %#x+%d is outside the module's memory", fn, what, namePtr, nameLen))
	}
	stack[0] = api.EncodeI32(-1)
	c := callFrom(ctx)
	if c == nil {
		return
	}
	val, ok := lookup(c, name)
	if !ok {
		return
	}
	if len(val) > math.MaxInt32 {
		panic(fmt.Errorf("%s: the value of %s %q is %d bytes long", fn, what, name, len(val)))
	}
	if uint64(len(val)) <= uint64(outCap) && !mem.Write(outPtr, val) {
		panic(fmt.Errorf("%s: buffer at %#x+%d is outside the module's memory", fn, outPtr, outCap))
	}
	stack[0] = api.EncodeI32(int32(len(val)))
}
