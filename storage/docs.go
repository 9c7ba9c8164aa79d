package storage

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// DocStore holds one kind of workspace-scoped record (configs, prompts, guardrails, policies) under
// <table>/<workspace-id>/<id>. The record's own ID and WorkspaceID fields are the caller's to fill; the store
// keys by the arguments.
type DocStore[T any, P interface {
	*T
	stamped
}] struct {
	s     *Store
	table string
	cache readCache[[]byte] // encoded records: saved configs and guardrails are read on the inference path
	gen   atomic.Uint64     // bumped after every Put and Delete; see Generation
}

// Generation is a number that changes after every Put and Delete of this store, in any workspace. Readers that
// keep something derived from the records (the rate limiter's compiled policies) remember the generation they
// read at and read again when it differs: one atomic load per request tells them nothing changed. Read the
// generation before reading the records, so that a write racing the read leaves the copy marked stale.
func (d *DocStore[T, P]) Generation() uint64 { return d.gen.Load() }

// Get returns the record, or ErrNotFound. The encoded record is kept in memory after the first read, so the
// inference path does not wait for the disk; each Get decodes its own copy for the caller.
func (d *DocStore[T, P]) Get(workspaceID, id string) (*T, error) {
	if !ValidID(workspaceID) || !ValidID(id) {
		return nil, ErrNotFound
	}
	k := key(d.table, workspaceID, id)
	raw, err := d.cache.get(string(k), func() ([]byte, error) { return d.s.get(k) })
	if err != nil {
		return nil, err
	}
	v := new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("storage: decode %s: %w", k, err)
	}
	return v, nil
}

// readCache keeps records read from pebble by key. Writes through the owning store call forget, which also
// bumps a generation so that a read racing the write does not put the old record back.
type readCache[V any] struct {
	mu  sync.RWMutex
	m   map[string]V
	gen uint64
}

func (c *readCache[V]) get(k string, load func() (V, error)) (V, error) {
	c.mu.RLock()
	v, ok := c.m[k]
	gen := c.gen
	c.mu.RUnlock()
	if ok {
		return v, nil
	}
	v, err := load()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if c.gen == gen {
		if c.m == nil {
			c.m = map[string]V{}
		}
		c.m[k] = v
	}
	c.mu.Unlock()
	return v, nil
}

func (c *readCache[V]) forget(k string) {
	c.mu.Lock()
	delete(c.m, k)
	c.gen++
	c.mu.Unlock()
}

// List returns the workspace's records ordered by ID.
func (d *DocStore[T, P]) List(workspaceID string) ([]*T, error) {
	if !ValidID(workspaceID) {
		return nil, nil
	}
	return listJSON[T](d.s, prefix(d.table, workspaceID))
}

// Put creates or replaces the record, keeping its creation time. Writing the same content again changes
// nothing and reports changed=false.
func (d *DocStore[T, P]) Put(workspaceID, id string, v P) (changed bool, err error) {
	if err := CheckID("workspace id", workspaceID); err != nil {
		return false, err
	}
	if err := CheckID("id", id); err != nil {
		return false, err
	}
	d.s.writeMu.Lock()
	defer d.s.writeMu.Unlock()
	b := d.s.db.NewBatch()
	k := key(d.table, workspaceID, id)
	changed, err = upsert(d.s, b, k, v)
	if err != nil {
		b.Close()
		return false, err
	}
	err = d.s.commit(b)
	d.cache.forget(string(k))
	d.gen.Add(1)
	return changed, err
}

// Delete removes the record, or answers ErrNotFound.
func (d *DocStore[T, P]) Delete(workspaceID, id string) error {
	if !ValidID(workspaceID) || !ValidID(id) {
		return ErrNotFound
	}
	d.s.writeMu.Lock()
	defer d.s.writeMu.Unlock()
	k := key(d.table, workspaceID, id)
	if _, err := d.s.get(k); err != nil {
		return err
	}
	err := d.s.db.Delete(k, pebble.Sync)
	d.cache.forget(string(k))
	d.gen.Add(1)
	return err
}
