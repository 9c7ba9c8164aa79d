package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
)

// ProviderStore holds stored providers (virtual keys). Their SecretFields are sealed with AES-GCM under a key
// derived from the master key, bound to the record's key; everything else is stored in clear.
type ProviderStore struct {
	s     *Store
	cache readCache[*Provider] // opened providers: virtual keys are resolved on the inference path
}

// providerRecord is a Provider as written to disk.
type providerRecord struct {
	WorkspaceID string                     `json:"workspace_id"`
	Slug        string                     `json:"slug"`
	Provider    string                     `json:"provider"`
	Name        string                     `json:"name,omitempty"`
	Fields      map[string]json.RawMessage `json:"fields,omitempty"` // the fields that are not secret
	Sealed      []byte                     `json:"sealed,omitempty"` // AES-GCM of the JSON object of secret fields
	Stamps
}

// Get returns the provider with its secrets opened. The opened provider is kept in memory after the first read
// (virtual keys are resolved on the inference path, which must not wait for the disk or decrypt every time).
func (p *ProviderStore) Get(workspaceID, slug string) (*Provider, error) {
	if !ValidID(workspaceID) || !ValidID(slug) {
		return nil, ErrNotFound
	}
	k := key(tableProvider, workspaceID, slug)
	cached, err := p.cache.get(string(k), func() (*Provider, error) {
		rec, err := getJSON[providerRecord](p.s, k)
		if err != nil {
			return nil, err
		}
		return p.open(k, rec)
	})
	if err != nil {
		return nil, err
	}
	cp := *cached // the caller's copy; field values are never modified in place
	cp.Fields = maps.Clone(cached.Fields)
	return &cp, nil
}

