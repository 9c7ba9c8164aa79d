package storage

import "github.com/cockroachdb/pebble/v2"

// DocStore holds one kind of workspace-scoped record (configs, prompts, guardrails, policies) under
// <table>/<workspace-id>/<id>. The record's own ID and WorkspaceID fields are the caller's to fill; the store
// keys by the arguments.
type DocStore[T any, P interface {
	*T
	stamped
}] struct {
	s     *Store
	table string
}

// Get returns the record, or ErrNotFound.
func (d *DocStore[T, P]) Get(workspaceID, id string) (*T, error) {
	if !ValidID(workspaceID) || !ValidID(id) {
		return nil, ErrNotFound
	}
	return getJSON[T](d.s, key(d.table, workspaceID, id))
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
	changed, err = upsert(d.s, b, key(d.table, workspaceID, id), v)
	if err != nil {
		b.Close()
		return false, err
	}
	return changed, d.s.commit(b)
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
	return d.s.db.Delete(k, pebble.Sync)
}
