package storage

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/google/uuid"
)

// APIKeyStore holds gateway API keys by the keyed hash of their secret, with a cache in front of pebble so that
// authenticating a request costs one hash and one map lookup.
type APIKeyStore struct {
	s *Store

	mu    sync.RWMutex
	cache map[apiKeyHash]*APIKey // only positive answers; writes through this store keep it current
	// gen counts writes (deletions and updates), so that a Lookup that read a key from pebble before it was
	// deleted or changed does not put the old record back into the cache after the write.
	gen uint64
}

// MinAPIKeyLength is the shortest secret accepted for a gateway API key given by an operator.
const MinAPIKeyLength = 8

// Lookup returns the key whose secret is given, or ErrNotFound. The result is shared: do not modify it.
func (a *APIKeyStore) Lookup(secret string) (*APIKey, error) {
	h := a.s.keys.hashAPIKey(secret)
	a.mu.RLock()
	k, ok := a.cache[h]
	gen := a.gen
	a.mu.RUnlock()
	if ok {
		return k, nil
	}
	k, err := getJSON[APIKey](a.s, key(tableAPIKey, h.hex()))
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	if a.gen == gen {
		a.cache[h] = k
	}
	a.mu.Unlock()
	return k, nil
}

func (a *APIKeyStore) remember(h apiKeyHash, k *APIKey) {
	a.mu.Lock()
	a.cache[h] = k
	a.gen++
	a.mu.Unlock()
}

func (a *APIKeyStore) forget(h apiKeyHash) {
	a.mu.Lock()
	delete(a.cache, h)
	a.gen++
	a.mu.Unlock()
}

// Create makes a new random key in the workspace and returns its secret, which is shown once and never stored.
func (a *APIKeyStore) Create(workspaceID, name string, admin bool) (secret string, k *APIKey, err error) {
	secret = NewAPIKeySecret()
	k, _, err = a.Put(secret, &APIKey{WorkspaceID: workspaceID, Name: name, Admin: admin})
	return secret, k, err
}

// Put stores the key with the given secret (an operator's own, from the bootstrap file), or updates the
// workspace, name and admin rights of the key that already has it. The ID and Hint are the store's to set.
func (a *APIKeyStore) Put(secret string, want *APIKey) (k *APIKey, changed bool, err error) {
	if len(secret) < MinAPIKeyLength {
		return nil, false, fmt.Errorf("api key must be at least %d characters", MinAPIKeyLength)
	}
	a.s.writeMu.Lock()
	defer a.s.writeMu.Unlock()
	if ValidID(want.WorkspaceID) { // under writeMu: a workspace being deleted does not get a key after its delete
		if _, err := a.s.Workspaces.Get(want.WorkspaceID); errors.Is(err, ErrNotFound) {
			return nil, false, fmt.Errorf("api key workspace %s: %w", want.WorkspaceID, ErrNotFound)
		} else if err != nil {
			return nil, false, err
		}
	}
	b := a.s.db.NewBatch()
	before, err := getJSON[APIKey](a.s, key(tableAPIKey, a.s.keys.hashAPIKey(secret).hex()))
	if err != nil && !errors.Is(err, ErrNotFound) {
		b.Close()
		return nil, false, err
	}
	k, err = a.stage(b, secret, want)
	if err != nil {
		b.Close()
		return nil, false, err
	}
	changed = before == nil || before.WorkspaceID != k.WorkspaceID || before.Name != k.Name || before.Admin != k.Admin ||
		before.OrganisationAdmin != k.OrganisationAdmin
	if err := a.s.commit(b); err != nil {
		return nil, false, err
	}
	a.remember(a.s.keys.hashAPIKey(secret), k)
	return k, changed, nil
}

