package ratelimit

import (
	"errors"
	"fmt"
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

type retired struct {
	ws, policyID string
	set          *counterSet // nil for a policy deleted while archived
	mode         retireMode
}

func (l *Limiter) run() {
	defer close(l.done)
	t := time.NewTicker(l.every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			if err := l.flush(); err != nil {
				l.log.Error("ratelimit: save counters", "err", err)
			}
		}
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
	l.mu.Lock()
	gone, stale := l.retired, l.sweepStale
	l.retired, l.sweepStale = nil, nil
	l.mu.Unlock()

	var errs []error
	for _, r := range gone {
		if r.mode == retireDelete {
			if err := l.store.Counters.DeletePolicy(r.ws, r.policyID); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, ws := range stale {
		if err := l.dropStale(ws); err != nil {
			errs = append(errs, err)
		}
	}

	var b batch
	l.workspaces.Range(func(_, v any) bool {
		if s := v.(*workspace).snap.Load(); s != nil {
			for _, p := range s.policies {
				p.set.sweep(nanos, true, &b)
			}
		}
		return true
	})
	for _, r := range gone {
		if r.mode == retireFlush {
			r.set.sweep(nanos, false, &b)
		}
	}
	err := l.store.Counters.SaveBatch(b.records, b.drop)
	for _, c := range b.saved {
		c.mu.Lock()
		if err != nil {
			c.dirty = true // try again at the next sweep
		} else {
			c.saved = true
		}
		c.mu.Unlock()
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("ratelimit: save %d counters: %w", len(b.records), err))
	}
	return errors.Join(errs...)
}

// batch collects one sweep's writes.
type batch struct {
	records []*storage.CounterRecord
	saved   []*counter
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
			b.saved = append(b.saved, c)
		}
		return true
	})
}

// dropStale removes the saved counters of policies that are no longer in the workspace, deleted while the
// gateway was not running.
func (l *Limiter) dropStale(ws string) error {
	if !storage.ValidID(ws) {
		return nil // nothing can be stored under it
	}
	ids, err := l.store.Counters.PolicyIDs(ws)
	if err != nil || len(ids) == 0 {
		return err
	}
	list, err := l.store.Policies.List(ws)
	if err != nil {
		return err
	}
	exists := make(map[string]bool, len(list))
	for _, p := range list {
		exists[p.ID] = true
	}
	var errs []error
	for _, id := range ids {
		if !exists[id] {
			errs = append(errs, l.store.Counters.DeletePolicy(ws, id))
		}
	}
	return errors.Join(errs...)
}
