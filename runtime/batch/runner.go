package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/upstream"
	"github.com/llmgw/gateway/storage"
)

// Completion windows (SPEC.md).
const (
	WindowImmediate = "immediate"
	Window24h       = "24h"
)

// window is how long a gateway-managed 24h batch may take.
const window = 24 * time.Hour

// Engine runs one inference request (runtime.Engine).
type Engine interface {
	Do(ctx context.Context, req *runtime.Request) (*runtime.Response, error)
}

// Options configure a Runner. The zero value is usable.
type Options struct {
	// Concurrency is how many lines of one immediate batch run at once (--batch-concurrency). Default 8. A
	// gateway-managed 24h batch runs a quarter as many (at least one): it has a day, and must not crowd out
	// immediate batches and live traffic.
	Concurrency int
	// Running is how many batches run at once; the others wait, validating. Default 4.
	Running int
	// Queued bounds the batches of one workspace that run or wait to run in this process: Create refuses more
	// with 429 until some are done. Default 256.
	Queued int
	// MaxLineBytes bounds one input line; a longer one is refused at validation. Default 32 MiB (the
	// gateway's default body limit: a line is a request body).
	MaxLineBytes int
	// Upstream forwards 24h batches to providers with a batch API. Nil: every batch runs in the gateway.
	Upstream *upstream.Client
	// Logger receives one line per batch state change and the failures. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock of the batches' timestamps. Default time.Now.
	Now func() time.Time
}

// Runner runs batches. Create one per store, Start it once the store is open (it resumes what a previous
// process left unfinished) and Stop it before the store closes.
type Runner struct {
	store       *storage.Store
	engine      Engine
	up          *upstream.Client
	log         *slog.Logger
	now         func() time.Time
	concurrency int
	maxLine     int
	queued      int           // Options.Queued
	slots       chan struct{} // one per batch running

	mu      sync.Mutex
	runs    map[string]*run // batches being driven, by workspace/id
	perWS   map[string]int  // how many of runs each workspace has
	ctx     context.Context // ends at Stop; nil before Start
	stop    context.CancelCauseFunc
	stopped bool
	drivers sync.WaitGroup
}

// run is a batch being driven: how to interrupt it, and its live counts.
type run struct {
	cancel context.CancelCauseFunc // set before the driver reads the batch's state

	live      atomic.Bool // the counts below are the batch's (set once its stored results are counted)
	completed atomic.Int64
	failed    atomic.Int64
}

// Causes that interrupt a batch's lines. A line interrupted by any of them has no result and runs again when
// the batch resumes, unless the batch is over.
var (
	errStopping  = errors.New("batch: the gateway is stopping")
	errCancelled = errors.New("batch: cancelled")
	errExpired   = errors.New("batch: past its completion window")
)

// New returns a runner over the store that sends lines through engine.
func New(store *storage.Store, engine Engine, opts Options) *Runner {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 8
	}
	if opts.Running <= 0 {
		opts.Running = 4
	}
	if opts.Queued <= 0 {
		opts.Queued = 256
	}
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = 32 << 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Runner{store: store, engine: engine, up: opts.Upstream, log: opts.Logger, now: opts.Now,
		concurrency: opts.Concurrency, maxLine: opts.MaxLineBytes, queued: opts.Queued,
		slots: make(chan struct{}, opts.Running), runs: map[string]*run{}, perWS: map[string]int{}}
}

// Start resumes every batch the store lists as unfinished and lets Create start new ones. ctx carries values
// only: the runner works until Stop.
func (r *Runner) Start(ctx context.Context) error {
	r.mu.Lock()
	if r.ctx != nil {
		r.mu.Unlock()
		return errors.New("batch: runner started twice")
	}
	r.ctx, r.stop = context.WithCancelCause(context.WithoutCancel(ctx))
	r.mu.Unlock()
	open, err := r.store.Batches.Unfinished()
	if err != nil {
		return fmt.Errorf("batch: list unfinished batches: %w", err)
	}
	for _, b := range open {
		r.log.Info("resuming batch", "batch_id", b.ID, "workspace_id", b.WorkspaceID, "status", b.Status)
		r.launch(b)
	}
	return nil
}

// Stop interrupts every batch and waits for them. Lines in flight are dropped without a result and the
// batches keep their state: the next Start resumes them.
func (r *Runner) Stop() {
	r.mu.Lock()
	r.stopped = true
	stop := r.stop
	r.mu.Unlock()
	if stop != nil {
		stop(errStopping)
	}
	r.drivers.Wait()
}

func runKey(workspaceID, id string) string { return workspaceID + "/" + id }

// launch drives b in the background unless it is driven already.
func (r *Runner) launch(b *storage.Batch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := runKey(b.WorkspaceID, b.ID)
	if r.stopped || r.ctx == nil || r.runs[k] != nil {
		return
	}
	rn := &run{}
	r.runs[k] = rn
	r.perWS[b.WorkspaceID]++
	r.drivers.Add(1)
	go r.drive(b.WorkspaceID, b.ID, rn)
}