// stage adds the writes that store the key to b and returns the record as it will be. The caller holds writeMu.
func (a *APIKeyStore) stage(b kvBatch, secret string, want *APIKey) (*APIKey, error) {
	if _, err := uuid.Parse(want.WorkspaceID); err != nil {
		return nil, fmt.Errorf("api key workspace_id %q is not a UUID", want.WorkspaceID)
	}
	h := a.s.keys.hashAPIKey(secret)
	hk := key(tableAPIKey, h.hex())
	k := &APIKey{WorkspaceID: want.WorkspaceID, Name: want.Name, Admin: want.Admin, OrganisationAdmin: want.OrganisationAdmin,
		Hint: hint(secret)}
	old, err := getJSON[APIKey](a.s, hk)
	switch {
	case err == nil:
		k.ID = old.ID
		if old.WorkspaceID != k.WorkspaceID {
			if err := b.Delete(key(tableAPIKeyID, old.WorkspaceID, old.ID), nil); err != nil {
				return nil, err
			}
		}
	case errors.Is(err, ErrNotFound):
		k.ID = NewUUID()
	default:
		return nil, err
	}
	if old == nil || old.WorkspaceID != k.WorkspaceID { // an unchanged index is not written again
		if err := b.Set(key(tableAPIKeyID, k.WorkspaceID, k.ID), []byte(h.hex()), nil); err != nil {
			return nil, err
		}
	}
	if _, err := upsert(a.s, b, hk, k); err != nil {
		return nil, err
	}
	return k, nil
}

func hint(secret string) string {
	if len(secret) <= 4 {
		return ""
	}
	return secret[len(secret)-4:]
}

// errStopScan ends a scan early without an error.
var errStopScan = errors.New("stop scan")

// anyAdmin reports whether some workspace holds a key with the admin right. It reads every key until it finds
// one, which is fine for the first start it serves, never for a request.
func (a *APIKeyStore) anyAdmin() (bool, error) {
	found := false
	err := a.s.scan(prefix(tableAPIKey), func(k, raw []byte) error {
		var rec struct {
			Admin bool `json:"admin"`
		}
		if err := json.Unmarshal(raw, &rec); err != nil {
			return fmt.Errorf("storage: decode %s: %w", k, err)
		}
		if rec.Admin {
			found = true
			return errStopScan
		}
		return nil
	})
	if errors.Is(err, errStopScan) {
		err = nil
	}
	return found, err
}

// Get returns the key with the given ID in the workspace.
func (a *APIKeyStore) Get(workspaceID, id string) (*APIKey, error) {
	if !ValidID(workspaceID) || !ValidID(id) {
		return nil, ErrNotFound
	}
	h, err := a.s.get(key(tableAPIKeyID, workspaceID, id))
	if err != nil {
		return nil, err
	}
	return getJSON[APIKey](a.s, key(tableAPIKey, string(h)))
}

// List returns the workspace's keys, ordered by ID.
func (a *APIKeyStore) List(workspaceID string) ([]*APIKey, error) {
	if !ValidID(workspaceID) {
		return nil, nil
	}
	var out []*APIKey
	err := a.s.scan(prefix(tableAPIKeyID, workspaceID), func(_, h []byte) error {
		k, err := getJSON[APIKey](a.s, key(tableAPIKey, string(h)))
		if err != nil {
			return err
		}
		out = append(out, k)
		return nil
	})
	return out, err
}

// Delete removes the key with the given ID from the workspace; from then on it authenticates nothing.
func (a *APIKeyStore) Delete(workspaceID, id string) error {
	if !ValidID(workspaceID) || !ValidID(id) {
		return ErrNotFound
	}
	a.s.writeMu.Lock()
	defer a.s.writeMu.Unlock()
	idKey := key(tableAPIKeyID, workspaceID, id)
	hexHash, err := a.s.get(idKey)
	if err != nil {
		return err
	}
	var h apiKeyHash
	if n, err := hex.Decode(h[:], hexHash); err != nil || n != len(h) {
		return fmt.Errorf("storage: api key index %s holds %q, not a hash", idKey, hexHash)
	}
	b := a.s.db.NewBatch()
	b.Delete(idKey, nil)
	b.Delete(key(tableAPIKey, string(hexHash)), nil)
	if err := a.s.commit(b); err != nil {
		return err
	}
	a.forget(h)
	return nil
}
