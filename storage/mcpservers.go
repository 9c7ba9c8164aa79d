package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// MCPServer is an upstream MCP server registered in a workspace: the /mcp endpoint aggregates the workspace's
// servers. URL and Headers are kept in clear in memory and sealed at rest: the headers carry the server's
// credentials, and the URL's userinfo may hold a password. Values returned by the store are the caller's own.
type MCPServer struct {
	ID          string
	WorkspaceID string
	URL         string            // the server's Streamable HTTP endpoint
	Headers     map[string]string // sent to this server only, by canonical name
	AllowTools  []string          // when not empty, only these tools are offered
	DenyTools   []string          // never offered
	CostPerCall float64           // USD that each forwarded tools/call costs the caller's budgets (0: free)
	Stamps
}

// MCPServerStore holds the workspaces' MCP servers, each under mcpserver/<workspace-id>/<id>.
type MCPServerStore struct {
	s     *Store
	cache readCache[*MCPServer] // opened records: the /mcp path reads them on every request
}

// mcpServerRecord is an MCPServer as written to disk.
type mcpServerRecord struct {
	WorkspaceID string   `json:"workspace_id"`
	ID          string   `json:"id"`
	AllowTools  []string `json:"allow_tools,omitempty"`
	DenyTools   []string `json:"deny_tools,omitempty"`
	CostPerCall float64  `json:"cost_per_call,omitempty"`
	Sealed      []byte   `json:"sealed"` // AES-GCM of mcpServerSecrets, bound to the record's key
	Stamps
}

// mcpServerSecrets is the sealed part of a record.
type mcpServerSecrets struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
}

// Get returns the workspace's server id, kept in memory after the first read.
func (m *MCPServerStore) Get(workspaceID, id string) (*MCPServer, error) {
	if !ValidID(workspaceID) || !ValidID(id) {
		return nil, ErrNotFound
	}
	k := key(tableMCPServer, workspaceID, id)
	cached, err := m.cache.get(string(k), func() (*MCPServer, error) {
		rec, err := getJSON[mcpServerRecord](m.s, k)
		if err != nil {
			return nil, err
		}
		return m.open(k, rec)
	})
	if err != nil {
		return nil, err
	}
	return cached.clone(), nil
}

// List returns the workspace's servers, ordered by ID.
func (m *MCPServerStore) List(workspaceID string) ([]*MCPServer, error) {
	out := []*MCPServer{}
	if !ValidID(workspaceID) {
		return out, nil
	}
	// Each record opens with the key it was found under, as Get does: a record copied under another key must
	// not open.
	err := m.s.scan(prefix(tableMCPServer, workspaceID), func(k, raw []byte) error {
		rec := new(mcpServerRecord)
		if err := json.Unmarshal(raw, rec); err != nil {
			return fmt.Errorf("storage: decode %s: %w", k, err)
		}
		srv, err := m.open(k, rec)
		if err != nil {
			return err
		}
		out = append(out, srv)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (m *MCPServerStore) open(k []byte, rec *mcpServerRecord) (*MCPServer, error) {
	plain, err := m.s.keys.open(rec.Sealed, k)
	if err != nil {
		return nil, fmt.Errorf("storage: open MCP server %s: %w", rec.ID, err)
	}
	var sec mcpServerSecrets
	if err := json.Unmarshal(plain, &sec); err != nil {
		return nil, fmt.Errorf("storage: decode MCP server %s: %w", rec.ID, err)
	}
	return &MCPServer{ID: rec.ID, WorkspaceID: rec.WorkspaceID, URL: sec.URL, Headers: sec.Headers,
		AllowTools: rec.AllowTools, DenyTools: rec.DenyTools, CostPerCall: rec.CostPerCall, Stamps: rec.Stamps}, nil
}

// Put creates or replaces the server srv.ID of srv.WorkspaceID, keeping its creation time. Writing the same
// content again changes nothing and reports changed=false. Validation of the content is the caller's
// (control.Plane); Put checks only the IDs, which make the key.
func (m *MCPServerStore) Put(srv *MCPServer) (changed bool, err error) {
	if err := CheckID("workspace id", srv.WorkspaceID); err != nil {
		return false, err
	}
	if err := CheckID("MCP server id", srv.ID); err != nil {
		return false, err
	}
	m.s.writeMu.Lock()
	defer m.s.writeMu.Unlock()
	k := key(tableMCPServer, srv.WorkspaceID, srv.ID)
	now := m.s.now()
	rec := &mcpServerRecord{WorkspaceID: srv.WorkspaceID, ID: srv.ID, AllowTools: nilIfEmpty(srv.AllowTools),
		DenyTools: nilIfEmpty(srv.DenyTools), CostPerCall: srv.CostPerCall, Stamps: Stamps{CreatedAt: now, UpdatedAt: now}}
	sec := mcpServerSecrets{URL: srv.URL, Headers: srv.Headers}
	if len(sec.Headers) == 0 {
		sec.Headers = nil
	}
	old, err := getJSON[mcpServerRecord](m.s, k)
	switch {
	case err == nil:
		prev, err := m.open(k, old)
		if err != nil {
			return false, err
		}
		if prev.URL == sec.URL && maps.Equal(prev.Headers, sec.Headers) && slices.Equal(prev.AllowTools, rec.AllowTools) &&
			slices.Equal(prev.DenyTools, rec.DenyTools) && prev.CostPerCall == rec.CostPerCall {
			return false, nil
		}
		rec.CreatedAt = old.CreatedAt
	case !errors.Is(err, ErrNotFound):
		return false, err
	}
	plain, err := json.Marshal(sec)
	if err != nil {
		return false, err
	}
	rec.Sealed = m.s.keys.seal(plain, k)
	raw, err := json.Marshal(rec)
	if err != nil {
		return false, err
	}
	b := m.s.db.NewBatch()
	if err := b.Set(k, raw, nil); err != nil {
		b.Close()
		return false, err
	}
	err = m.s.commit(b)
	m.cache.forget(string(k)) // after the commit: a read racing it is dropped, not kept
	return err == nil, err
}

// Delete removes the server; ErrNotFound when there is none.
func (m *MCPServerStore) Delete(workspaceID, id string) error {
	if !ValidID(workspaceID) || !ValidID(id) {
		return ErrNotFound
	}
	k := key(tableMCPServer, workspaceID, id)
	return m.s.deleteOne(k, func() { m.cache.forget(string(k)) })
}

// clone is a copy whose maps and slices the caller may change without touching the cached record.
func (srv *MCPServer) clone() *MCPServer {
	cp := *srv
	cp.Headers = maps.Clone(srv.Headers)
	cp.AllowTools = slices.Clone(srv.AllowTools)
	cp.DenyTools = slices.Clone(srv.DenyTools)
	return &cp
}

// nilIfEmpty makes an empty list and an absent one the same content, so that they compare equal.
func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}
