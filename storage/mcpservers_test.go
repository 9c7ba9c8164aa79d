package storage

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

const mcpHeaderSecret = "Bearer mcp-upstream-token-5e1d"

func testMCPServer(wsID, id string) *MCPServer {
	return &MCPServer{ID: id, WorkspaceID: wsID, URL: "https://user:urlpass@mcp.example.com/mcp",
		Headers:    map[string]string{"Authorization": mcpHeaderSecret, "X-Team": "blue-team-header"},
		AllowTools: []string{"search", "fetch"}, DenyTools: []string{"delete"}}
}

// TestMCPServerCRUD: Put, Get, List and Delete round-trip a server, the same content written again is no change,
// a changed one keeps its creation time, and a copy the caller changes does not change the cached record.
func TestMCPServerCRUD(t *testing.T) {
	clk := newFakeClock()
	s := openTest(t, nil, clk)
	ws := newWorkspace(t, s, "mcp")
	srv := testMCPServer(ws.ID, "tools")
	if changed, err := s.MCPServers.Put(srv); err != nil || !changed {
		t.Fatalf("Put = %v, %v", changed, err)
	}
	got, err := s.MCPServers.Get(ws.ID, "tools")
	if err != nil {
		t.Fatal(err)
	}
	want := *srv
	want.Stamps = Stamps{CreatedAt: clk.Now(), UpdatedAt: clk.Now()}
	if !reflect.DeepEqual(got, &want) {
		t.Fatalf("Get = %+v, want %+v", got, want)
	}
	got.Headers["Authorization"] = "changed by the caller"
	got.AllowTools[0] = "changed"
	again, _ := s.MCPServers.Get(ws.ID, "tools")
	if again.Headers["Authorization"] != mcpHeaderSecret || again.AllowTools[0] != "search" {
		t.Errorf("the cached record changed with the caller's copy: %+v", again)
	}
	if changed, err := s.MCPServers.Put(testMCPServer(ws.ID, "tools")); err != nil || changed {
		t.Errorf("Put of the same content = %v, %v", changed, err)
	}
	created := clk.Now()
	clk.Advance(1e9)
	upd := testMCPServer(ws.ID, "tools")
	upd.DenyTools = nil
	if changed, err := s.MCPServers.Put(upd); err != nil || !changed {
		t.Fatalf("Put of a change = %v, %v", changed, err)
	}
	got, _ = s.MCPServers.Get(ws.ID, "tools")
	if got.DenyTools != nil || !got.CreatedAt.Equal(created) || !got.UpdatedAt.Equal(clk.Now()) {
		t.Errorf("after the change: %+v", got)
	}
	if _, err := s.MCPServers.Put(testMCPServer(ws.ID, "alpha")); err != nil {
		t.Fatal(err)
	}
	other := newWorkspace(t, s, "other")
	list, err := s.MCPServers.List(ws.ID)
	if err != nil || len(list) != 2 || list[0].ID != "alpha" || list[1].ID != "tools" {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if list, err := s.MCPServers.List(other.ID); err != nil || len(list) != 0 {
		t.Errorf("another workspace lists %+v, %v", list, err)
	}
	if _, err := s.MCPServers.Get(other.ID, "tools"); !errors.Is(err, ErrNotFound) {
		t.Errorf("another workspace's Get: %v", err)
	}
	if err := s.MCPServers.Delete(ws.ID, "tools"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MCPServers.Get(ws.ID, "tools"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Delete: %v", err)
	}
	if err := s.MCPServers.Delete(ws.ID, "tools"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete: %v", err)
	}
	if _, err := s.MCPServers.Put(&MCPServer{WorkspaceID: ws.ID, ID: "bad id", URL: "https://x"}); err == nil {
		t.Error("Put took an invalid ID")
	}
}

// TestMCPServerSecretsSealed: neither the header values nor the URL's password are on disk in clear, in the
// record or in any file of the database, and a sealed record copied under another key does not open.
func TestMCPServerSecretsSealed(t *testing.T) {
	fs := vfs.NewMem()
	s := openTest(t, fs, nil)
	requirePebble(t, s)
	ws := newWorkspace(t, s, "sealed")
	if _, err := s.MCPServers.Put(testMCPServer(ws.ID, "tools")); err != nil {
		t.Fatal(err)
	}
	k := key(tableMCPServer, ws.ID, "tools")
	raw, err := s.get(k)
	if err != nil {
		t.Fatal(err)
	}
	clearTexts := []string{"mcp-upstream-token-5e1d", "blue-team-header", "urlpass", "mcp.example.com"}
	for _, clear := range clearTexts {
		if bytes.Contains(raw, []byte(clear)) {
			t.Errorf("the record holds %q in clear: %s", clear, raw)
		}
	}
	if !bytes.Contains(raw, []byte("search")) {
		t.Errorf("the tool lists are not in clear: %s", raw)
	}
	if err := s.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	for name, data := range fsFileContents(t, fs, "db") {
		for _, clear := range clearTexts {
			if bytes.Contains(data, []byte(clear)) {
				t.Errorf("file %s holds %q in clear", name, clear)
			}
		}
	}
	// The seal is bound to the record's key.
	if err := s.db.Set(key(tableMCPServer, ws.ID, "copy"), raw, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MCPServers.Get(ws.ID, "copy"); err == nil {
		t.Error("a record copied under another key opened")
	}
}

// TestMCPServersGoWithTheirWorkspace: a workspace's servers count as its holdings, and a forced delete removes
// them and the cached copies.
func TestMCPServersGoWithTheirWorkspace(t *testing.T) {
	s := openTest(t, nil, nil)
	ws := newWorkspace(t, s, "gone")
	if _, err := s.MCPServers.Put(testMCPServer(ws.ID, "tools")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MCPServers.Get(ws.ID, "tools"); err != nil { // cached
		t.Fatal(err)
	}
	held, err := s.Workspaces.Delete(ws.ID, false)
	if !errors.Is(err, ErrConflict) || !reflect.DeepEqual(held, []Holding{{Kind: "mcp_servers", Count: 1}}) {
		t.Fatalf("Delete without force = %v, %v", held, err)
	}
	if _, err := s.Workspaces.Delete(ws.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MCPServers.Get(ws.ID, "tools"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after the workspace went: %v", err)
	}
	if n := countPrefix(t, s, "mcpserver/"); n != 0 {
		t.Errorf("%d MCP server records left", n)
	}
}

// TestMCPServerRemoteChangeForgets: a change another replica announces drops the cached copy, so that the next
// Get reads the new record.
func TestMCPServerRemoteChangeForgets(t *testing.T) {
	s := openTest(t, nil, nil)
	ws := newWorkspace(t, s, "remote")
	if _, err := s.MCPServers.Put(testMCPServer(ws.ID, "tools")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MCPServers.Get(ws.ID, "tools"); err != nil { // cached
		t.Fatal(err)
	}
	// Another replica's write, as this process sees it: the record changes under the cache.
	k := key(tableMCPServer, ws.ID, "tools")
	changed := testMCPServer(ws.ID, "tools")
	changed.URL = "https://other.example.com/mcp"
	plain, _ := json.Marshal(mcpServerSecrets{URL: changed.URL, Headers: changed.Headers})
	raw, _ := json.Marshal(&mcpServerRecord{WorkspaceID: ws.ID, ID: "tools", Sealed: s.keys.seal(plain, k)})
	if err := s.db.Set(k, raw, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.MCPServers.Get(ws.ID, "tools"); got.URL == changed.URL {
		t.Fatal("the cache was not in use")
	}
	s.remoteChanged([][]byte{k})
	if got, _ := s.MCPServers.Get(ws.ID, "tools"); got.URL != changed.URL {
		t.Errorf("after the announced change: %s", got.URL)
	}
}

// TestMCPServerCostPerCall: cost_per_call round-trips through Get and List, a new cost is a change, and a free
// server's record does not carry the field.
func TestMCPServerCostPerCall(t *testing.T) {
	s := openTest(t, nil, nil)
	ws := newWorkspace(t, s, "cost")
	free := testMCPServer(ws.ID, "free")
	if _, err := s.MCPServers.Put(free); err != nil {
		t.Fatal(err)
	}
	if raw, err := s.get(key(tableMCPServer, ws.ID, "free")); err != nil || bytes.Contains(raw, []byte("cost_per_call")) {
		t.Errorf("a free server's record: %s, %v", raw, err)
	}
	paid := testMCPServer(ws.ID, "paid")
	paid.CostPerCall = 0.02
	if _, err := s.MCPServers.Put(paid); err != nil {
		t.Fatal(err)
	}
	if got, err := s.MCPServers.Get(ws.ID, "paid"); err != nil || got.CostPerCall != 0.02 {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if changed, err := s.MCPServers.Put(paid); err != nil || changed {
		t.Errorf("Put of the same cost = %v, %v", changed, err)
	}
	paid.CostPerCall = 0.03
	if changed, err := s.MCPServers.Put(paid); err != nil || !changed {
		t.Errorf("Put of a new cost = %v, %v", changed, err)
	}
	list, err := s.MCPServers.List(ws.ID)
	if err != nil || len(list) != 2 || list[0].CostPerCall != 0 || list[1].CostPerCall != 0.03 {
		t.Fatalf("List = %+v, %v", list, err)
	}
}
