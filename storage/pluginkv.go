package storage

import (
	"encoding/json"
	"errors"
	"fmt"
)

// PluginKVEntry is one value of a workspace's plugin key-value store, which the workspace's plugins read with
// the kv_get host function (package plugins) and admins fill through the admin API. Values are not secrets:
// they are stored in clear.
type PluginKVEntry struct {
	WorkspaceID string
	Key         string
	Value       string
	Stamps
}

// PluginKVStore holds the workspaces' plugin key-value entries, each under pluginkv/<workspace-id>/<key>. Its
// readers are plugins, one kv_get per check: Lookup answers from a copy of the workspace's entries kept in
// memory, loaded on the workspace's first Lookup and dropped by every write (here, and on the change feed from
// other replicas).
type PluginKVStore struct {
	s     *Store
	cache readCache[pluginKVSet] // by workspace ID
}

// pluginKVSet is a workspace's values as Lookup serves them. Nobody writes to it once it is cached.
type pluginKVSet map[string][]byte

// pluginKVRecord is a PluginKVEntry as written to disk.
type pluginKVRecord struct {
	WorkspaceID string `json:"workspace_id"`
	Key         string `json:"key"`
	Value       string `json:"value"`
	Stamps
}

// MaxPluginKVKey is the longest key, in bytes.
const MaxPluginKVKey = 256

// ValidPluginKVKey reports whether k can be a key of the plugin key-value store: 1 to MaxPluginKVKey bytes of
// printable ASCII without spaces and without '/', which separates the components of the store's own keys.
// What the admin API answers for other keys is control.Plane's.
func ValidPluginKVKey(k string) bool {
	if len(k) == 0 || len(k) > MaxPluginKVKey {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c <= ' ' || c > '~' || c == '/' {
			return false
		}
	}
	return true
}

func newPluginKVStore(s *Store) *PluginKVStore {
	p := &PluginKVStore{s: s}
	s.OnChange(p.changed)
	return p
}

// changed drops what another replica's write made stale.
func (p *PluginKVStore) changed(c Change) {
	switch {
	case c.All:
		p.cache.forgetAll()
	case c.Table == tablePluginKV:
		p.cache.forget(c.WorkspaceID)
	}
}

// Lookup returns the value stored under name in the workspace's store, from memory after the workspace's first
// Lookup. The slice is shared: the caller must not change it.
func (p *PluginKVStore) Lookup(workspaceID, name string) (value []byte, found bool, err error) {
	if !ValidID(workspaceID) {
		return nil, false, nil
	}
	set, err := p.cache.get(workspaceID, func() (pluginKVSet, error) {
		set := pluginKVSet{}
		err := p.scan(workspaceID, func(rec *pluginKVRecord) { set[rec.Key] = []byte(rec.Value) })
		return set, err
	})
	if err != nil {
		return nil, false, err
	}
	value, found = set[name]
	return value, found, nil
}

// scan calls fn with each of the workspace's records, in key order.
func (p *PluginKVStore) scan(workspaceID string, fn func(*pluginKVRecord)) error {
	return p.s.scan(prefix(tablePluginKV, workspaceID), func(k, raw []byte) error {
		rec := new(pluginKVRecord)
		if err := json.Unmarshal(raw, rec); err != nil {
			return fmt.Errorf("storage: decode %s: %w", k, err)
		}
		fn(rec)
		return nil
	})
}

// Get returns the workspace's entry name, read from the store (not from Lookup's copy), or ErrNotFound.
func (p *PluginKVStore) Get(workspaceID, name string) (*PluginKVEntry, error) {
	if !ValidID(workspaceID) || !ValidPluginKVKey(name) {
		return nil, ErrNotFound
	}
	rec, err := getJSON[pluginKVRecord](p.s, key(tablePluginKV, workspaceID, name))
	if err != nil {
		return nil, err
	}
	return rec.entry(), nil
}

// List returns the workspace's entries, values included, ordered by key (bytewise), read from the store.
func (p *PluginKVStore) List(workspaceID string) ([]*PluginKVEntry, error) {
	out := []*PluginKVEntry{}
	if !ValidID(workspaceID) {
		return out, nil
	}
	err := p.scan(workspaceID, func(rec *pluginKVRecord) { out = append(out, rec.entry()) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (rec *pluginKVRecord) entry() *PluginKVEntry {
	return &PluginKVEntry{WorkspaceID: rec.WorkspaceID, Key: rec.Key, Value: rec.Value, Stamps: rec.Stamps}
}

// Put creates or replaces e.Key of e.WorkspaceID, keeping its creation time, and reports whether it created
// it. Writing the same value again changes nothing. The bounds (value size, entries per workspace) are the
// caller's (control.Plane); Put checks only the workspace ID and the key, which make the store's key.
func (p *PluginKVStore) Put(e *PluginKVEntry) (created bool, err error) {
	if err := CheckID("workspace id", e.WorkspaceID); err != nil {
		return false, err
	}
	if !ValidPluginKVKey(e.Key) {
		return false, fmt.Errorf("plugin key-value key %q is not 1-%d bytes of printable ASCII without spaces or '/'", e.Key, MaxPluginKVKey)
	}
	p.s.writeMu.Lock()
	defer p.s.writeMu.Unlock()
	k := key(tablePluginKV, e.WorkspaceID, e.Key)
	_, err = p.s.get(k)
	switch {
	case errors.Is(err, ErrNotFound):
		created = true
	case err != nil:
		return false, err
	}
	b := p.s.db.NewBatch()
	rec := &pluginKVRecord{WorkspaceID: e.WorkspaceID, Key: e.Key, Value: e.Value}
	if _, err := upsert(p.s, b, k, rec); err != nil {
		b.Close()
		return false, err
	}
	err = p.s.commit(b)
	p.cache.forget(e.WorkspaceID) // after the commit: a Lookup racing it is dropped, not kept
	return created, err
}

// Delete removes the workspace's entry name; ErrNotFound when there is none.
func (p *PluginKVStore) Delete(workspaceID, name string) error {
	if !ValidID(workspaceID) || !ValidPluginKVKey(name) {
		return ErrNotFound
	}
	k := key(tablePluginKV, workspaceID, name)
	return p.s.deleteOne(k, func() { p.cache.forget(workspaceID) })
}
