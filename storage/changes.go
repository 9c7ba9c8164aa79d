package storage

import (
	"bytes"
	"encoding/hex"
	"sync"
)

// Change is a write that another process committed to a shared engine (PostgreSQL), as its change feed
// announces it. The store has already dropped what it kept of the record when listeners hear of it.
type Change struct {
	// Table is the record's table: "ws", "apikey", "provider", "config", "prompt", "guardrail", "policy",
	// "usagelimit", "plugin", "pluginwasm", ... (keys.go).
	Table string
	// WorkspaceID and ID name the record (ID is a provider's slug, an API key's hash); empty when the key has
	// no such part.
	WorkspaceID, ID string
	// All means that anything may have changed: the feed was interrupted (changes may have been missed) or a
	// whole range was deleted. Listeners reload everything they keep.
	All bool
}

// changeListeners are the functions OnChange registered.
type changeListeners struct {
	mu  sync.RWMutex
	fns []func(Change)
}

// OnChange registers fn to be told of each change another process commits to a shared engine, after the store
// dropped its cached copy of the record. fn runs on the feed's goroutine: it must not block for long. An
// embedded store never calls it (no other process writes to it).
func (s *Store) OnChange(fn func(Change)) {
	s.listeners.mu.Lock()
	s.listeners.fns = append(s.listeners.fns, fn)
	s.listeners.mu.Unlock()
}

func (s *Store) tell(c Change) {
	s.listeners.mu.RLock()
	fns := s.listeners.fns
	s.listeners.mu.RUnlock()
	for _, fn := range fns {
		fn(c)
	}
}

// remoteChanged is what a shared engine calls with the keys another process committed (Set or Delete): the
// cached copies of those records are dropped, the generations readers watch are bumped, and the listeners are
// told.
func (s *Store) remoteChanged(keys [][]byte) {
	for _, k := range keys {
		table, rest, _ := bytes.Cut(k, []byte{'/'})
		ws, id, _ := bytes.Cut(rest, []byte{'/'})
		c := Change{Table: string(table), WorkspaceID: string(ws), ID: string(id)}
		switch c.Table {
		case tableWorkspace:
			s.Workspaces.cache.forget(string(k))
			c.ID = c.WorkspaceID
		case tableAPIKey:
			var h apiKeyHash
			if n, err := hex.Decode(h[:], rest); err == nil && n == len(h) {
				s.APIKeys.forget(h)
			}
			c.WorkspaceID, c.ID = "", string(rest)
		case tableProvider:
			s.Providers.cache.forget(string(k))
		case tableMCPServer:
			s.MCPServers.cache.forget(string(k))
		case tableConfig, tablePrompt, tableGuardrail, tablePolicy, tableUsageLimit, tablePlugin:
			d := s.docStore(c.Table)
			d.forgetKey(string(k))
		}
		s.tell(c)
	}
}

// remoteChangedAll drops every cached record, bumps every generation and tells the listeners that anything
// may have changed.
func (s *Store) remoteChangedAll() {
	s.Workspaces.cache.forgetAll()
	s.Providers.cache.forgetAll()
	s.MCPServers.cache.forgetAll()
	s.Cache.hot.clear()
	for _, t := range []string{tableConfig, tablePrompt, tableGuardrail, tablePolicy, tableUsageLimit, tablePlugin} {
		s.docStore(t).forgetAll()
	}
	a := s.APIKeys
	a.mu.Lock()
	clear(a.cache)
	a.gen++
	a.mu.Unlock()
	s.tell(Change{All: true})
}

// docCache is what remoteChanged needs of a DocStore, whatever its record type.
type docCache interface {
	forgetKey(k string)
	forgetAll()
}

func (s *Store) docStore(table string) docCache {
	switch table {
	case tableConfig:
		return s.Configs
	case tablePrompt:
		return s.Prompts
	case tableGuardrail:
		return s.Guardrails
	case tablePolicy:
		return s.Policies
	case tableUsageLimit:
		return s.UsageLimits
	default: // tablePlugin
		return &s.Plugins.docs
	}
}

func (d *DocStore[T, P]) forgetKey(k string) {
	d.cache.forget(k)
	d.gen.Add(1)
}

func (d *DocStore[T, P]) forgetAll() {
	d.cache.forgetAll()
	d.gen.Add(1)
}

func (c *readCache[V]) forgetAll() {
	c.mu.Lock()
	clear(c.m)
	c.gen++
	c.mu.Unlock()
}
