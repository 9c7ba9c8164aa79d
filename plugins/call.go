package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/bits"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/tracing"
)

// RequestView is the request as the request_field host function reads it. The caller parses the request once
// and shares the view between the checks of that request; Field may be called from the goroutine of any call
// that uses the view, one call at a time per call.
type RequestView interface {
	// Field returns the JSON text of the field at path ("params.temperature", "params.messages.0.role",
	// "metadata.user", "url.pathname"), or false when the request has no such field. The bytes are copied
	// into the guest and not kept.
	Field(path string) (json []byte, ok bool)
}

// noInput stands for a nil input: it encodes to nothing.
var noInput hostapi.Input

// maxKeptInput is the largest input buffer an instance keeps between calls.
const maxKeptInput = 1 << 20

// minInputBuf is the least a v1.1 guest is asked to allocate: most inputs fit, so most calls make one guest
// call.
const minInputBuf = 1 << 10

// inputBufSize is what a v1.1 guest is asked to allocate for an input of n bytes: n rounded up to a power of
// two, at least minInputBuf, so that a buffer serves the inputs of similar sizes that follow. Past what an
// i32 can say it is n itself.
func inputBufSize(n uint32) uint32 {
	size := max(uint32(minInputBuf), uint32(1)<<bits.Len32(n-1))
	if n > 1<<30 {
		return n
	}
	return size
}

// Call runs the workspace's plugin on in: it takes an instance from the plugin's pool (growing it up to
// MaxInstances, then waiting, bounded by ctx), writes the encoded input through gateway_alloc (for a v1.1
// guest, into the instance's last buffer when it fits, without a guest call), calls
// gateway_call under a deadline of CallTimeout (or ctx's, if sooner) and decodes the Output. in may be nil (an
// empty input); req, which may be nil, answers the guest's request_field calls.
//
// An unknown plugin, or another workspace's, is a *gwerr.Error 404. A guest that traps, panics, exits, runs
// out of memory, outlives its deadline or breaks the ABI makes Call return an error wrapping ErrTrap or
// ErrTimeout (or ctx's error when ctx ended), and its instance is closed, never reused. An Output whose Error
// is set is a successful call: the plugin reported that its check errored.
//
// Call is safe for concurrent use; it never panics and never blocks past ctx and CallTimeout (instantiating
// a new instance is bounded by ctx and 5 s).
func (e *Engine) Call(ctx context.Context, workspaceID, id string, kind hostapi.Kind, in *hostapi.Input, req RequestView) (*hostapi.Output, error) {
	p := e.lookup(workspaceID, id)
	if p == nil {
		return nil, gwerr.NotFound("plugin", id)
	}
	var span trace.Span
	if tracing.Enabled() {
		ctx, span = tracing.Start(ctx, "plugin "+id, trace.SpanKindInternal, tracing.KeyPlugin.String(id),
			tracing.KeyPluginKind.String(kindName(kind)))
	}
	start := time.Now()
	if now := start.UnixNano(); now-p.ws.lastCall.Load() > int64(time.Second) { // spare the shared cache line
		p.ws.lastCall.Store(now)
	}
	out, err := p.call(ctx, kind, in, req)
	d := time.Since(start)
	p.nanos.Add(int64(d))
	p.calls.Add(1)
	if err != nil {
		p.errors.Add(1)
	}
	if f := e.opts.OnCall; f != nil {
		f(id, d)
	}
	if span != nil {
		if err != nil {
			tracing.SetError(span, err)
		}
		span.End()
	}
	return out, err
}

func (p *plugin) call(ctx context.Context, kind hostapi.Kind, in *hostapi.Input, req RequestView) (*hostapi.Output, error) {
	for {
		v := p.acquire()
		if v == nil {
			return nil, gwerr.NotFound("plugin", p.id)
		}
		inst, err := v.get(ctx)
		if err != nil {
			v.release()
			if err == errRetired {
				continue // swapped while waiting: use the new version
			}
			return nil, err
		}
		out, err := inst.run(ctx, kind, in, req)
		if err != nil {
			v.discard(inst)
		} else {
			v.put(inst)
		}
		v.release()
		return out, err
	}
}

// kindName names a call's kind for its span.
func kindName(k hostapi.Kind) string {
	switch k {
	case hostapi.KindCheck:
		return "check"
	case hostapi.KindCondition:
		return "condition"
	case hostapi.KindTransform:
		return "transform"
	}
	return "unknown"
}

