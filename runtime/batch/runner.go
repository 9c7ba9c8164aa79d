package batch

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
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
	// Owner names this runner in the batches' leases (at most storage.MaxLeaseName bytes). Default: the host
	// name, the process ID and a random suffix, so that no two runners share one.
	Owner string
	// LeaseTTL is how long a batch's lease lasts unrenewed: a replica that dies leaves its batches to the others
	// after it. The run renews it every LeaseTTL/3, and looks then for a cancel stored by another replica.
	// Default 15 s.
	LeaseTTL time.Duration
	// TakeoverEvery is how often the runner looks for unfinished batches whose lease nobody holds (their
	// replica died) and takes them over. Default LeaseTTL.
	TakeoverEvery time.Duration
}

// defaultLeaseTTL is Options.LeaseTTL's default: long enough that a busy replica never misses a renewal, short
// enough that a dead one's batches resume soon.
const defaultLeaseTTL = 15 * time.Second

// defaultOwner names a runner in leases: readable in the database (which host, which process), unique thanks to
// the random part.
func defaultOwner() string {
	host, _ := os.Hostname()
	if len(host) > 64 {
		host = host[:64]
	}
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), rand.Text()[:10])
}

// leaseName is the lease a runner holds while it runs the workspace's batch id.
func leaseName(workspaceID, id string) string { return "batch/" + workspaceID + "/" + id }

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

	owner         string        // Options.Owner
	leaseTTL      time.Duration // Options.LeaseTTL
	renewEvery    time.Duration // LeaseTTL/3
	takeoverEvery time.Duration // Options.TakeoverEvery
	// crashed is set by tests to stop as a crash would: the leases are kept until they expire.
	crashed atomic.Bool

	mu      sync.Mutex
	runs    map[string]*run // batches being driven, by workspace/id
	perWS   map[string]int  // how many of runs each workspace has
	parked  map[string]bool // forwarded batches that only reads move on: the takeover pass leaves them
	ctx     context.Context // ends at Stop; nil before Start
	stop    context.CancelCauseFunc
	stopped bool
	drivers sync.WaitGroup // the drivers and the takeover pass
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
	// errLeaseLost: another replica may run the batch now (its renewal was refused, or failed for a whole ttl).
	errLeaseLost = errors.New("batch: the batch's lease was lost")
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
	if opts.Owner == "" {
		opts.Owner = defaultOwner()
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = defaultLeaseTTL
	}
	if opts.TakeoverEvery <= 0 {
		opts.TakeoverEvery = opts.LeaseTTL
	}
	return &Runner{store: store, engine: engine, up: opts.Upstream, log: opts.Logger, now: opts.Now,
		concurrency: opts.Concurrency, maxLine: opts.MaxLineBytes, queued: opts.Queued,
		slots: make(chan struct{}, opts.Running), runs: map[string]*run{}, perWS: map[string]int{},
		parked: map[string]bool{}, owner: opts.Owner, leaseTTL: opts.LeaseTTL, renewEvery: opts.LeaseTTL / 3,
		takeoverEvery: opts.TakeoverEvery}
}

// Start resumes every batch the store lists as unfinished whose lease it gets (the others run on other
// replicas), lets Create start new ones, and from then on takes over, every Options.TakeoverEvery, the
// unfinished batches whose lease nobody holds. ctx carries values only: the runner works until Stop.
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
		if r.launch(b.WorkspaceID, b.ID) {
			r.log.Info("resuming batch", "batch_id", b.ID, "workspace_id", b.WorkspaceID, "status", b.Status)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.stopped {
		r.drivers.Add(1)
		go r.takeOver()
	}
	return nil
}

// Stop interrupts every batch, waits for them and releases their leases, so that other replicas take them
// over at once. Lines in flight are dropped without a result and the batches keep their state: another
// replica, or the next Start, resumes them.
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

