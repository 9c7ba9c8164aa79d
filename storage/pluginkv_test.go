package storage

import (
	"errors"
	"strings"
	"testing"
)

func lookup(t testing.TB, s *Store, ws, name string) string {
	t.Helper()
	v, ok, err := s.PluginKV.Lookup(ws, name)
	if err != nil {
		t.Fatalf("Lookup(%s): %v", name, err)
	}
	if !ok {
		return "<absent>"
	}
	return string(v)
}

// TestPluginKVCRUD: Put reports created then replaced, keeps the creation time and changes nothing for the same
// value; Get and List (ordered by key) read it back; Delete removes it and answers ErrNotFound after; keys that
// could break the key layout are refused; another workspace does not see the entries.
func TestPluginKVCRUD(t *testing.T) {
	clk := newFakeClock()
	s := openTest(t, nil, clk)
	ws := newWorkspace(t, s, "kv")
	other := newWorkspace(t, s, "kv-other")
	put := func(name, value string) bool {
		t.Helper()
		created, err := s.PluginKV.Put(&PluginKVEntry{WorkspaceID: ws.ID, Key: name, Value: value})
		if err != nil {
			t.Fatalf("Put(%s): %v", name, err)
		}
		return created
	}
	if !put("banned", "alpha\nbeta") {
		t.Error("first Put: not created")
	}
	created := clk.Now()
	clk.Advance(1e9)
	if put("banned", "alpha\nbeta") {
		t.Error("same value: created")
	}
	if e, _ := s.PluginKV.Get(ws.ID, "banned"); !e.UpdatedAt.Equal(created) {
		t.Errorf("the same value changed updated_at: %+v", e)
	}
	if put("banned", "gamma") {
		t.Error("replace: created")
	}
	put("A-first", "")
	e, err := s.PluginKV.Get(ws.ID, "banned")
	if err != nil || e.Value != "gamma" || e.WorkspaceID != ws.ID || !e.CreatedAt.Equal(created) || !e.UpdatedAt.Equal(clk.Now()) {
		t.Fatalf("Get = %+v, %v", e, err)
	}
	list, err := s.PluginKV.List(ws.ID)
	if err != nil || len(list) != 2 || list[0].Key != "A-first" || list[1].Key != "banned" || list[1].Value != "gamma" {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if l, _ := s.PluginKV.List(other.ID); len(l) != 0 {
		t.Errorf("another workspace lists %+v", l)
	}
	if _, err := s.PluginKV.Get(other.ID, "banned"); !errors.Is(err, ErrNotFound) {
		t.Errorf("another workspace's Get = %v", err)
	}
	for _, bad := range []string{"", "a/b", "a b", "tab\t", "é", strings.Repeat("k", MaxPluginKVKey+1)} {
		if _, err := s.PluginKV.Put(&PluginKVEntry{WorkspaceID: ws.ID, Key: bad}); err == nil {
			t.Errorf("Put(%q) was accepted", bad)
		}
	}
	if !ValidPluginKVKey(strings.Repeat("~", MaxPluginKVKey)) || !ValidPluginKVKey("!") {
		t.Error("a valid key is refused")
	}
	if err := s.PluginKV.Delete(ws.ID, "banned"); err != nil {
		t.Fatal(err)
	}
	if err := s.PluginKV.Delete(ws.ID, "banned"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete = %v", err)
	}
}

// TestPluginKVLookup: Lookup serves from memory once loaded (a record changed under it without the store's
// knowledge is not seen), every write through the store and a change notification from another replica drop
// the copy, an empty workspace is cached as empty, and deleting the workspace drops its entries and its copy.
func TestPluginKVLookup(t *testing.T) {
	s := openTest(t, nil, nil)
	ws := newWorkspace(t, s, "kv")
	if got := lookup(t, s, ws.ID, "banned"); got != "<absent>" {
		t.Fatalf("empty store: %s", got)
	}
	if _, err := s.PluginKV.Put(&PluginKVEntry{WorkspaceID: ws.ID, Key: "banned", Value: "one"}); err != nil {
		t.Fatal(err)
	}
	if got := lookup(t, s, ws.ID, "banned"); got != "one" {
		t.Fatalf("after Put: %s", got)
	}
	// A write behind the store's back (as another replica's is) is not seen until the copy is dropped.
	raw := `{"workspace_id":"` + ws.ID + `","key":"banned","value":"two","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}`
	if err := s.db.Set(key(tablePluginKV, ws.ID, "banned"), []byte(raw), nil); err != nil {
		t.Fatal(err)
	}
	if got := lookup(t, s, ws.ID, "banned"); got != "one" {
		t.Fatalf("Lookup read the store again: %s", got)
	}
	s.remoteChanged([][]byte{key(tablePluginKV, ws.ID, "banned")})
	if got := lookup(t, s, ws.ID, "banned"); got != "two" {
		t.Fatalf("after a change notification: %s", got)
	}
	if err := s.db.Set(key(tablePluginKV, ws.ID, "banned"), []byte(strings.Replace(raw, `"two"`, `"three"`, 1)), nil); err != nil {
		t.Fatal(err)
	}
	s.remoteChangedAll()
	if got := lookup(t, s, ws.ID, "banned"); got != "three" {
		t.Fatalf("after a change of everything: %s", got)
	}
	if err := s.PluginKV.Delete(ws.ID, "banned"); err != nil {
		t.Fatal(err)
	}
	if got := lookup(t, s, ws.ID, "banned"); got != "<absent>" {
		t.Fatalf("after Delete: %s", got)
	}
	if _, err := s.PluginKV.Put(&PluginKVEntry{WorkspaceID: ws.ID, Key: "banned", Value: "four"}); err != nil {
		t.Fatal(err)
	}
	if got := lookup(t, s, ws.ID, "banned"); got != "four" {
		t.Fatalf("after Put: %s", got)
	}
	held, err := s.Workspaces.Delete(ws.ID, false)
	if !errors.Is(err, ErrConflict) || len(held) != 1 || held[0].Kind != "plugin_kv" || held[0].Count != 1 {
		t.Fatalf("Delete of a workspace with entries = %+v, %v", held, err)
	}
	if _, err := s.Workspaces.Delete(ws.ID, true); err != nil {
		t.Fatal(err)
	}
	if got := lookup(t, s, ws.ID, "banned"); got != "<absent>" {
		t.Fatalf("after the workspace's deletion: %s", got)
	}
	if n := countPrefix(t, s, "pluginkv/"); n != 0 {
		t.Fatalf("%d entries left after the workspace's deletion", n)
	}
}

// BenchmarkPluginKVLookup is the hot path of kv_get: one Lookup of a cached workspace.
func BenchmarkPluginKVLookup(b *testing.B) {
	s := openTest(b, nil, nil)
	ws := newWorkspace(b, s, "kv")
	for i := range 100 {
		if _, err := s.PluginKV.Put(&PluginKVEntry{WorkspaceID: ws.ID, Key: "key-" + strings.Repeat("x", i), Value: "v"}); err != nil {
			b.Fatal(err)
		}
	}
	name := "key-" + strings.Repeat("x", 50)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := s.PluginKV.Lookup(ws.ID, name); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

// TestPostgresPluginKVReplicas: a value one replica writes or deletes reaches the other's Lookup copy through
// the change feed.
func TestPostgresPluginKVReplicas(t *testing.T) {
	a, b, _ := openReplicas(t)
	ws := newWorkspace(t, a, "kv")
	if got := lookup(t, b, ws.ID, "banned"); got != "<absent>" {
		t.Fatalf("b before any write: %s", got)
	}
	for _, v := range []string{"one", "two"} {
		if _, err := a.PluginKV.Put(&PluginKVEntry{WorkspaceID: ws.ID, Key: "banned", Value: v}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "b sees "+v, func() bool { return lookup(t, b, ws.ID, "banned") == v })
	}
	if err := a.PluginKV.Delete(ws.ID, "banned"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b sees the delete", func() bool { return lookup(t, b, ws.ID, "banned") == "<absent>" })
}
