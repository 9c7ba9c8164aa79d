package storage

import (
	"bytes"
	"errors"
	"testing"
)

// A forced delete removes the workspace's records from every workspace-scoped table, its API keys (which stop
// authenticating at once, cached or not) and its slug, and nothing of another workspace.
func TestWorkspaceDelete(t *testing.T) {
	s := openTest(t, nil, nil)
	a, b := newWorkspace(t, s, "a"), newWorkspace(t, s, "b")
	secretA, _, err := s.APIKeys.Create(a.ID, "a", true)
	if err != nil {
		t.Fatal(err)
	}
	secretB, _, err := s.APIKeys.Create(b.ID, "b", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.APIKeys.Lookup(secretA); err != nil { // cached now
		t.Fatal(err)
	}
	for _, ws := range []*Workspace{a, b} {
		if _, err := s.Configs.Put(ws.ID, "c1", &Config{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Configs.Get(ws.ID, "c1"); err != nil { // cached now
			t.Fatal(err)
		}
		batch := s.db.NewBatch()
		for _, table := range workspaceTables {
			if table != tableAPIKeyID && table != tableBatchOpen {
				batch.Set(key(table, ws.ID, "x1"), []byte("{}"), nil)
			}
		}
		if err := s.commit(batch); err != nil {
			t.Fatal(err)
		}
	}

	held, err := s.Workspaces.Delete(a.ID, false)
	if !errors.Is(err, ErrConflict) || len(held) != len(workspaceResources) {
		t.Fatalf("unforced delete: %v %v", held, err)
	}
	if held[0] != (Holding{Kind: "api_keys", Count: 1}) || held[2] != (Holding{Kind: "configs", Count: 2}) {
		t.Fatalf("holdings: %v", held)
	}

	open := s.db.NewBatch()
	open.Set(key(tableBatchOpen, a.ID, "x1"), nil, nil)
	if err := s.commit(open); err != nil {
		t.Fatal(err)
	}
	if held, err := s.Workspaces.Delete(a.ID, true); !errors.Is(err, ErrBusy) || held[0].Count != 1 {
		t.Fatalf("forced delete with a running batch: %v %v", held, err)
	}
	done := s.db.NewBatch()
	done.Delete(key(tableBatchOpen, a.ID, "x1"), nil)
	if err := s.commit(done); err != nil {
		t.Fatal(err)
	}

	if _, err := s.Workspaces.Delete(a.ID, true); err != nil {
		t.Fatalf("forced delete: %v", err)
	}
	for _, kv := range rawAll(t, s) {
		if bytes.Contains(kv.k, []byte(a.ID)) || bytes.Contains(kv.v, []byte(a.ID)) {
			t.Errorf("left behind: %s = %s", kv.k, kv.v)
		}
	}
	if _, err := s.APIKeys.Lookup(secretA); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted workspace's key: %v", err)
	}
	if _, err := s.Configs.Get(a.ID, "c1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted workspace's cached config: %v", err)
	}
	if _, err := s.Workspaces.Resolve("a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("slug: %v", err)
	}
	if _, err := s.APIKeys.Lookup(secretB); err != nil {
		t.Fatal(err)
	}
	if held, err := s.Workspaces.Holdings(b.ID); err != nil || len(held) != len(workspaceResources) {
		t.Fatalf("the other workspace lost records: %v %v", held, err)
	}
	if _, err := s.Workspaces.Delete(a.ID, true); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

// The first-start key is an admin and an organisation admin.
func TestInitializeOrganisationAdmin(t *testing.T) {
	s := openTest(t, nil, nil)
	secret, err := s.Initialize()
	if err != nil || secret == "" {
		t.Fatalf("Initialize: %q %v", secret, err)
	}
	dropAPIKeyCache(s)
	k, err := s.APIKeys.Lookup(secret)
	if err != nil || !k.Admin || !k.OrganisationAdmin {
		t.Fatalf("first-start key: %+v %v", k, err)
	}
}