// List returns the workspace's providers, ordered by slug, with their secrets opened.
func (p *ProviderStore) List(workspaceID string) ([]*Provider, error) {
	if !ValidID(workspaceID) {
		return nil, nil
	}
	out := []*Provider{} // never nil, as before
	// Open each record's secrets with the key it was found under (as Get does), not the key its own fields name:
	// the seal is bound to the record's key, and a record copied under another key must not open.
	err := p.s.scan(prefix(tableProvider, workspaceID), func(k, raw []byte) error {
		rec := new(providerRecord)
		if err := json.Unmarshal(raw, rec); err != nil {
			return fmt.Errorf("storage: decode %s: %w", k, err)
		}
		pr, err := p.open(k, rec)
		if err != nil {
			return err
		}
		out = append(out, pr)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (p *ProviderStore) open(k []byte, rec *providerRecord) (*Provider, error) {
	fields := make(map[string]json.RawMessage, len(rec.Fields)+2)
	for name, v := range rec.Fields {
		fields[name] = v
	}
	if len(rec.Sealed) > 0 {
		plain, err := p.s.keys.open(rec.Sealed, k)
		if err != nil {
			return nil, fmt.Errorf("storage: open secrets of provider %s: %w", rec.Slug, err)
		}
		var secrets map[string]json.RawMessage
		if err := json.Unmarshal(plain, &secrets); err != nil {
			return nil, fmt.Errorf("storage: decode secrets of provider %s: %w", rec.Slug, err)
		}
		for name, v := range secrets {
			fields[name] = v
		}
	}
	return &Provider{WorkspaceID: rec.WorkspaceID, Slug: rec.Slug, Provider: rec.Provider, Name: rec.Name,
		Fields: fields, Stamps: rec.Stamps}, nil
}

// Put creates or replaces the provider pr.Slug of pr.WorkspaceID. Writing the same content again changes
// nothing and reports changed=false.
func (p *ProviderStore) Put(pr *Provider) (changed bool, err error) {
	if err := CheckID("workspace id", pr.WorkspaceID); err != nil {
		return false, err
	}
	if err := CheckID("provider slug", pr.Slug); err != nil {
		return false, err
	}
	fields := make(map[string]json.RawMessage, len(pr.Fields))
	for name, v := range pr.Fields {
		var compact json.RawMessage
		if compact, err = json.Marshal(v); err != nil { // validates and compacts, so equal content compares equal
			return false, fmt.Errorf("provider field %s: %w", name, err)
		}
		fields[name] = compact
	}
	p.s.writeMu.Lock()
	defer p.s.writeMu.Unlock()
	k := key(tableProvider, pr.WorkspaceID, pr.Slug)
	want := &Provider{WorkspaceID: pr.WorkspaceID, Slug: pr.Slug, Provider: pr.Provider, Name: pr.Name, Fields: fields}
	now := p.s.now()
	rec := &providerRecord{WorkspaceID: pr.WorkspaceID, Slug: pr.Slug, Provider: pr.Provider, Name: pr.Name,
		Stamps: Stamps{CreatedAt: now, UpdatedAt: now}}
	old, err := getJSON[providerRecord](p.s, k)
	switch {
	case err == nil:
		prev, err := p.open(k, old)
		if err != nil {
			return false, err
		}
		if prev.Provider == want.Provider && prev.Name == want.Name && reflect.DeepEqual(normalise(prev.Fields), normalise(want.Fields)) {
			return false, nil
		}
		rec.CreatedAt = old.CreatedAt
	case !errors.Is(err, ErrNotFound):
		return false, err
	}
	if err := p.split(k, rec, fields); err != nil {
		return false, err
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return false, err
	}
	b := p.s.db.NewBatch()
	if err := b.Set(k, raw, nil); err != nil {
		b.Close()
		return false, err
	}
	err = p.s.commit(b)
	p.cache.forget(string(k))
	return true, err
}

// split puts fields into rec: the SecretFields sealed under the record's key k, the others in clear.
func (p *ProviderStore) split(k []byte, rec *providerRecord, fields map[string]json.RawMessage) error {
	rec.Fields, rec.Sealed = nil, nil
	secrets := map[string]json.RawMessage{}
	for name, v := range fields {
		if SecretFields[name] {
			secrets[name] = v
			continue
		}
		if rec.Fields == nil {
			rec.Fields = map[string]json.RawMessage{}
		}
		rec.Fields[name] = v
	}
	if len(secrets) > 0 {
		plain, err := json.Marshal(secrets)
		if err != nil {
			return err
		}
		rec.Sealed = p.s.keys.seal(plain, k)
	}
	return nil
}

// sealClearSecrets seals the secret fields that records hold in clear: fields that became SecretFields after
// the record was written (custom_host did). Open runs it before anything reads a provider, so that no secret
// stays on disk in clear; reading such a record works too, as open merges both parts. The content does not
// change, so the stamps are kept. A record that does not decode or open is left as it is, to fail when it is
// read, rather than be lost or stop the start.
func (p *ProviderStore) sealClearSecrets() error {
	p.s.writeMu.Lock()
	defer p.s.writeMu.Unlock()
	b := p.s.db.NewBatch()
	err := p.s.scan(prefix(tableProvider), func(k, raw []byte) error {
		rec := new(providerRecord)
		if err := json.Unmarshal(raw, rec); err != nil {
			p.s.log.Warn("storage: provider record does not decode; left as it is", "key", string(k), "err", err)
			return nil
		}
		clear := false
		for name := range rec.Fields {
			clear = clear || SecretFields[name]
		}
		if !clear {
			return nil
		}
		k = append([]byte(nil), k...) // the scan's key is valid only during this call
		pr, err := p.open(k, rec)
		if err != nil {
			p.s.log.Warn("storage: provider record does not open; its clear fields stay as they are", "key", string(k), "err", err)
			return nil
		}
		if err := p.split(k, rec, pr.Fields); err != nil {
			return err
		}
		sealed, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		return b.Set(k, sealed, nil)
	})
	if err != nil {
		b.Close()
		return fmt.Errorf("storage: seal provider secrets: %w", err)
	}
	return p.s.commit(b)
}

// normalise turns raw field values into strings of compact JSON so that equal content compares equal.
func normalise(fields map[string]json.RawMessage) map[string]string {
	out := make(map[string]string, len(fields))
	for name, v := range fields {
		out[name] = string(v)
	}
	return out
}

// Delete removes the provider.
func (p *ProviderStore) Delete(workspaceID, slug string) error {
	if !ValidID(workspaceID) || !ValidID(slug) {
		return ErrNotFound
	}
	k := key(tableProvider, workspaceID, slug)
	return p.s.deleteOne(k, func() { p.cache.forget(string(k)) })
}