// run makes one call on the instance.
func (inst *instance) run(ctx context.Context, kind hostapi.Kind, in *hostapi.Input, req RequestView) (*hostapi.Output, error) {
	v := inst.v
	if in == nil {
		in = &noInput
	}
	if n := hostapi.InputLen(in); n > math.MaxInt32 {
		return nil, fmt.Errorf("plugins: plugin %q: input of %d bytes is too large", v.id, n)
	}
	inst.buf = hostapi.AppendInput(inst.buf[:0], in)
	inst.stderr.b = inst.stderr.b[:0]
	defer func() {
		if cap(inst.buf) > maxKeptInput {
			inst.buf = nil
		}
	}()

	fn, export, err := inst.export(kind) // transform.go
	if err != nil {
		return nil, err
	}
	cc := inst.newCall(ctx, req, v.e.opts.CallTimeout) // guard.go: the deadline is refuel's to enforce
	cctx := context.Context(cc)
	defer inst.endCall()

	n := uint32(len(inst.buf))
	var ptr uint32
	switch {
	case n == 0:
	case v.minor >= 1 && n <= inst.inSize: // v1.1: the last buffer is still the guest's input buffer
		ptr = inst.inPtr
		if !inst.mem.Write(ptr, inst.buf) { // cannot happen: memory only grows; defensive
			return nil, fmt.Errorf("plugins: plugin %q: %w: its input buffer at %#x is outside the module's memory of %d bytes",
				v.id, ErrTrap, ptr, inst.mem.Size())
		}
	default:
		size := n
		if v.minor >= 1 {
			size = inputBufSize(n)
		}
		inst.stack[0] = uint64(size)
		if err := inst.alloc.CallWithStack(cc, inst.stack); err != nil {
			return nil, inst.failure(ctx, cctx, hostapi.ExportAlloc, err)
		}
		ptr = uint32(inst.stack[0])
		if uint64(ptr)+uint64(size) > uint64(inst.mem.Size()) || !inst.mem.Write(ptr, inst.buf) {
			return nil, fmt.Errorf("plugins: plugin %q: %w: gateway_alloc(%d) returned %#x, outside the module's memory of %d bytes",
				v.id, ErrTrap, size, ptr, inst.mem.Size())
		}
		if v.minor >= 1 {
			inst.inPtr, inst.inSize = ptr, size
		}
	}
	inst.stack[0], inst.stack[1], inst.stack[2] = uint64(uint32(kind)), uint64(ptr), uint64(n)
	if err := fn.CallWithStack(cc, inst.stack); err != nil {
		return nil, inst.failure(ctx, cctx, export, err)
	}
	r := inst.stack[0]
	out := new(hostapi.Output)
	if r == 0 {
		*out = hostapi.NewOutput()
		return out, nil
	}
	outPtr, outLen := uint32(r>>32), uint32(r)
	b, ok := inst.mem.Read(outPtr, outLen)
	if !ok {
		return nil, fmt.Errorf("plugins: plugin %q: %w: gateway_call returned output at %#x+%d, outside the module's memory of %d bytes",
			v.id, ErrTrap, outPtr, outLen, inst.mem.Size())
	}
	if err := hostapi.DecodeOutput(b, out); err != nil { // copies out of guest memory
		return nil, fmt.Errorf("plugins: plugin %q: %w: %w", v.id, ErrTrap, err)
	}
	if out.Data != nil && !isJSONObject(out.Data) { // callers embed it in responses as is
		return nil, fmt.Errorf("plugins: plugin %q: %w: its output's data is not a JSON object", v.id, ErrTrap)
	}
	return out, nil
}

// isJSONObject reports whether b is one valid JSON object.
func isJSONObject(b []byte) bool {
	t := bytes.TrimLeft(b, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && json.Valid(b)
}

// failure describes a failed guest call: the request's context ended, the call's deadline passed, or the guest
// failed. The caller discards the instance.
func (inst *instance) failure(parent, cctx context.Context, fn string, err error) error {
	v := inst.v
	switch {
	case parent.Err() != nil:
		return fmt.Errorf("plugins: plugin %q: %s: %w", v.id, fn, parent.Err())
	case errors.Is(err, ErrClosed):
		return fmt.Errorf("plugins: plugin %q: %s: %w", v.id, fn, ErrClosed)
	case stoppedAtDeadline(cctx, err) && requestDeadlineOf(cctx): // the request's timer has not fired yet
		return fmt.Errorf("plugins: plugin %q: %s: %w", v.id, fn, context.DeadlineExceeded)
	case stoppedAtDeadline(cctx, err):
		return fmt.Errorf("plugins: plugin %q: %w (%s)", v.id, ErrTimeout, v.e.opts.CallTimeout)
	}
	// wazero's message carries the wasm stack trace on the following lines: it goes to the debug log, and the
	// error keeps the first line, after what the guest printed (a Go guest's "panic: …").
	what := firstLine(err.Error())
	if line := firstLine(string(inst.stderr.b)); line != "" {
		what = line + " (" + what + ")"
	}
	ge := &guestError{
		msg: fmt.Sprintf("plugins: plugin %q failed in %s: %s; memory in use %.1f of %d MiB", v.id, fn, what,
			float64(inst.mem.Size())/(1<<20), v.e.opts.MemoryLimitMiB),
		err: err,
	}
	if v.log.Enabled(parent, slog.LevelDebug) {
		v.log.Debug("plugin failed", "error", err, "stderr", string(inst.stderr.b))
	}
	return ge
}

// guestError is a guest's failure: it wraps ErrTrap and wazero's error.
type guestError struct {
	msg string
	err error
}

func (e *guestError) Error() string   { return e.msg }
func (e *guestError) Unwrap() []error { return []error{ErrTrap, e.err} }
