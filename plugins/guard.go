package plugins

import (
	"context"
	"errors"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/llmgw/gateway/internal/wasmfuel"
)

// The runaway guard. Every module is instrumented at load (internal/wasmfuel): a fuel counter charged at each
// function entry and loop iteration, which calls gateway_guard.refuel when it runs out. refuel is where the
// host looks at the clock: it stops the guest (a panic, which wazero turns into the guest call's error) once
// the call's deadline has passed, the request's context has ended or the engine has closed, and otherwise
// hands out the next stretch of fuel. This replaces wazero's WithCloseOnContextDone, whose compiled code exits
// to Go at every loop back-edge and which starts a goroutine per guest call.

// fuelPerRefuel is the fuel of one stretch, in instructions counted statically (an upper bound of those run).
// It trades refuel's cost (a host call and a clock read, ~0.1 µs, paid once per stretch: guard_test.go
// BenchmarkGuardLoop with less fuel) against how far past its deadline a runaway guest gets (one stretch,
// 0.1–0.3 ms: BenchmarkGuardOvershoot). A variable for benchmarks.
var fuelPerRefuel int64 = 1 << 20

// errDeadline stops a guest whose call outlived its deadline; failure turns it into ErrTimeout (or the
// request's context.DeadlineExceeded when the deadline was the request's).
var errDeadline = errors.New("plugins: guest stopped at its deadline")

// guardModule builds the gateway_guard host module that instrumented guests import.
func guardModule(rt wazero.Runtime) wazero.HostModuleBuilder {
	return rt.NewHostModuleBuilder(wasmfuel.GuardModule).
		NewFunctionBuilder().
		WithGoFunction(api.GoFunc(refuel), nil, []api.ValueType{i64}).
		Export(wasmfuel.RefuelName)
}

// refuel is gateway_guard.refuel () -> i64.
func refuel(ctx context.Context, stack []uint64) {
	c := callFrom(ctx)
	if c == nil { // not a call of the engine's; only ctx bounds it
		if err := ctx.Err(); err != nil {
			panic(err)
		}
		stack[0] = uint64(fuelPerRefuel)
		return
	}
	c.stopIfOver()
	stack[0] = uint64(fuelPerRefuel)
}

// stopIfOver stops the guest (a panic, as refuel does) once its call is over: the request's context ended,
// the deadline passed, or the engine closed. Host functions whose work the fuel counter does not see (a
// megabyte copied by kv_get costs the guest one call instruction) call it too, or a loop of them would run
// for seconds on one stretch of fuel.
func (c *callCtx) stopIfOver() {
	if err := c.Context.Err(); err != nil {
		panic(err)
	}
	if c.expired(time.Now()) {
		panic(errDeadline)
	}
	if c.v.e.isClosed() {
		panic(ErrClosed)
	}
}

// instrument returns the module the engine compiles: wasm with the fuel counter, or wasm itself in an
// unguarded engine.
func (e *Engine) instrument(wasm []byte) ([]byte, error) {
	if e.opts.unguarded {
		return wasm, nil
	}
	return wasmfuel.Instrument(wasm)
}

// newCallCtx returns the context of one guest call (or instantiation) of v, whose deadline is limit from now,
// or ctx's deadline if sooner. An unguarded engine sets none: nothing could enforce it.
func (v *version) newCallCtx(ctx context.Context, req RequestView, limit time.Duration) *callCtx {
	c := &callCtx{}
	v.initCallCtx(c, ctx, req, limit)
	return c
}

func (v *version) initCallCtx(c *callCtx, ctx context.Context, req RequestView, limit time.Duration) {
	*c = callCtx{Context: ctx, v: v, req: req}
	if v.e.opts.unguarded {
		return
	}
	c.deadline = time.Now().Add(limit)
	if d, ok := ctx.Deadline(); ok && d.Before(c.deadline) {
		c.deadline, c.requestDeadline = d, true
	}
}

// newCall is newCallCtx for a call on the instance, reusing its callCtx (an instance serves one call at a
// time), which spares an allocation per call. Call endCall when the call is over.
func (inst *instance) newCall(ctx context.Context, req RequestView, limit time.Duration) *callCtx {
	inst.v.initCallCtx(&inst.cc, ctx, req, limit)
	return &inst.cc
}

// endCall reports the call's dropped log lines and lets go of the request, which the instance would otherwise
// keep alive until its next call.
func (inst *instance) endCall() {
	inst.cc.endLogs()
	inst.cc = callCtx{}
}

// expired reports whether the call's deadline has passed.
func (c *callCtx) expired(now time.Time) bool {
	return !c.deadline.IsZero() && !now.Before(c.deadline)
}

// stoppedAtDeadline reports whether err, a guest call's error, is the guard stopping it at the call's
// deadline. cctx is the call's context (a *callCtx, or a context with a deadline of its own).
func stoppedAtDeadline(cctx context.Context, err error) bool {
	return errors.Is(err, errDeadline) || cctx.Err() != nil
}

// requestDeadlineOf reports whether the deadline of the call whose context is cctx was the request's.
func requestDeadlineOf(cctx context.Context) bool {
	c := callFrom(cctx)
	return c != nil && c.requestDeadline
}
