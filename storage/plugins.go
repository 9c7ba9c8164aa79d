package storage

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// PluginStore holds wasm plugins: metadata under plugin/, bytes under pluginwasm/, written together.
type PluginStore struct {
	docs DocStore[Plugin, *Plugin]
}

// Get returns the plugin's metadata.
func (p *PluginStore) Get(workspaceID, id string) (*Plugin, error) {
	return p.docs.Get(workspaceID, id)
}

// List returns the workspace's plugins ordered by ID.
func (p *PluginStore) List(workspaceID string) ([]*Plugin, error) { return p.docs.List(workspaceID) }

// Wasm returns the plugin's module bytes.
func (p *PluginStore) Wasm(workspaceID, id string) ([]byte, error) {
	if !ValidID(workspaceID) || !ValidID(id) {
		return nil, ErrNotFound
	}
	return p.docs.s.get(key(tablePluginWasm, workspaceID, id))
}

// Put stores the module bytes under the plugin's ID with their SHA-256. Storing the same bytes again changes
// nothing.
func (p *PluginStore) Put(workspaceID, id string, wasm []byte) (*Plugin, bool, error) {
	if err := CheckID("workspace id", workspaceID); err != nil {
		return nil, false, err
	}
	if err := CheckID("plugin id", id); err != nil {
		return nil, false, err
	}
	sum := sha256.Sum256(wasm)
	meta := &Plugin{ID: id, WorkspaceID: workspaceID, SHA256: hex.EncodeToString(sum[:]), Size: len(wasm)}
	s := p.docs.s
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	b := s.db.NewBatch()
	changed, err := upsert(s, b, key(tablePlugin, workspaceID, id), meta)
	if err == nil && changed {
		err = b.Set(key(tablePluginWasm, workspaceID, id), wasm, nil)
	}
	if err != nil {
		b.Close()
		return nil, false, fmt.Errorf("storage: put plugin %s: %w", id, err)
	}
	err = s.commit(b)
	p.docs.cache.forget(string(key(tablePlugin, workspaceID, id)))
	return meta, changed, err
}

// SetLoadError records that the plugin's module, whose SHA-256 is sum (hex), failed to load, and why. It
// changes nothing when the stored module is another one (it was replaced meanwhile) or the plugin is gone, and
// it keeps the record's update time: the module did not change.
func (p *PluginStore) SetLoadError(workspaceID, id, sum, msg string) error {
	if !ValidID(workspaceID) || !ValidID(id) {
		return ErrNotFound
	}
	s := p.docs.s
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	k := key(tablePlugin, workspaceID, id)
	meta, err := getJSON[Plugin](s, k)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if meta.SHA256 != sum || meta.LoadError == msg {
		return nil
	}
	meta.LoadError = msg
	raw, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	b := s.db.NewBatch()
	if err := b.Set(k, raw, nil); err != nil {
		b.Close()
		return err
	}
	err = s.commit(b)
	p.docs.cache.forget(string(k))
	return err
}

// Delete removes the plugin and its bytes.
func (p *PluginStore) Delete(workspaceID, id string) error {
	if !ValidID(workspaceID) || !ValidID(id) {
		return ErrNotFound
	}
	s := p.docs.s
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if _, err := s.get(key(tablePlugin, workspaceID, id)); err != nil {
		return err
	}
	b := s.db.NewBatch()
	err := errors.Join(b.Delete(key(tablePlugin, workspaceID, id), nil), b.Delete(key(tablePluginWasm, workspaceID, id), nil))
	if err != nil {
		b.Close()
		return err
	}
	err = s.commit(b)
	p.docs.cache.forget(string(key(tablePlugin, workspaceID, id)))
	return err
}

// tablePluginStage holds the module of an upload being checked now, so that the other replicas sharing the
// store compile it while the uploading one does (the change feed announces it): when the plugin is then stored,
// they load it from their compilation cache instead of compiling it only then.
const tablePluginStage = "pluginstage"

// Stage keeps wasm as the module being uploaded as the workspace's plugin id, until Unstage. It is not synced:
// losing it costs the other replicas only their head start.
func (p *PluginStore) Stage(workspaceID, id string, wasm []byte) error {
	if err := CheckID("workspace id", workspaceID); err != nil {
		return err
	}
	if err := CheckID("plugin id", id); err != nil {
		return err
	}
	return p.docs.s.db.Set(key(tablePluginStage, workspaceID, id), wasm, pebble.NoSync)
}

// Staged returns the module an upload of the plugin is checking now, or ErrNotFound.
func (p *PluginStore) Staged(workspaceID, id string) ([]byte, error) {
	if !ValidID(workspaceID) || !ValidID(id) {
		return nil, ErrNotFound
	}
	return p.docs.s.get(key(tablePluginStage, workspaceID, id))
}

// Unstage drops the staged module once the upload is done, stored or refused.
func (p *PluginStore) Unstage(workspaceID, id string) error {
	if !ValidID(workspaceID) || !ValidID(id) {
		return nil
	}
	return p.docs.s.db.Delete(key(tablePluginStage, workspaceID, id), pebble.NoSync)
}