// Create stores a new batch and starts it. b holds what the caller asked for (validated by the control
// plane): its ID, status and timestamps are set here. A 24h batch whose virtual key names a provider with a
// batch API is forwarded to it; every other batch runs in the gateway. A workspace with Options.Queued
// batches running or waiting gets 429.
func (r *Runner) Create(ctx context.Context, b *storage.Batch) (*storage.Batch, error) {
	r.mu.Lock()
	queued := r.perWS[b.WorkspaceID]
	r.mu.Unlock()
	if queued >= r.queued {
		return nil, gwerr.Newf(http.StatusTooManyRequests, gwerr.CodeRateLimited,
			"this workspace has %d batches running or waiting to run, the most the gateway takes: make this one once some are done", queued)
	}
	now := r.now()
	b.ID = storage.NewTimeOrderedID("batch_", now)
	b.Status, b.CreatedAt = storage.BatchValidating, now.Unix()
	if b.CompletionWindow == Window24h {
		if r.up != nil {
			t, err := r.up.Target(ctx, b.WorkspaceID, b.Request.VirtualKey, upstream.Batches)
			switch {
			case err == nil:
				b.Upstream = &storage.BatchUpstream{Provider: t.Provider()}
			case !errors.Is(err, upstream.ErrUnsupported):
				return nil, err
			}
		}
		if b.Upstream == nil {
			b.ExpiresAt = b.CreatedAt + int64(window/time.Second)
		}
	}
	if err := r.store.Batches.Create(b); err != nil {
		return nil, gwerr.Internal(err)
	}
	r.log.Info("batch created", "batch_id", b.ID, "workspace_id", b.WorkspaceID, "endpoint", b.Endpoint,
		"completion_window", b.CompletionWindow, "forwarded", b.Upstream != nil, "trace_id", b.Request.TraceID)
	r.launch(b)
	return b, nil
}

// errNotCancellable is returned by the update of Cancel for a batch past the point of cancelling.
var errNotCancellable = errors.New("batch: not cancellable")

// Cancel asks the workspace's batch id to stop: it is cancelling until the lines in flight are dropped and
// the files are written with what finished, then cancelled. A batch being cancelled is returned as it is; one
// that is finalizing or over is a 409.
func (r *Runner) Cancel(ctx context.Context, workspaceID, id string) (*storage.Batch, error) {
	b, err := r.store.Batches.Update(workspaceID, id, func(b *storage.Batch) error {
		switch b.Status {
		case storage.BatchValidating, storage.BatchInProgress:
			b.Status, b.CancellingAt = storage.BatchCancelling, r.now().Unix()
			return nil
		case storage.BatchCancelling:
			return storage.ErrUnchanged
		}
		return errNotCancellable
	})
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, gwerr.NotFound("batch", id)
	case errors.Is(err, errNotCancellable):
		cur, _ := r.store.Batches.Get(workspaceID, id)
		status := ""
		if cur != nil {
			status = cur.Status
		}
		return nil, gwerr.Newf(http.StatusConflict, gwerr.CodeConflict, "batch %s is %s: only a validating or in_progress batch can be cancelled", id, status)
	case err != nil:
		return nil, gwerr.Internal(err)
	}
	r.log.Info("batch cancelling", "batch_id", id, "workspace_id", workspaceID)
	if b.Upstream != nil && b.Upstream.BatchID != "" {
		b = r.cancelForwarded(ctx, b)
	}
	r.mu.Lock()
	rn := r.runs[runKey(workspaceID, id)]
	if rn != nil && rn.cancel != nil {
		rn.cancel(errCancelled)
	}
	r.mu.Unlock()
	if rn == nil {
		r.launch(b)
	}
	return r.View(ctx, b, false), nil
}

// View returns b as a caller sees it now: with the live counts of a batch running in this process, and for a
// forwarded batch when refresh is set, the provider's state, mirrored (and saved).
func (r *Runner) View(ctx context.Context, b *storage.Batch, refresh bool) *storage.Batch {
	if b.Upstream != nil {
		if refresh && !storage.BatchDone(b.Status) {
			return r.mirror(ctx, b)
		}
		return b
	}
	r.mu.Lock()
	rn := r.runs[runKey(b.WorkspaceID, b.ID)]
	r.mu.Unlock()
	if rn != nil && rn.live.Load() && b.Status != storage.BatchFinalizing && !storage.BatchDone(b.Status) {
		cp := *b
		cp.Counts.Completed, cp.Counts.Failed = int(rn.completed.Load()), int(rn.failed.Load())
		return &cp
	}
	if rn == nil && !storage.BatchDone(b.Status) {
		// The run may have just ended: its counts are in the record it saved last.
		if fresh, err := r.store.Batches.Get(b.WorkspaceID, b.ID); err == nil {
			return fresh
		}
	}
	return b
}