// launch drives the workspace's batch id in the background once this runner holds its lease, unless it
// drives it already; a batch whose lease another replica holds is left to it. It reports whether it started
// a driver.
func (r *Runner) launch(workspaceID, id string) bool {
	k := runKey(workspaceID, id)
	r.mu.Lock()
	busy := r.stopped || r.ctx == nil || r.runs[k] != nil
	r.mu.Unlock()
	if busy {
		return false
	}
	held, err := r.store.TryLease(leaseName(workspaceID, id), r.owner, r.leaseTTL)
	if err != nil {
		r.log.Error("batch: cannot take the batch's lease", "batch_id", id, "workspace_id", workspaceID, "err", err)
		return false
	}
	if !held {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// A driver that started meanwhile holds the lease (this runner's): it is its to release. The runner may
	// have stopped meanwhile too: the lease then expires, as one left by a crash does.
	if r.stopped || r.runs[k] != nil {
		return false
	}
	rn := &run{}
	r.runs[k] = rn
	r.perWS[workspaceID]++
	delete(r.parked, k)
	r.drivers.Add(1)
	go r.drive(workspaceID, id, rn)
	return true
}

// takeOver looks, every takeoverEvery until Stop, for unfinished batches this runner does not drive and
// launches those whose lease it gets: their replica died, or stopped. It reads only the index of unfinished
// batches, so on the embedded store, where this process drives them all, a pass costs one short scan.
func (r *Runner) takeOver() {
	defer r.drivers.Done()
	tick := time.NewTicker(r.takeoverEvery)
	defer tick.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-tick.C:
		}
		refs, err := r.store.Batches.UnfinishedRefs()
		if err != nil {
			r.log.Warn("batch: cannot list the unfinished batches to take over", "err", err)
			continue
		}
		var free []storage.BatchRef
		r.mu.Lock()
		parked := make(map[string]bool, len(r.parked))
		for _, ref := range refs {
			k := runKey(ref.WorkspaceID, ref.ID)
			switch {
			case r.parked[k]:
				parked[k] = true
			case r.runs[k] == nil:
				free = append(free, ref)
			}
		}
		r.parked = parked // batches over leave it
		r.mu.Unlock()
		for _, ref := range free {
			if r.launch(ref.WorkspaceID, ref.ID) {
				r.log.Info("batch taken over", "batch_id", ref.ID, "workspace_id", ref.WorkspaceID, "owner", r.owner)
			}
		}
	}
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
	// The lease first: another replica's takeover pass, which may see the batch as soon as it is stored, then
	// leaves it to this one.
	name := leaseName(b.WorkspaceID, b.ID)
	if _, err := r.store.TryLease(name, r.owner, r.leaseTTL); err != nil {
		return nil, gwerr.Internal(err)
	}
	if err := r.store.Batches.Create(b); err != nil {
		_ = r.store.ReleaseLease(name, r.owner)
		return nil, gwerr.Internal(err)
	}
	r.log.Info("batch created", "batch_id", b.ID, "workspace_id", b.WorkspaceID, "endpoint", b.Endpoint,
		"completion_window", b.CompletionWindow, "forwarded", b.Upstream != nil, "trace_id", b.Request.TraceID)
	r.launch(b.WorkspaceID, b.ID)
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
		// Run here unless another replica holds the batch: that one sees the cancel at its next renewal.
		r.launch(workspaceID, id)
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

