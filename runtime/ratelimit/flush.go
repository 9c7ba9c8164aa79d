package ratelimit

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/llmgw/gateway/storage"
)

// retireMode is what becomes of a counter set whose policy left a workspace's snapshot.
type retireMode uint8

const (
	retireFlush   retireMode = iota // archived: saved one last time, then forgotten
	retireDiscard                   // now counts another way: forgotten; a new set ignores the old records
	retireDelete                    // deleted: its saved counters are removed
)

// retired is a counter set (or spend set) whose policy left a workspace's snapshot.
type retired[S any] struct {
	ws, policyID string
	set          S // nil for a policy deleted while archived
	mode         retireMode
}

// retirements hands what reloads retire over to the flusher.
type retirements[S any] struct {
	mu         sync.Mutex
	gone       []retired[S]
	sweepStale []string // workspaces seen for the first time: remove saved records of policies deleted meanwhile
}

// add queues gone; firstSeen tells that ws was compiled for the first time in this process.
func (r *retirements[S]) add(ws string, gone []retired[S], firstSeen bool) {
	r.mu.Lock()
	r.gone = append(r.gone, gone...)
	if firstSeen {
		r.sweepStale = append(r.sweepStale, ws)
	}
	r.mu.Unlock()
}

// take returns and forgets what was queued.
func (r *retirements[S]) take() (gone []retired[S], stale []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	gone, stale = r.gone, r.sweepStale
	r.gone, r.sweepStale = nil, nil
	return gone, stale
}

// flusher runs a flush in the background every interval until close, which flushes once more: the Limiter's
// and the Budgets' saving of their state.
type flusher struct {
	flushMu   sync.Mutex // one flush at a time
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// start runs flush every interval; a failed one is logged with msg.
func (f *flusher) start(every time.Duration, flush func() error, log *slog.Logger, msg string) {
	f.stop, f.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(f.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-f.stop:
				return
			case <-t.C:
				if err := flush(); err != nil {
					log.Error(msg, "err", err)
				}
			}
		}
	}()
}

// close stops the flusher and flushes once more; later calls return the first one's error.
func (f *flusher) close(flush func() error) error {
	f.closeOnce.Do(func() {
		close(f.stop)
		<-f.done
		f.closeErr = flush()
	})
	return f.closeErr
}

// savedPolicies is a store of records kept per policy: storage's Counters or BudgetSpend.
type savedPolicies interface {
	PolicyIDs(workspaceID string) ([]string, error)
	DeletePolicy(workspaceID, policyID string) error
}

// dropDeleted removes the saved records of the policies that gone retires as deleted, and of those deleted while
// the gateway was not running in the workspaces of stale. It returns the deleted policies (ws/policy-ID; nil
// when none) and what failed.
func dropDeleted[T, S any](saved savedPolicies, policies policyStore[T], idOf func(*T) string, gone []retired[S], stale []string) (deleted map[string]bool, errs []error) {
	for _, r := range gone {
		if r.mode == retireDelete {
			if deleted == nil {
				deleted = map[string]bool{}
			}
			deleted[r.ws+"/"+r.policyID] = true
			if err := saved.DeletePolicy(r.ws, r.policyID); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, ws := range stale {
		if err := dropStale(saved, policies, idOf, ws); err != nil {
			errs = append(errs, err)
		}
	}
	return deleted, errs
}

// markSaved records the outcome of a save of the guards' records: saved, or dirty again to try at the next
// sweep.
func markSaved(saved []*guard, err error) {
	for _, g := range saved {
		g.mu.Lock()
		if err != nil {
			g.dirty = true
		} else {
			g.saved = true
		}
		g.mu.Unlock()
	}
}

// flush is the flusher's sweep. In order: it removes the saved counters of deleted policies (first, so that a
// policy created again under the same ID keeps what is saved next); it saves every changed counter in one synced
// batch; and it evicts counters whose window is empty, removing their records in the same batch, which bounds
// memory and disk by the groups active within one window.
func (l *Limiter) flush() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	nanos := l.now().UnixNano()
	gone, stale := l.retire.take()
	_, errs := dropDeleted(l.store.Counters, l.store.Policies, rateLimitID, gone, stale)

	var b batch
	l.workspaces.each(func(s *snapshot) {
		for _, p := range s.policies {
			p.set.sweep(nanos, true, &b)
		}
	})
	for _, r := range gone {
		if r.mode == retireFlush {
			r.set.sweep(nanos, false, &b)
		}
	}
	err := l.store.Counters.SaveBatch(b.records, b.drop)
	markSaved(b.saved, err)
	if err != nil {
		errs = append(errs, fmt.Errorf("ratelimit: save %d counters: %w", len(b.records), err))
	}
	return errors.Join(errs...)
}

func rateLimitID(p *storage.RateLimitPolicy) string { return p.ID }

// batch collects one sweep's writes.
type batch struct {
	records []*storage.CounterRecord
	saved   []*guard
	drop    []storage.CounterKey
}

// sweep adds the set's changed counters to b and, with evict, removes the idle ones from memory (and their
// records from the store). An evicted counter is marked under its lock, so a request that found it just before
// looks it up again instead of counting into a forgotten counter.
func (s *counterSet) sweep(nanos int64, evict bool, b *batch) {
	s.m.Range(func(k, v any) bool {
		c := v.(*counter)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.advance(nanos / s.bucket)
		if evict && c.total == 0 {
			c.evicted = true
			s.m.CompareAndDelete(k, c)
			if c.saved {
				b.drop = append(b.drop, storage.CounterKey{WorkspaceID: s.ws, PolicyID: s.policyID, Group: c.group})
			}
			return true
		}
		if c.dirty {
			c.dirty = false
			b.records = append(b.records, c.record())
			b.saved = append(b.saved, &c.guard)
		}
		return true
	})
}

// dropStale removes the saved records of policies that are no longer in the workspace, deleted while the
// gateway was not running.
func dropStale[T any](saved savedPolicies, policies policyStore[T], idOf func(*T) string, ws string) error {
	if !storage.ValidID(ws) {
		return nil // nothing can be stored under it
	}
	ids, err := saved.PolicyIDs(ws)
	if err != nil || len(ids) == 0 {
		return err
	}
	list, err := policies.List(ws)
	if err != nil {
		return err
	}
	exists := make(map[string]bool, len(list))
	for _, p := range list {
		exists[idOf(p)] = true
	}
	var errs []error
	for _, id := range ids {
		if !exists[id] {
			errs = append(errs, saved.DeletePolicy(ws, id))
		}
	}
	return errors.Join(errs...)
}