// drive takes the batch through its states until it is over, or the runner stops (its state then stays for
// the next start).
func (r *Runner) drive(workspaceID, id string, rn *run) {
	defer r.drivers.Done()
	defer func() {
		r.mu.Lock()
		delete(r.runs, runKey(workspaceID, id))
		if r.perWS[workspaceID]--; r.perWS[workspaceID] == 0 {
			delete(r.perWS, workspaceID)
		}
		r.mu.Unlock()
	}()
	select {
	case r.slots <- struct{}{}:
		defer func() { <-r.slots }()
	case <-r.ctx.Done():
		return
	}
	ctx, cancel := context.WithCancelCause(r.ctx)
	defer cancel(nil)
	r.mu.Lock()
	rn.cancel = cancel
	r.mu.Unlock()
	// Read only now, with cancel in place: a Cancel that finds no cancel func wrote its state before this.
	b, err := r.store.Batches.Get(workspaceID, id)
	if err != nil {
		r.log.Error("batch: cannot read the batch to run", "batch_id", id, "workspace_id", workspaceID, "err", err)
		return
	}
	if b.ExpiresAt > 0 && b.Upstream == nil {
		var stopTimer context.CancelFunc
		ctx, stopTimer = context.WithDeadlineCause(ctx, time.Unix(b.ExpiresAt, 0), errExpired)
		defer stopTimer()
	}
	for !storage.BatchDone(b.Status) && r.ctx.Err() == nil {
		var stageErr error
		wait := false
		switch {
		case b.Upstream != nil:
			stageErr, wait = r.forward(ctx, b), true
		case b.Status == storage.BatchCancelling:
			stageErr = r.finalize(b, storage.BatchCancelled)
		case b.Status == storage.BatchFinalizing:
			stageErr = r.finalize(b, storage.BatchCompleted)
		case r.expired(ctx, b):
			stageErr = r.finalize(b, storage.BatchExpired)
		case b.Status == storage.BatchValidating:
			stageErr = r.validate(ctx, b)
		case b.Status == storage.BatchInProgress:
			stageErr = r.execute(ctx, rn, b)
		}
		if r.ctx.Err() != nil {
			return
		}
		if stageErr != nil && ctx.Err() == nil {
			r.log.Error("batch failed", "batch_id", id, "workspace_id", workspaceID, "status", b.Status, "err", stageErr)
			r.fail(b, storage.BatchError{Code: gwerr.CodeInternal, Message: "the gateway could not run the batch: " + stageErr.Error()})
			return
		}
		if wait {
			return // a forwarded batch is the provider's now: reads mirror it
		}
		next, err := r.store.Batches.Get(workspaceID, id)
		if err != nil {
			r.log.Error("batch: cannot read the batch to run", "batch_id", id, "workspace_id", workspaceID, "err", err)
			return
		}
		if next.Status == b.Status && !storage.BatchDone(next.Status) && !r.expired(ctx, next) {
			// A stage that changed nothing, for no reason the state shows: never spin; the next start resumes it.
			r.log.Warn("batch interrupted", "batch_id", id, "workspace_id", workspaceID, "status", b.Status, "cause", context.Cause(ctx))
			return
		}
		b = next
	}
}

// expired reports whether a gateway-managed batch is past its window.
func (r *Runner) expired(ctx context.Context, b *storage.Batch) bool {
	if b.ExpiresAt == 0 || b.Upstream != nil {
		return false
	}
	return context.Cause(ctx) == errExpired || r.now().Unix() >= b.ExpiresAt
}

// fail ends a batch as failed with e in its errors, keeping no files. Used when the gateway itself cannot
// go on (the store failing, the input file gone).
func (r *Runner) fail(b *storage.Batch, e storage.BatchError) {
	_, err := r.store.Batches.Update(b.WorkspaceID, b.ID, func(b *storage.Batch) error {
		if storage.BatchDone(b.Status) {
			return storage.ErrUnchanged
		}
		end(b, storage.BatchFailed, r.now().Unix())
		b.Errors = append(b.Errors, e)
		return nil
	})
	if err != nil {
		r.log.Error("batch: cannot save the failed state", "batch_id", b.ID, "workspace_id", b.WorkspaceID, "err", err)
	}
}

// end puts b in the final state status, reached at at (Unix seconds).
func end(b *storage.Batch, status string, at int64) {
	b.Status = status
	switch status {
	case storage.BatchCompleted:
		b.CompletedAt = at
	case storage.BatchFailed:
		b.FailedAt = at
	case storage.BatchExpired:
		b.ExpiredAt = at
	case storage.BatchCancelled:
		b.CancelledAt = at
	}
}
