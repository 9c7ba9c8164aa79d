package plugins

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
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
		Export(hostapi.ImportRequestField)
}

// hostLog writes a guest's message to the engine's logger with the plugin's workspace and ID.
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
	msg := strings.ToValidUTF8(string(b), "\uFFFD")
	if cut {
		c.v.log.Log(ctx, lv, msg, "truncated", true)
		return
	}
	c.v.log.Log(ctx, lv, msg)
}

func hostNowUnixMs(_ context.Context, _ api.Module, stack []uint64) {
	stack[0] = uint64(time.Now().UnixMilli())
}

// hostRequestField copies the JSON text of one request field into the guest; see RequestView.
func hostRequestField(ctx context.Context, mod api.Module, stack []uint64) {
	pathPtr, pathLen := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	outPtr, outCap := api.DecodeU32(stack[2]), api.DecodeU32(stack[3])
	mem := mod.Memory()
	path, ok := mem.Read(pathPtr, pathLen)
	if !ok {
		panic(fmt.Errorf("%s: path at %#x+%d is outside the module's memory", hostapi.ImportRequestField, pathPtr, pathLen))
	}
	stack[0] = api.EncodeI32(-1)
	c := callFrom(ctx)
	if c == nil || c.req == nil {
		return
	}
	val, ok := c.req.Field(string(path))
	if !ok {
		return
	}
	if len(val) > math.MaxInt32 {
		panic(fmt.Errorf("%s: field %q is %d bytes long", hostapi.ImportRequestField, path, len(val)))
	}
	if uint64(len(val)) <= uint64(outCap) && !mem.Write(outPtr, val) {
		panic(fmt.Errorf("%s: buffer at %#x+%d is outside the module's memory", hostapi.ImportRequestField, outPtr, outCap))
	}
	stack[0] = api.EncodeI32(int32(len(val)))
}