// drive takes the batch through its states while this runner holds its lease, until the batch is over, the
// lease is lost (another replica may run it now) or the runner stops (its state then stays for whoever
// resumes it). The lease is released when it ends, unless the runner crashed.
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
	// leased ends when the lease is lost or the runner stops: then nothing more is written for the batch.
	// ctx, under it, ends at a cancel or at the batch's deadline too: what finished is still written then.
	leased, lose := context.WithCancelCause(r.ctx)
	defer lose(nil)
	ctx, cancel := context.WithCancelCause(leased)
	defer cancel(nil)
	r.mu.Lock()
	rn.cancel = cancel
	r.mu.Unlock()
	// The lease again, now that the run is registered: launch's was maybe renewed just before an earlier run of
	// this batch, ending, released it.
	name := leaseName(workspaceID, id)
	asked := time.Now()
	held, err := r.store.TryLease(name, r.owner, r.leaseTTL)
	if err != nil || !held {
		if err != nil {
			r.log.Error("batch: cannot take the batch's lease", "batch_id", id, "workspace_id", workspaceID, "err", err)
		}
		return
	}
	kept := make(chan struct{})
	go func() {
		defer close(kept)
		r.keepLease(leased, workspaceID, id, rn, asked.Add(r.leaseTTL), lose, cancel)
	}()
	// Runs before the removal from runs (deferred earlier): a launch meanwhile sees the run and takes no lease
	// that this release would end.
	defer func() {
		lose(nil)
		<-kept // no renewal may follow the release
		if r.crashed.Load() {
			return
		}
		if err := r.store.ReleaseLease(name, r.owner); err != nil {
			r.log.Warn("batch: cannot release the batch's lease", "batch_id", id, "workspace_id", workspaceID, "err", err)
		}
	}()
	select {
	case r.slots <- struct{}{}:
		defer func() { <-r.slots }()
	case <-leased.Done():
		return
	}
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
	for !storage.BatchDone(b.Status) && leased.Err() == nil {
		var stageErr error
		wait := false
		switch {
		case b.Upstream != nil:
			stageErr, wait = r.forward(ctx, b), true
		case b.Status == storage.BatchCancelling:
			stageErr = r.finalize(leased, b, storage.BatchCancelled)
		case b.Status == storage.BatchFinalizing:
			stageErr = r.finalize(leased, b, storage.BatchCompleted)
		case r.expired(ctx, b):
			stageErr = r.finalize(leased, b, storage.BatchExpired)
		case b.Status == storage.BatchValidating:
			stageErr = r.validate(ctx, b)
		case b.Status == storage.BatchInProgress:
			stageErr = r.execute(ctx, rn, b)
		}
		if leased.Err() != nil {
			if context.Cause(leased) == errLeaseLost {
				r.log.Warn("batch left to another replica: its lease was lost", "batch_id", id, "workspace_id", workspaceID, "status", b.Status)
			}
			return
		}
		if stageErr != nil && ctx.Err() == nil {
			r.log.Error("batch failed", "batch_id", id, "workspace_id", workspaceID, "status", b.Status, "err", stageErr)
			r.fail(b, storage.BatchError{Code: gwerr.CodeInternal, Message: "the gateway could not run the batch: " + stageErr.Error()})
			return
		}
		if wait {
			// A forwarded batch is the provider's now: reads mirror it, and move it on when there is something
			// to do; the takeover pass leaves it.
			r.mu.Lock()
			r.parked[runKey(workspaceID, id)] = true
			r.mu.Unlock()
			return
		}
		next, err := r.store.Batches.Get(workspaceID, id)
		if err != nil {
			r.log.Error("batch: cannot read the batch to run", "batch_id", id, "workspace_id", workspaceID, "err", err)
			return
		}
		if next.Status == b.Status && !storage.BatchDone(next.Status) && !r.expired(ctx, next) {
			// A stage that changed nothing, for no reason the state shows: never spin; a takeover pass, or the
			// next start, resumes it.
			r.log.Warn("batch interrupted", "batch_id", id, "workspace_id", workspaceID, "status", b.Status, "cause", context.Cause(ctx))
			return
		}
		b = next
	}
}

// keepLease renews the run's lease every renewEvery until leased ends. The run loses the lease (lose) when a
// renewal is refused, or when none succeeded by validUntil, the end of the last lease granted (the store
// unreachable: another replica may hold it by then); a renewal that hangs does not delay that. After each
// renewal it reads the batch: a cancel stored by another replica interrupts the run (cancel) as a local one
// does, and the live counts are saved, so that the other replicas show the batch's progress.
func (r *Runner) keepLease(leased context.Context, workspaceID, id string, rn *run, validUntil time.Time, lose, cancel context.CancelCauseFunc) {
	name := leaseName(workspaceID, id)
	expiry := time.AfterFunc(time.Until(validUntil), func() { lose(errLeaseLost) })
	defer expiry.Stop()
	tick := time.NewTicker(r.renewEvery)
	defer tick.Stop()
	var saved storage.BatchCounts
	for {
		select {
		case <-leased.Done():
			return
		case <-tick.C:
		}
		asked := time.Now()
		held, err := r.store.TryLease(name, r.owner, r.leaseTTL)
		switch {
		case err != nil:
			r.log.Warn("batch: cannot renew the batch's lease", "batch_id", id, "workspace_id", workspaceID, "err", err)
			continue
		case !held:
			lose(errLeaseLost)
			return
		}
		expiry.Reset(time.Until(asked.Add(r.leaseTTL)))
		b, err := r.store.Batches.Get(workspaceID, id)
		if err != nil {
			continue
		}
		if b.Status == storage.BatchCancelling {
			cancel(errCancelled)
		}
		live := storage.BatchCounts{Total: b.Counts.Total, Completed: int(rn.completed.Load()), Failed: int(rn.failed.Load())}
		if b.Status != storage.BatchInProgress || !rn.live.Load() || live == saved || live == b.Counts {
			continue
		}
		if _, err := r.store.Batches.Update(workspaceID, id, func(b *storage.Batch) error {
			if b.Status != storage.BatchInProgress {
				return storage.ErrUnchanged
			}
			b.Counts.Completed, b.Counts.Failed = live.Completed, live.Failed
			return nil
		}); err == nil {
			saved = live
		}
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
