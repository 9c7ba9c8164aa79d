package storage

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/uuid"
)

func TestOpenOptions(t *testing.T) {
	tests := []struct {
		name    string
		key     []byte
		wantErr bool
	}{
		{name: "32-byte key", key: testMasterKey(1)},
		{name: "nil key", key: nil, wantErr: true},
		{name: "short key", key: make([]byte, 31), wantErr: true},
		{name: "long key", key: make([]byte, 33), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open("db", Options{MasterKey: tt.key, InMemory: true, Logger: quietLogger()})
			if tt.wantErr {
				if err == nil {
					s.Close()
					t.Fatal("Open succeeded, want an error")
				}
				if errors.Is(err, ErrWrongMasterKey) {
					t.Fatalf("a malformed key is not a wrong key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close()
			for name, st := range map[string]any{"Workspaces": s.Workspaces, "APIKeys": s.APIKeys, "Providers": s.Providers,
				"Configs": s.Configs, "Prompts": s.Prompts, "Guardrails": s.Guardrails, "Policies": s.Policies, "Plugins": s.Plugins} {
				if st == nil {
					t.Errorf("%s is nil", name)
				}
			}
			if _, err := s.get(keyKeyCheck); err != nil {
				t.Errorf("a new store has no key check: %v", err)
			}
		})
	}
}

func TestCloseNilAndTwice(t *testing.T) {
	var nilStore *Store
	if err := nilStore.Close(); err != nil {
		t.Fatalf("nil Close: %v", err)
	}
	s, err := Open("db", Options{MasterKey: testMasterKey(1), InMemory: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestOpenLockedFolder(t *testing.T) {
	fs := vfs.NewMem()
	requirePebble(t, openTest(t, fs, nil))
	s2, err := Open("db", Options{MasterKey: testMasterKey(1), Logger: quietLogger(), fs: fs})
	if err == nil {
		s2.Close()
		t.Fatal("a second Open of a folder in use succeeded")
	}
	if !strings.Contains(err.Error(), "in use by another gateway process") {
		t.Fatalf("error does not say the folder is in use: %v", err)
	}
}

func TestWorkspaces(t *testing.T) {
	clk := newFakeClock()
	s := openTest(t, nil, clk)
	t0 := clk.Now()

	a := &Workspace{ID: NewUUID(), Slug: "alpha", OrganisationID: NewUUID(), Name: "Alpha"}
	changed, err := s.Workspaces.Put(a)
	if err != nil || !changed {
		t.Fatalf("Put(alpha) = %v, %v; want true, nil", changed, err)
	}
	b := &Workspace{ID: NewUUID(), Slug: "beta", OrganisationID: a.OrganisationID}
	if _, err := s.Workspaces.Put(b); err != nil {
		t.Fatal(err)
	}

	t.Run("get", func(t *testing.T) {
		got, err := s.Workspaces.Get(a.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := Workspace{ID: a.ID, Slug: "alpha", OrganisationID: a.OrganisationID, Name: "Alpha", Stamps: Stamps{t0, t0}}
		if *got != want {
			t.Fatalf("Get = %+v, want %+v", *got, want)
		}
	})

	t.Run("resolve", func(t *testing.T) {
		tests := []struct {
			name   string
			ref    string
			wantID string
			err    error
		}{
			{name: "by id", ref: a.ID, wantID: a.ID},
			{name: "by slug", ref: "alpha", wantID: a.ID},
			{name: "other by slug", ref: "beta", wantID: b.ID},
			{name: "unknown slug", ref: "gamma", err: ErrNotFound},
			{name: "unknown uuid", ref: NewUUID(), err: ErrNotFound},
			{name: "empty", ref: "", err: ErrNotFound},
			{name: "slash", ref: "a/b", err: ErrNotFound},
			{name: "key-like", ref: "wsslug/alpha", err: ErrNotFound},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := s.Workspaces.Resolve(tt.ref)
				if tt.err != nil {
					if !errors.Is(err, tt.err) {
						t.Fatalf("Resolve(%q) = %v, %v; want %v", tt.ref, got, err, tt.err)
					}
					return
				}
				if err != nil || got.ID != tt.wantID {
					t.Fatalf("Resolve(%q) = %v, %v; want ID %s", tt.ref, got, err, tt.wantID)
				}
			})
		}
	})

	t.Run("get invalid ids", func(t *testing.T) {
		for _, id := range []string{"", "a/b", "../x", "alpha"} {
			if _, err := s.Workspaces.Get(id); !errors.Is(err, ErrNotFound) {
				t.Errorf("Get(%q) err = %v, want ErrNotFound", id, err)
			}
		}
	})

	t.Run("unchanged put", func(t *testing.T) {
		clk.Advance(time.Minute)
		again := &Workspace{ID: a.ID, Slug: "alpha", OrganisationID: a.OrganisationID, Name: "Alpha"}
		changed, err := s.Workspaces.Put(again)
		if err != nil || changed {
			t.Fatalf("Put(same) = %v, %v; want false, nil", changed, err)
		}
		got, _ := s.Workspaces.Get(a.ID)
		if !got.CreatedAt.Equal(t0) || !got.UpdatedAt.Equal(t0) {
			t.Fatalf("stamps moved on an unchanged put: %+v", got.Stamps)
		}
	})

	t.Run("slug conflict", func(t *testing.T) {
		c := &Workspace{ID: NewUUID(), Slug: "alpha", OrganisationID: NewUUID()}
		changed, err := s.Workspaces.Put(c)
		if !errors.Is(err, ErrConflict) || changed {
			t.Fatalf("Put(taken slug) = %v, %v; want ErrConflict", changed, err)
		}
		if _, err := s.Workspaces.Get(c.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the conflicting workspace was stored: %v", err)
		}
		if got, _ := s.Workspaces.Resolve("alpha"); got == nil || got.ID != a.ID {
			t.Fatalf("slug alpha no longer resolves to its owner: %+v", got)
		}
		// Renaming b to a's slug conflicts too, and leaves b as it was.
		b2 := *b
		b2.Slug = "alpha"
		if _, err := s.Workspaces.Put(&b2); !errors.Is(err, ErrConflict) {
			t.Fatalf("rename onto a taken slug: %v, want ErrConflict", err)
		}
		if got, err := s.Workspaces.Resolve("beta"); err != nil || got.ID != b.ID {
			t.Fatalf("beta after a failed rename = %v, %v", got, err)
		}
	})

	t.Run("rename frees old slug", func(t *testing.T) {
		t1 := clk.Advance(time.Minute)
		renamed := &Workspace{ID: a.ID, Slug: "alpha2", OrganisationID: a.OrganisationID, Name: "Alpha"}
		changed, err := s.Workspaces.Put(renamed)
		if err != nil || !changed {
			t.Fatalf("rename = %v, %v", changed, err)
		}
		if _, err := s.Workspaces.Resolve("alpha"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("old slug still resolves: %v", err)
		}
		got, err := s.Workspaces.Resolve("alpha2")
		if err != nil || got.ID != a.ID {
			t.Fatalf("Resolve(alpha2) = %v, %v", got, err)
		}
		if !got.CreatedAt.Equal(t0) || !got.UpdatedAt.Equal(t1) {
			t.Fatalf("stamps after rename = %+v, want created %v updated %v", got.Stamps, t0, t1)
		}
		if n := countPrefix(t, s, "wsslug/"); n != 2 {
			t.Fatalf("slug index holds %d entries, want 2", n)
		}
		// Another workspace can now take the old slug.
		c := &Workspace{ID: NewUUID(), Slug: "alpha", OrganisationID: NewUUID()}
		if _, err := s.Workspaces.Put(c); err != nil {
			t.Fatalf("taking a freed slug: %v", err)
		}
		if got, err := s.Workspaces.Resolve("alpha"); err != nil || got.ID != c.ID {
			t.Fatalf("Resolve(alpha) = %v, %v; want %s", got, err, c.ID)
		}
	})

	t.Run("list ordered by id", func(t *testing.T) {
		list, err := s.Workspaces.List()
		if err != nil {
			t.Fatal(err)
		}
		got := ids(list, func(w *Workspace) string { return w.ID })
		if len(got) != 3 || !slices.IsSorted(got) {
			t.Fatalf("List IDs = %v, want 3 sorted", got)
		}
		for _, w := range list {
			if w.Slug == "" || w.OrganisationID == "" {
				t.Fatalf("List returned a partial record: %+v", w)
			}
		}
	})

	t.Run("invalid put", func(t *testing.T) {
		tests := []struct {
			name string
			ws   Workspace
		}{
			{name: "id not uuid", ws: Workspace{ID: "default", Slug: "x1", OrganisationID: NewUUID()}},
			{name: "empty id", ws: Workspace{ID: "", Slug: "x2", OrganisationID: NewUUID()}},
			{name: "empty slug", ws: Workspace{ID: NewUUID(), Slug: "", OrganisationID: NewUUID()}},
			{name: "slash slug", ws: Workspace{ID: NewUUID(), Slug: "a/b", OrganisationID: NewUUID()}},
			{name: "space slug", ws: Workspace{ID: NewUUID(), Slug: "a b", OrganisationID: NewUUID()}},
			{name: "org not uuid", ws: Workspace{ID: NewUUID(), Slug: "x3", OrganisationID: "org"}},
		}
		before := len(rawAll(t, s))
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ws := tt.ws
				changed, err := s.Workspaces.Put(&ws)
				if err == nil || changed {
					t.Fatalf("Put(%+v) = %v, %v; want an error", tt.ws, changed, err)
				}
				if errors.Is(err, ErrConflict) {
					t.Fatalf("invalid input reported as conflict: %v", err)
				}
			})
		}
		if after := len(rawAll(t, s)); after != before {
			t.Fatalf("invalid puts wrote %d records", after-before)
		}
	})
}

func TestAPIKeys(t *testing.T) {
	clk := newFakeClock()
	s := openTest(t, nil, clk)
	ws1 := newWorkspace(t, s, "one")
	ws2 := newWorkspace(t, s, "two")

	secret, k, err := s.APIKeys.Create(ws1.ID, "ci", false)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("create", func(t *testing.T) {
		if !strings.HasPrefix(secret, APIKeyPrefix) || !strings.HasPrefix(secret, "gw-") {
			t.Fatalf("secret %q does not start with gw-", secret)
		}
		if len(secret) != len("gw-")+43 {
			t.Fatalf("secret %q has length %d, want %d", secret, len(secret), len("gw-")+43)
		}
		if _, err := uuid.Parse(k.ID); err != nil {
			t.Fatalf("key ID %q is not a UUID", k.ID)
		}
		if k.WorkspaceID != ws1.ID || k.Name != "ci" || k.Admin || k.Hint != secret[len(secret)-4:] {
			t.Fatalf("created key = %+v", k)
		}
		if !k.CreatedAt.Equal(clk.Now()) || !k.UpdatedAt.Equal(clk.Now()) {
			t.Fatalf("created key stamps = %+v", k.Stamps)
		}
		other, _, err := s.APIKeys.Create(ws1.ID, "ci", false)
		if err != nil || other == secret {
			t.Fatalf("second Create = %q, %v; want a different secret", other, err)
		}
		if _, _, err := s.APIKeys.Create("not-a-uuid", "x", false); err == nil {
			t.Fatal("Create in a non-UUID workspace succeeded")
		}
	})

	t.Run("lookup", func(t *testing.T) {
		tests := []struct {
			name   string
			secret string
			cold   bool // drop the cache first, so that Lookup reads pebble
			wantID string
		}{
			{name: "cached", secret: secret, wantID: k.ID},
			{name: "from pebble", secret: secret, cold: true, wantID: k.ID},
			{name: "wrong secret", secret: secret + "x"},
			{name: "prefix of secret", secret: secret[:len(secret)-1]},
			{name: "another random secret", secret: NewAPIKeySecret()},
			{name: "empty", secret: ""},
			{name: "hash hex is not a secret", secret: s.keys.hashAPIKey(secret).hex()},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if tt.cold {
					dropAPIKeyCache(s)
				}
				got, err := s.APIKeys.Lookup(tt.secret)
				if tt.wantID == "" {
					if !errors.Is(err, ErrNotFound) {
						t.Fatalf("Lookup = %+v, %v; want ErrNotFound", got, err)
					}
					return
				}
				if err != nil || got.ID != tt.wantID || got.WorkspaceID != ws1.ID || got.Name != "ci" {
					t.Fatalf("Lookup = %+v, %v; want ID %s", got, err, tt.wantID)
				}
			})
		}
	})

	t.Run("put operator secret length", func(t *testing.T) {
		tests := []struct {
			secret  string
			wantErr bool
		}{
			{"", true},
			{"a", true},
			{"1234567", true},
			{"12345678", false},
			{"operator-secret-long-enough", false},
		}
		for _, tt := range tests {
			t.Run(tt.secret, func(t *testing.T) {
				got, changed, err := s.APIKeys.Put(tt.secret, &APIKey{WorkspaceID: ws1.ID, Name: "op"})
				if tt.wantErr {
					if err == nil {
						t.Fatalf("Put(%q) = %+v, %v; want an error", tt.secret, got, changed)
					}
					if _, err := s.APIKeys.Lookup(tt.secret); !errors.Is(err, ErrNotFound) {
						t.Fatalf("rejected secret authenticates: %v", err)
					}
					return
				}
				if err != nil || !changed {
					t.Fatalf("Put(%q) = %v, %v", tt.secret, changed, err)
				}
				if got.Hint != tt.secret[len(tt.secret)-4:] {
					t.Fatalf("hint %q", got.Hint)
				}
			})
		}
	})

	t.Run("put idempotent, update, move", func(t *testing.T) {
		const op = "operator-key-0001"
		t0 := clk.Advance(time.Minute)
		k1, changed, err := s.APIKeys.Put(op, &APIKey{WorkspaceID: ws1.ID, Name: "bootstrap", Admin: true})
		if err != nil || !changed {
			t.Fatalf("first Put = %v, %v", changed, err)
		}
		clk.Advance(time.Minute)
		k2, changed, err := s.APIKeys.Put(op, &APIKey{WorkspaceID: ws1.ID, Name: "bootstrap", Admin: true})
		if err != nil || changed {
			t.Fatalf("second Put = %v, %v; want changed=false", changed, err)
		}
		if k2.ID != k1.ID || !k2.CreatedAt.Equal(t0) || !k2.UpdatedAt.Equal(t0) {
			t.Fatalf("second Put returned %+v, first %+v", k2, k1)
		}
		// The caller's ID and hint are ignored: the store sets them.
		k3, changed, err := s.APIKeys.Put(op, &APIKey{ID: NewUUID(), Hint: "nope", WorkspaceID: ws1.ID, Name: "bootstrap", Admin: true})
		if err != nil || changed || k3.ID != k1.ID || k3.Hint != "0001" {
			t.Fatalf("Put with a caller ID = %+v, %v, %v", k3, changed, err)
		}

		// Revoking admin is a change, seen by Lookup at once.
		t2 := clk.Advance(time.Minute)
		k4, changed, err := s.APIKeys.Put(op, &APIKey{WorkspaceID: ws1.ID, Name: "bootstrap", Admin: false})
		if err != nil || !changed || k4.ID != k1.ID || !k4.CreatedAt.Equal(t0) || !k4.UpdatedAt.Equal(t2) {
			t.Fatalf("Put(admin=false) = %+v, %v, %v", k4, changed, err)
		}
		if got, err := s.APIKeys.Lookup(op); err != nil || got.Admin {
			t.Fatalf("Lookup after revoking admin = %+v, %v", got, err)
		}

		// Moving to another workspace.
		k5, changed, err := s.APIKeys.Put(op, &APIKey{WorkspaceID: ws2.ID, Name: "bootstrap"})
		if err != nil || !changed || k5.ID != k1.ID || k5.WorkspaceID != ws2.ID {
			t.Fatalf("move = %+v, %v, %v", k5, changed, err)
		}
		l1, _ := s.APIKeys.List(ws1.ID)
		if slices.Contains(ids(l1, func(k *APIKey) string { return k.ID }), k1.ID) {
			t.Fatalf("old workspace still lists the moved key")
		}
		l2, _ := s.APIKeys.List(ws2.ID)
		if !slices.Contains(ids(l2, func(k *APIKey) string { return k.ID }), k1.ID) {
			t.Fatalf("new workspace does not list the moved key")
		}
		if _, err := s.APIKeys.Get(ws1.ID, k1.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get in old workspace = %v, want ErrNotFound", err)
		}
		if got, err := s.APIKeys.Get(ws2.ID, k1.ID); err != nil || got.WorkspaceID != ws2.ID {
			t.Fatalf("Get in new workspace = %+v, %v", got, err)
		}
		for _, cold := range []bool{false, true} {
			if cold {
				dropAPIKeyCache(s)
			}
			if got, err := s.APIKeys.Lookup(op); err != nil || got.WorkspaceID != ws2.ID {
				t.Fatalf("Lookup (cold=%v) after move = %+v, %v", cold, got, err)
			}
		}
		if err := s.APIKeys.Delete(ws1.ID, k1.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Delete from the old workspace = %v, want ErrNotFound", err)
		}
		if _, err := s.APIKeys.Lookup(op); err != nil {
			t.Fatalf("a failed Delete broke the key: %v", err)
		}
	})

	t.Run("get list delete", func(t *testing.T) {
		ws := newWorkspace(t, s, "keys")
		type made struct {
			secret string
			k      *APIKey
		}
		var keys []made
		for i := range 5 {
			sec, k, err := s.APIKeys.Create(ws.ID, "k", i == 0)
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, made{sec, k})
		}
		list, err := s.APIKeys.List(ws.ID)
		if err != nil {
			t.Fatal(err)
		}
		got := ids(list, func(k *APIKey) string { return k.ID })
		var want []string
		for _, m := range keys {
			want = append(want, m.k.ID)
		}
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Fatalf("List = %v, want %v (sorted by ID)", got, want)
		}
		for _, m := range keys {
			g, err := s.APIKeys.Get(ws.ID, m.k.ID)
			if err != nil || *g != *m.k {
				t.Fatalf("Get(%s) = %+v, %v; want %+v", m.k.ID, g, err, m.k)
			}
			if _, err := s.APIKeys.Get(ws1.ID, m.k.ID); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get in another workspace = %v, want ErrNotFound", err)
			}
		}

		victim := keys[2]
		if err := s.APIKeys.Delete(ws.ID, victim.k.ID); err != nil {
			t.Fatal(err)
		}
		for _, cold := range []bool{false, true} {
			if cold {
				dropAPIKeyCache(s)
			}
			if _, err := s.APIKeys.Lookup(victim.secret); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Lookup of a deleted key (cold=%v) = %v, want ErrNotFound", cold, err)
			}
		}
		if _, err := s.APIKeys.Get(ws.ID, victim.k.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get of a deleted key = %v", err)
		}
		if err := s.APIKeys.Delete(ws.ID, victim.k.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second Delete = %v, want ErrNotFound", err)
		}
		list, _ = s.APIKeys.List(ws.ID)
		if len(list) != 4 || slices.Contains(ids(list, func(k *APIKey) string { return k.ID }), victim.k.ID) {
			t.Fatalf("List after Delete = %v", ids(list, func(k *APIKey) string { return k.ID }))
		}
		for i, m := range keys {
			if i == 2 {
				continue
			}
			if got, err := s.APIKeys.Lookup(m.secret); err != nil || got.ID != m.k.ID {
				t.Fatalf("Lookup of a surviving key = %+v, %v", got, err)
			}
		}
		// Re-putting a deleted secret makes a new key.
		k2, changed, err := s.APIKeys.Put(victim.secret, &APIKey{WorkspaceID: ws.ID})
		if err != nil || !changed || k2.ID == victim.k.ID {
			t.Fatalf("re-put of a deleted secret = %+v, %v, %v", k2, changed, err)
		}
	})

	t.Run("invalid ids", func(t *testing.T) {
		tests := []struct{ ws, id string }{
			{"", k.ID},
			{ws1.ID, ""},
			{"a/b", k.ID},
			{ws1.ID, "a/b"},
			{ws1.ID + "/" + k.ID, "x"},
		}
		for _, tt := range tests {
			t.Run(tt.ws+"|"+tt.id, func(t *testing.T) {
				if _, err := s.APIKeys.Get(tt.ws, tt.id); !errors.Is(err, ErrNotFound) {
					t.Errorf("Get = %v, want ErrNotFound", err)
				}
				if err := s.APIKeys.Delete(tt.ws, tt.id); !errors.Is(err, ErrNotFound) {
					t.Errorf("Delete = %v, want ErrNotFound", err)
				}
			})
		}
		if l, err := s.APIKeys.List("a/b"); err != nil || len(l) != 0 {
			t.Errorf("List(a/b) = %v, %v", l, err)
		}
		if _, _, err := s.APIKeys.Put("operator-secret-x", &APIKey{WorkspaceID: "a/b"}); err == nil {
			t.Errorf("Put with workspace a/b succeeded")
		}
	})
}

func TestProviders(t *testing.T) {
	clk := newFakeClock()
	s := openTest(t, nil, clk)
	ws := newWorkspace(t, s, "prov")
	t0 := clk.Now()

	const saJSON = `{"type": "service_account", "project_id": "p1",
		"private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----\n", "nested": {"a": [1, 2, 3]}}`
	fields := func(apiKey string) map[string]json.RawMessage {
		return map[string]json.RawMessage{
			"api_key":                     json.RawMessage(`"` + apiKey + `"`),
			"custom_host":                 json.RawMessage(`"https://example.test/v1"`),
			"cloudz_region":               json.RawMessage(` "eu-1" `),
			"cloudy_service_account_json": json.RawMessage(saJSON),
			"retries":                     json.RawMessage(`3`),
		}
	}
	pr := &Provider{WorkspaceID: ws.ID, Slug: "openai-main", Provider: "openai", Name: "Main", Fields: fields("sk-first")}
	changed, err := s.Providers.Put(pr)
	if err != nil || !changed {
		t.Fatalf("Put = %v, %v", changed, err)
	}

	t.Run("get round trip", func(t *testing.T) {
		got, err := s.Providers.Get(ws.ID, "openai-main")
		if err != nil {
			t.Fatal(err)
		}
		if got.WorkspaceID != ws.ID || got.Slug != "openai-main" || got.Provider != "openai" || got.Name != "Main" {
			t.Fatalf("Get = %+v", got)
		}
		if !got.CreatedAt.Equal(t0) || !got.UpdatedAt.Equal(t0) {
			t.Fatalf("stamps = %+v, want %v", got.Stamps, t0)
		}
		want := fields("sk-first")
		if len(got.Fields) != len(want) {
			t.Fatalf("Fields = %v, want %d fields", got.Fields, len(want))
		}
		for name, v := range want {
			if string(got.Fields[name]) != compactJSON(t, string(v)) {
				t.Errorf("field %s = %s, want %s", name, got.Fields[name], compactJSON(t, string(v)))
			}
		}
		var sa map[string]any
		if err := json.Unmarshal(got.Fields["cloudy_service_account_json"], &sa); err != nil {
			t.Fatalf("cloudy_service_account_json is not an object: %v", err)
		}
		if sa["project_id"] != "p1" || !strings.Contains(sa["private_key"].(string), "MIIEvQ") {
			t.Fatalf("cloudy_service_account_json = %v", sa)
		}
		// The caller's map is not the store's.
		got.Fields["api_key"] = json.RawMessage(`"changed"`)
		again, _ := s.Providers.Get(ws.ID, "openai-main")
		if string(again.Fields["api_key"]) != `"sk-first"` {
			t.Fatalf("modifying a returned record changed the store: %s", again.Fields["api_key"])
		}
	})

	t.Run("secret fields sealed, others clear", func(t *testing.T) {
		raw, err := s.get(key(tableProvider, ws.ID, "openai-main"))
		if err != nil {
			t.Fatal(err)
		}
		var rec providerRecord
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatal(err)
		}
		for name := range rec.Fields {
			if SecretFields[name] {
				t.Errorf("secret field %s stored in clear", name)
			}
		}
		for _, name := range []string{"cloudz_region", "retries"} {
			if _, ok := rec.Fields[name]; !ok {
				t.Errorf("clear field %s missing from the record", name)
			}
		}
		if len(rec.Sealed) == 0 {
			t.Fatal("no sealed secrets")
		}
	})

	t.Run("put", func(t *testing.T) {
		tests := []struct {
			name        string
			pr          Provider
			wantChanged bool
		}{
			{name: "same content", pr: Provider{WorkspaceID: ws.ID, Slug: "openai-main", Provider: "openai", Name: "Main", Fields: fields("sk-first")}},
			{name: "same content reformatted", pr: Provider{WorkspaceID: ws.ID, Slug: "openai-main", Provider: "openai", Name: "Main", Fields: func() map[string]json.RawMessage {
				f := fields("sk-first")
				f["cloudy_service_account_json"] = json.RawMessage(compactJSON(t, saJSON))
				f["retries"] = json.RawMessage(" 3\n")
				return f
			}()}},
			{name: "api key changed", pr: Provider{WorkspaceID: ws.ID, Slug: "openai-main", Provider: "openai", Name: "Main", Fields: fields("sk-second")}, wantChanged: true},
			{name: "same again", pr: Provider{WorkspaceID: ws.ID, Slug: "openai-main", Provider: "openai", Name: "Main", Fields: fields("sk-second")}},
			{name: "name changed", pr: Provider{WorkspaceID: ws.ID, Slug: "openai-main", Provider: "openai", Name: "Renamed", Fields: fields("sk-second")}, wantChanged: true},
			{name: "provider changed", pr: Provider{WorkspaceID: ws.ID, Slug: "openai-main", Provider: "azure", Name: "Renamed", Fields: fields("sk-second")}, wantChanged: true},
			{name: "clear field removed", pr: Provider{WorkspaceID: ws.ID, Slug: "openai-main", Provider: "azure", Name: "Renamed", Fields: func() map[string]json.RawMessage {
				f := fields("sk-second")
				delete(f, "custom_host")
				return f
			}()}, wantChanged: true},
			{name: "secret field removed", pr: Provider{WorkspaceID: ws.ID, Slug: "openai-main", Provider: "azure", Name: "Renamed", Fields: func() map[string]json.RawMessage {
				f := fields("sk-second")
				delete(f, "custom_host")
				delete(f, "cloudy_service_account_json")
				return f
			}()}, wantChanged: true},
			{name: "all fields removed", pr: Provider{WorkspaceID: ws.ID, Slug: "openai-main", Provider: "azure", Name: "Renamed"}, wantChanged: true},
			{name: "nil and empty fields are equal", pr: Provider{WorkspaceID: ws.ID, Slug: "openai-main", Provider: "azure", Name: "Renamed", Fields: map[string]json.RawMessage{}}},
			{name: "back to the start", pr: Provider{WorkspaceID: ws.ID, Slug: "openai-main", Provider: "openai", Name: "Main", Fields: fields("sk-first")}, wantChanged: true},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				before, err := s.Providers.Get(ws.ID, tt.pr.Slug)
				if err != nil {
					t.Fatal(err)
				}
				now := clk.Advance(time.Second)
				pr := tt.pr
				changed, err := s.Providers.Put(&pr)
				if err != nil || changed != tt.wantChanged {
					t.Fatalf("Put = %v, %v; want %v", changed, err, tt.wantChanged)
				}
				got, err := s.Providers.Get(ws.ID, tt.pr.Slug)
				if err != nil {
					t.Fatal(err)
				}
				if !got.CreatedAt.Equal(t0) {
					t.Fatalf("CreatedAt moved to %v, want %v", got.CreatedAt, t0)
				}
				wantUpdated := before.UpdatedAt
				if tt.wantChanged {
					wantUpdated = now
				}
				if !got.UpdatedAt.Equal(wantUpdated) {
					t.Fatalf("UpdatedAt = %v, want %v", got.UpdatedAt, wantUpdated)
				}
				if got.Provider != tt.pr.Provider || got.Name != tt.pr.Name || len(got.Fields) != len(tt.pr.Fields) {
					t.Fatalf("Get = %+v, want %+v", got, tt.pr)
				}
				for name, v := range tt.pr.Fields {
					if string(got.Fields[name]) != compactJSON(t, string(v)) {
						t.Fatalf("field %s = %s, want %s", name, got.Fields[name], v)
					}
				}
			})
		}
	})

	t.Run("list delete", func(t *testing.T) {
		for _, slug := range []string{"zeta", "beta", "alpha.1"} {
			if _, err := s.Providers.Put(&Provider{WorkspaceID: ws.ID, Slug: slug, Provider: "openai",
				Fields: map[string]json.RawMessage{"api_key": json.RawMessage(`"sk-` + slug + `"`)}}); err != nil {
				t.Fatal(err)
			}
		}
		other := newWorkspace(t, s, "prov-other")
		if _, err := s.Providers.Put(&Provider{WorkspaceID: other.ID, Slug: "beta", Provider: "anthropic"}); err != nil {
			t.Fatal(err)
		}
		list, err := s.Providers.List(ws.ID)
		if err != nil {
			t.Fatal(err)
		}
		got := ids(list, func(p *Provider) string { return p.Slug })
		if want := []string{"alpha.1", "beta", "openai-main", "zeta"}; !slices.Equal(got, want) {
			t.Fatalf("List slugs = %v, want %v", got, want)
		}
		for _, p := range list {
			if p.WorkspaceID != ws.ID {
				t.Fatalf("List returned another workspace's provider %+v", p)
			}
			if p.Slug != "openai-main" && string(p.Fields["api_key"]) != `"sk-`+p.Slug+`"` {
				t.Fatalf("List did not open secrets of %s: %v", p.Slug, p.Fields)
			}
		}
		if ob, err := s.Providers.Get(other.ID, "beta"); err != nil || ob.Provider != "anthropic" {
			t.Fatalf("other workspace's beta = %+v, %v", ob, err)
		}

		if err := s.Providers.Delete(ws.ID, "beta"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Providers.Get(ws.ID, "beta"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get after Delete = %v", err)
		}
		if err := s.Providers.Delete(ws.ID, "beta"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second Delete = %v", err)
		}
		if _, err := s.Providers.Get(other.ID, "beta"); err != nil {
			t.Fatalf("Delete removed another workspace's provider: %v", err)
		}
		list, _ = s.Providers.List(ws.ID)
		if got := ids(list, func(p *Provider) string { return p.Slug }); !slices.Equal(got, []string{"alpha.1", "openai-main", "zeta"}) {
			t.Fatalf("List after Delete = %v", got)
		}
		if l, err := s.Providers.List(NewUUID()); err != nil || len(l) != 0 {
			t.Fatalf("List of an empty workspace = %v, %v", l, err)
		}
	})

	t.Run("invalid", func(t *testing.T) {
		tests := []struct {
			name string
			pr   Provider
		}{
			{name: "slash slug", pr: Provider{WorkspaceID: ws.ID, Slug: "a/b"}},
			{name: "empty slug", pr: Provider{WorkspaceID: ws.ID, Slug: ""}},
			{name: "empty workspace", pr: Provider{WorkspaceID: "", Slug: "x"}},
			{name: "slash workspace", pr: Provider{WorkspaceID: ws.ID + "/x", Slug: "x"}},
			{name: "invalid json field", pr: Provider{WorkspaceID: ws.ID, Slug: "x", Fields: map[string]json.RawMessage{"api_key": json.RawMessage(`{bad`)}}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				pr := tt.pr
				if changed, err := s.Providers.Put(&pr); err == nil || changed {
					t.Fatalf("Put = %v, %v; want an error", changed, err)
				}
				if _, err := s.Providers.Get(tt.pr.WorkspaceID, tt.pr.Slug); !errors.Is(err, ErrNotFound) {
					t.Fatalf("Get = %v, want ErrNotFound", err)
				}
				if err := s.Providers.Delete(tt.pr.WorkspaceID, tt.pr.Slug); !errors.Is(err, ErrNotFound) {
					t.Fatalf("Delete = %v, want ErrNotFound", err)
				}
			})
		}
		if l, err := s.Providers.List("a/b"); err != nil || len(l) != 0 {
			t.Fatalf("List(a/b) = %v, %v", l, err)
		}
	})
}

// docStoreCase exercises one DocStore with records made by mk; variant changes the content.
func docStoreCase[T any, P interface {
	*T
	stamped
}](t *testing.T, s *Store, clk *fakeClock, d *DocStore[T, P], mk func(ws, id string, variant int) P) {
	ws := NewUUID()
	other := NewUUID()
	t0 := clk.Advance(time.Hour)

	for _, id := range []string{"b", "c-2", "a.1"} {
		v := mk(ws, id, 0)
		changed, err := d.Put(ws, id, v)
		if err != nil || !changed {
			t.Fatalf("Put(%s) = %v, %v", id, changed, err)
		}
		if st := v.stamps(); !st.CreatedAt.Equal(t0) || !st.UpdatedAt.Equal(t0) {
			t.Fatalf("Put did not stamp the record: %+v", *st)
		}
	}
	get := func(id string) P {
		t.Helper()
		v, err := d.Get(ws, id)
		if err != nil {
			t.Fatalf("Get(%s): %v", id, err)
		}
		return P(v)
	}
	content := func(v P) string { // JSON without the stamps
		t.Helper()
		c := *v
		*P(&c).stamps() = Stamps{}
		return mustJSON(t, &c)
	}

	if got, want := content(get("b")), content(mk(ws, "b", 0)); got != want {
		t.Fatalf("Get = %s, want %s", got, want)
	}
	list, err := d.List(ws)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range list {
		got = append(got, content(P(v)))
	}
	want := []string{content(mk(ws, "a.1", 0)), content(mk(ws, "b", 0)), content(mk(ws, "c-2", 0))}
	if !slices.Equal(got, want) {
		t.Fatalf("List = %v, want %v (ordered by ID)", got, want)
	}

	steps := []struct {
		name        string
		variant     int
		wantChanged bool
	}{
		{name: "unchanged", variant: 0},
		{name: "unchanged again", variant: 0},
		{name: "changed", variant: 1, wantChanged: true},
		{name: "unchanged after change", variant: 1},
		{name: "changed back", variant: 0, wantChanged: true},
	}
	updated := t0
	for _, st := range steps {
		now := clk.Advance(time.Minute)
		v := mk(ws, "b", st.variant)
		changed, err := d.Put(ws, "b", v)
		if err != nil || changed != st.wantChanged {
			t.Fatalf("%s: Put = %v, %v; want %v", st.name, changed, err, st.wantChanged)
		}
		if st.wantChanged {
			updated = now
		}
		g := get("b")
		if s := g.stamps(); !s.CreatedAt.Equal(t0) || !s.UpdatedAt.Equal(updated) {
			t.Fatalf("%s: stamps = %+v, want created %v updated %v", st.name, *s, t0, updated)
		}
		if s := v.stamps(); !s.CreatedAt.Equal(t0) || !s.UpdatedAt.Equal(updated) {
			t.Fatalf("%s: the caller's record got stamps %+v", st.name, *s)
		}
		if content(g) != content(mk(ws, "b", st.variant)) {
			t.Fatalf("%s: Get = %s", st.name, content(g))
		}
	}

	// Workspaces are apart.
	if _, err := d.Get(other, "b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get in another workspace = %v", err)
	}
	if l, err := d.List(other); err != nil || len(l) != 0 {
		t.Fatalf("List of another workspace = %d, %v", len(l), err)
	}

	// Delete.
	if err := d.Delete(ws, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Get(ws, "b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Delete = %v", err)
	}
	if err := d.Delete(ws, "b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second Delete = %v", err)
	}
	if err := d.Delete(other, "a.1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Delete in another workspace = %v", err)
	}
	list, _ = d.List(ws)
	if len(list) != 2 {
		t.Fatalf("List after Delete has %d records, want 2", len(list))
	}
	// A deleted record comes back as new.
	now := clk.Advance(time.Minute)
	if changed, err := d.Put(ws, "b", mk(ws, "b", 0)); err != nil || !changed {
		t.Fatalf("Put after Delete = %v, %v", changed, err)
	}
	if s := get("b").stamps(); !s.CreatedAt.Equal(now) {
		t.Fatalf("re-created record kept its old CreatedAt: %+v", *s)
	}

	// Invalid IDs.
	invalid := []struct{ ws, id string }{{ws, ""}, {ws, "a/b"}, {"", "b"}, {"a/b", "b"}, {ws, "-x"}, {ws, "é"}}
	for _, in := range invalid {
		if _, err := d.Get(in.ws, in.id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q, %q) = %v, want ErrNotFound", in.ws, in.id, err)
		}
		if changed, err := d.Put(in.ws, in.id, mk(in.ws, in.id, 0)); err == nil || changed {
			t.Errorf("Put(%q, %q) = %v, %v; want an error", in.ws, in.id, changed, err)
		}
		if err := d.Delete(in.ws, in.id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Delete(%q, %q) = %v, want ErrNotFound", in.ws, in.id, err)
		}
	}
	if l, err := d.List("a/b"); err != nil || len(l) != 0 {
		t.Errorf("List(a/b) = %v, %v", l, err)
	}
}

func TestDocStores(t *testing.T) {
	clk := newFakeClock()
	s := openTest(t, nil, clk)
	name := func(s string) *string { return &s }
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{name: "configs", run: func(t *testing.T) {
			docStoreCase(t, s, clk, s.Configs, func(ws, id string, v int) *Config {
				return &Config{ID: id, WorkspaceID: ws, Config: json.RawMessage(`{"retry":{"attempts":` + string(rune('1'+v)) + `},"targets":[{"virtual_key":"openai-main"}]}`)}
			})
		}},
		{name: "prompts", run: func(t *testing.T) {
			docStoreCase(t, s, clk, s.Prompts, func(ws, id string, v int) *Prompt {
				p := &Prompt{ID: id, WorkspaceID: ws, Name: "p " + id, Versions: []PromptVersion{
					{Version: 1, Published: v == 0, Template: json.RawMessage(`{"messages":[{"role":"user","content":"Hi {{name}}"}]}`)},
				}}
				if v == 1 {
					p.Versions = append(p.Versions, PromptVersion{Version: 2, Published: true, Template: json.RawMessage(`{"messages":[]}`)})
				}
				return p
			})
		}},
		{name: "guardrails", run: func(t *testing.T) {
			docStoreCase(t, s, clk, s.Guardrails, func(ws, id string, v int) *Guardrail {
				return &Guardrail{ID: id, WorkspaceID: ws, Guardrail: json.RawMessage(`{"checks":[{"id":"default.regexMatch","parameters":{"rule":"x` + strings.Repeat("y", v) + `"}}],"deny":true}`)}
			})
		}},
		{name: "policies", run: func(t *testing.T) {
			docStoreCase(t, s, clk, s.Policies, func(ws, id string, v int) *RateLimitPolicy {
				return &RateLimitPolicy{ID: id, WorkspaceID: ws, OrganisationID: "org", Type: "requests", Unit: "rpm",
					Value: 10.5 + float64(v), Status: "active", Name: name("limit " + id),
					Conditions: []PolicyMatch{{Key: "api_key", Value: "k"}}, GroupBy: []PolicyGroup{{Key: "metadata.user"}}}
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}

	t.Run("tables are apart", func(t *testing.T) {
		ws := NewUUID()
		if _, err := s.Configs.Put(ws, "same-id", &Config{ID: "same-id", Config: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Guardrails.Get(ws, "same-id"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a config is visible as a guardrail: %v", err)
		}
		if _, err := s.Plugins.Get(ws, "same-id"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a config is visible as a plugin: %v", err)
		}
	})

	t.Run("config whitespace is not a change", func(t *testing.T) {
		ws := NewUUID()
		if _, err := s.Configs.Put(ws, "c", &Config{ID: "c", WorkspaceID: ws, Config: json.RawMessage(`{"a": 1,  "b": [1, 2]}`)}); err != nil {
			t.Fatal(err)
		}
		changed, err := s.Configs.Put(ws, "c", &Config{ID: "c", WorkspaceID: ws, Config: json.RawMessage("{\"a\":1,\n\"b\":[1,2]}")})
		if err != nil || changed {
			t.Fatalf("reformatted Put = %v, %v; want unchanged", changed, err)
		}
		got, _ := s.Configs.Get(ws, "c")
		if string(got.Config) != `{"a":1,"b":[1,2]}` {
			t.Fatalf("stored config = %s", got.Config)
		}
	})
}

func TestPlugins(t *testing.T) {
	clk := newFakeClock()
	s := openTest(t, nil, clk)
	ws := NewUUID()
	t0 := clk.Now()
	wasm1 := append([]byte("\x00asm\x01\x00\x00\x00"), bytes.Repeat([]byte{0xab, 0x00, 0xff}, 5000)...)
	wasm2 := append([]byte("\x00asm\x01\x00\x00\x00"), bytes.Repeat([]byte{0x01}, 100)...)
	sha := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

	steps := []struct {
		name        string
		wasm        []byte
		wantChanged bool
		wantCreated time.Time
	}{
		{name: "first", wasm: wasm1, wantChanged: true},
		{name: "same bytes", wasm: wasm1},
		{name: "same bytes, another slice", wasm: append([]byte(nil), wasm1...)},
		{name: "new bytes", wasm: wasm2, wantChanged: true},
		{name: "back", wasm: wasm1, wantChanged: true},
	}
	updated := t0
	for i, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			now := t0
			if i > 0 {
				now = clk.Advance(time.Minute)
			}
			meta, changed, err := s.Plugins.Put(ws, "guard", st.wasm)
			if err != nil || changed != st.wantChanged {
				t.Fatalf("Put = %v, %v; want %v", changed, err, st.wantChanged)
			}
			if st.wantChanged {
				updated = now
			}
			if meta.SHA256 != sha(st.wasm) || meta.Size != len(st.wasm) || meta.ID != "guard" || meta.WorkspaceID != ws {
				t.Fatalf("meta = %+v", meta)
			}
			if !meta.CreatedAt.Equal(t0) || !meta.UpdatedAt.Equal(updated) {
				t.Fatalf("meta stamps = %+v, want created %v updated %v", meta.Stamps, t0, updated)
			}
			got, err := s.Plugins.Get(ws, "guard")
			if err != nil || *got != *meta {
				t.Fatalf("Get = %+v, %v; want %+v", got, err, meta)
			}
			b, err := s.Plugins.Wasm(ws, "guard")
			if err != nil || !bytes.Equal(b, st.wasm) {
				t.Fatalf("Wasm = %d bytes, %v; want %d bytes", len(b), err, len(st.wasm))
			}
			if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != got.SHA256 {
				t.Fatalf("stored bytes do not match the stored digest")
			}
		})
	}

	t.Run("list ordered, metadata only", func(t *testing.T) {
		for _, id := range []string{"zz", "aa"} {
			if _, _, err := s.Plugins.Put(ws, id, []byte(id)); err != nil {
				t.Fatal(err)
			}
		}
		list, err := s.Plugins.List(ws)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(list, func(p *Plugin) string { return p.ID }); !slices.Equal(got, []string{"aa", "guard", "zz"}) {
			t.Fatalf("List = %v", got)
		}
		if l, _ := s.Plugins.List(NewUUID()); len(l) != 0 {
			t.Fatalf("List of another workspace = %v", l)
		}
	})

	t.Run("delete removes both", func(t *testing.T) {
		if err := s.Plugins.Delete(ws, "guard"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Plugins.Get(ws, "guard"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get after Delete = %v", err)
		}
		if _, err := s.Plugins.Wasm(ws, "guard"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Wasm after Delete = %v", err)
		}
		if _, err := s.get(key(tablePluginWasm, ws, "guard")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("wasm bytes left behind: %v", err)
		}
		if err := s.Plugins.Delete(ws, "guard"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second Delete = %v", err)
		}
		if _, err := s.Plugins.Wasm(ws, "aa"); err != nil {
			t.Fatalf("Delete removed another plugin's bytes: %v", err)
		}
		// Put after Delete writes the bytes again even though they are the same as before.
		if _, changed, err := s.Plugins.Put(ws, "guard", wasm1); err != nil || !changed {
			t.Fatalf("Put after Delete = %v, %v", changed, err)
		}
		if b, err := s.Plugins.Wasm(ws, "guard"); err != nil || !bytes.Equal(b, wasm1) {
			t.Fatalf("Wasm after re-Put = %d bytes, %v", len(b), err)
		}
	})

	t.Run("invalid ids", func(t *testing.T) {
		for _, in := range []struct{ ws, id string }{{ws, ""}, {ws, "a/b"}, {"", "x"}, {"a/b", "x"}, {ws, ".x"}} {
			if _, err := s.Plugins.Get(in.ws, in.id); !errors.Is(err, ErrNotFound) {
				t.Errorf("Get(%q,%q) = %v", in.ws, in.id, err)
			}
			if _, err := s.Plugins.Wasm(in.ws, in.id); !errors.Is(err, ErrNotFound) {
				t.Errorf("Wasm(%q,%q) = %v", in.ws, in.id, err)
			}
			if _, _, err := s.Plugins.Put(in.ws, in.id, []byte("x")); err == nil {
				t.Errorf("Put(%q,%q) succeeded", in.ws, in.id)
			}
			if err := s.Plugins.Delete(in.ws, in.id); !errors.Is(err, ErrNotFound) {
				t.Errorf("Delete(%q,%q) = %v", in.ws, in.id, err)
			}
		}
	})
}

func TestInitialize(t *testing.T) {
	tests := []struct {
		name         string
		preexisting  bool // a workspace with slug "default" exists before Initialize
		alsoOthers   bool // and other workspaces too
		wantWSBefore int
	}{
		{name: "new store"},
		{name: "default workspace exists", preexisting: true, wantWSBefore: 1},
		{name: "default and others exist", preexisting: true, alsoOthers: true, wantWSBefore: 3},
		{name: "only others exist", alsoOthers: true, wantWSBefore: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock()
			s := openTest(t, nil, clk)
			var pre *Workspace
			if tt.preexisting {
				pre = newWorkspace(t, s, DefaultWorkspaceSlug)
			}
			if tt.alsoOthers {
				newWorkspace(t, s, "other-1")
				newWorkspace(t, s, "other-2")
			}
			done, err := s.Initialized()
			if err != nil || done {
				t.Fatalf("Initialized before = %v, %v", done, err)
			}
			secret, err := s.Initialize()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(secret, APIKeyPrefix) {
				t.Fatalf("secret %q", secret)
			}
			done, err = s.Initialized()
			if err != nil || !done {
				t.Fatalf("Initialized after = %v, %v", done, err)
			}
			raw, err := s.get(keyInitialized)
			if err != nil {
				t.Fatal(err)
			}
			if ts, err := time.Parse(time.RFC3339Nano, string(raw)); err != nil || !ts.Equal(clk.Now()) {
				t.Fatalf("meta/initialized = %q (%v)", raw, err)
			}

			wss, _ := s.Workspaces.List()
			wantWS := tt.wantWSBefore
			if !tt.preexisting {
				wantWS++
			}
			if len(wss) != wantWS {
				t.Fatalf("%d workspaces after Initialize, want %d", len(wss), wantWS)
			}
			def, err := s.Workspaces.Resolve(DefaultWorkspaceSlug)
			if err != nil {
				t.Fatal(err)
			}
			if pre != nil && def.ID != pre.ID {
				t.Fatalf("Initialize made a second default workspace %s, existing %s", def.ID, pre.ID)
			}
			if pre == nil {
				if def.Name != "Default" {
					t.Fatalf("default workspace = %+v", def)
				}
				if _, err := uuid.Parse(def.OrganisationID); err != nil {
					t.Fatalf("default organisation %q", def.OrganisationID)
				}
			}
			for _, cold := range []bool{false, true} {
				if cold {
					dropAPIKeyCache(s)
				}
				k, err := s.APIKeys.Lookup(secret)
				if err != nil {
					t.Fatalf("Lookup(cold=%v): %v", cold, err)
				}
				if !k.Admin || k.WorkspaceID != def.ID {
					t.Fatalf("first-start key = %+v, want admin in %s", k, def.ID)
				}
			}
			keys, _ := s.APIKeys.List(def.ID)
			if len(keys) != 1 {
				t.Fatalf("%d keys in default after Initialize", len(keys))
			}

			again, err := s.Initialize()
			if err != nil || again != "" {
				t.Fatalf("second Initialize = %q, %v; want \"\", nil", again, err)
			}
			if n := countPrefix(t, s, "apikey/"); n != 1 {
				t.Fatalf("%d api keys after a second Initialize, want 1", n)
			}
			if wss2, _ := s.Workspaces.List(); len(wss2) != wantWS {
				t.Fatalf("second Initialize changed the workspaces: %d", len(wss2))
			}
		})
	}
}

// TestInitializeAfterBootstrapKeys runs the first start on stores that already hold keys, as after a bootstrap
// file: an admin key anywhere means no new key and no default workspace; keys without the admin right do not.
func TestInitializeAfterBootstrapKeys(t *testing.T) {
	tests := []struct {
		name       string
		admin      bool
		wantSecret bool
	}{
		{name: "an admin key exists", admin: true},
		{name: "only a plain key exists", admin: false, wantSecret: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTest(t, nil, newFakeClock())
			ws := newWorkspace(t, s, "team")
			if _, _, err := s.APIKeys.Put("gw-bootstrap-key", &APIKey{WorkspaceID: ws.ID, Admin: tt.admin}); err != nil {
				t.Fatal(err)
			}
			secret, err := s.Initialize()
			if err != nil {
				t.Fatal(err)
			}
			if done, err := s.Initialized(); err != nil || !done {
				t.Fatalf("Initialized after = %v, %v", done, err)
			}
			_, defErr := s.Workspaces.Resolve(DefaultWorkspaceSlug)
			if !tt.wantSecret {
				if secret != "" {
					t.Fatalf("Initialize made a key %q beside the existing admin key", secret)
				}
				if n := countPrefix(t, s, "apikey/"); n != 1 {
					t.Fatalf("%d api keys, want only the existing one", n)
				}
				if !errors.Is(defErr, ErrNotFound) {
					t.Fatalf("Initialize made workspace default (%v) although an admin key exists", defErr)
				}
				return
			}
			if defErr != nil {
				t.Fatalf("no default workspace: %v", defErr)
			}
			k, err := s.APIKeys.Lookup(secret)
			if err != nil || !k.Admin {
				t.Fatalf("first-start key %+v, %v; want an admin key", k, err)
			}
			if n := countPrefix(t, s, "apikey/"); n != 2 {
				t.Fatalf("%d api keys, want the existing one and the new admin key", n)
			}
		})
	}
}

// populate writes one of everything and returns what to check.
type populated struct {
	ws        *Workspace
	opSecret  string
	opKey     *APIKey
	newSecret string
	newKey    *APIKey
	gone      string // a config that was written then deleted
	initKey   string
	wasm      []byte
}

func populate(t *testing.T, s *Store) populated {
	t.Helper()
	var p populated
	var err error
	p.initKey, err = s.Initialize()
	if err != nil {
		t.Fatal(err)
	}
	p.ws = newWorkspace(t, s, "durable")
	p.opSecret = "operator-durable-key"
	if p.opKey, _, err = s.APIKeys.Put(p.opSecret, &APIKey{WorkspaceID: p.ws.ID, Name: "op", Admin: true}); err != nil {
		t.Fatal(err)
	}
	if p.newSecret, p.newKey, err = s.APIKeys.Create(p.ws.ID, "made", false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Providers.Put(&Provider{WorkspaceID: p.ws.ID, Slug: "openai", Provider: "openai",
		Fields: map[string]json.RawMessage{"api_key": json.RawMessage(`"sk-very-secret-value"`), "custom_host": json.RawMessage(`"https://h"`)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Configs.Put(p.ws.ID, "cfg-a", &Config{ID: "cfg-a", WorkspaceID: p.ws.ID, Config: json.RawMessage(`{"x":1}`)}); err != nil {
		t.Fatal(err)
	}
	p.gone = "cfg-gone"
	if _, err := s.Configs.Put(p.ws.ID, p.gone, &Config{ID: p.gone, WorkspaceID: p.ws.ID, Config: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Configs.Delete(p.ws.ID, p.gone); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompts.Put(p.ws.ID, "pr", &Prompt{ID: "pr", WorkspaceID: p.ws.ID, Versions: []PromptVersion{{Version: 1, Template: json.RawMessage(`"t"`)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Guardrails.Put(p.ws.ID, "gr", &Guardrail{ID: "gr", WorkspaceID: p.ws.ID, Guardrail: json.RawMessage(`{"deny":true}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Policies.Put(p.ws.ID, "pol", &RateLimitPolicy{ID: "pol", WorkspaceID: p.ws.ID, Value: 5}); err != nil {
		t.Fatal(err)
	}
	p.wasm = []byte("\x00asm-durable")
	if _, _, err := s.Plugins.Put(p.ws.ID, "plug", p.wasm); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkPopulated asserts that everything populate wrote is in s (a store just opened, with an empty cache).
func checkPopulated(t *testing.T, s *Store, p populated) {
	t.Helper()
	if done, err := s.Initialized(); err != nil || !done {
		t.Errorf("Initialized = %v, %v", done, err)
	}
	if k, err := s.APIKeys.Lookup(p.initKey); err != nil || !k.Admin {
		t.Errorf("first-start key = %+v, %v", k, err)
	}
	if again, err := s.Initialize(); err != nil || again != "" {
		t.Errorf("Initialize on a reopened store = %q, %v", again, err)
	}
	if ws, err := s.Workspaces.Resolve("durable"); err != nil || ws.ID != p.ws.ID {
		t.Errorf("workspace = %+v, %v", ws, err)
	}
	if _, err := s.Workspaces.Resolve(DefaultWorkspaceSlug); err != nil {
		t.Errorf("default workspace: %v", err)
	}
	if k, err := s.APIKeys.Lookup(p.opSecret); err != nil || k.ID != p.opKey.ID || !k.Admin {
		t.Errorf("operator key = %+v, %v", k, err)
	}
	if k, err := s.APIKeys.Lookup(p.newSecret); err != nil || k.ID != p.newKey.ID {
		t.Errorf("created key = %+v, %v", k, err)
	}
	if l, err := s.APIKeys.List(p.ws.ID); err != nil || len(l) != 2 {
		t.Errorf("key list = %d, %v", len(l), err)
	}
	if pr, err := s.Providers.Get(p.ws.ID, "openai"); err != nil || string(pr.Fields["api_key"]) != `"sk-very-secret-value"` {
		t.Errorf("provider = %+v, %v", pr, err)
	}
	if c, err := s.Configs.Get(p.ws.ID, "cfg-a"); err != nil || string(c.Config) != `{"x":1}` {
		t.Errorf("config = %+v, %v", c, err)
	}
	if _, err := s.Configs.Get(p.ws.ID, p.gone); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted config is back: %v", err)
	}
	if _, err := s.Prompts.Get(p.ws.ID, "pr"); err != nil {
		t.Errorf("prompt: %v", err)
	}
	if _, err := s.Guardrails.Get(p.ws.ID, "gr"); err != nil {
		t.Errorf("guardrail: %v", err)
	}
	if _, err := s.Policies.Get(p.ws.ID, "pol"); err != nil {
		t.Errorf("policy: %v", err)
	}
	if b, err := s.Plugins.Wasm(p.ws.ID, "plug"); err != nil || !bytes.Equal(b, p.wasm) {
		t.Errorf("plugin bytes = %q, %v", b, err)
	}
}

func TestReopen(t *testing.T) {
	fs := vfs.NewMem()
	open := func(key []byte) (*Store, error) {
		return Open("db", Options{MasterKey: key, Logger: quietLogger(), fs: fs})
	}
	s, err := open(testMasterKey(1))
	if err != nil {
		t.Fatal(err)
	}
	p := populate(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		key     []byte
		wantErr error
	}{
		{name: "wrong key", key: testMasterKey(2), wantErr: ErrWrongMasterKey},
		{name: "key one bit off", key: func() []byte { k := testMasterKey(1); k[31] ^= 1; return k }(), wantErr: ErrWrongMasterKey},
		{name: "right key", key: testMasterKey(1)},
		{name: "right key again", key: testMasterKey(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := open(tt.key)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					if s != nil {
						s.Close()
					}
					t.Fatalf("Open = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			checkPopulated(t, s, p)
		})
	}

	t.Run("tampered key check", func(t *testing.T) {
		s, err := open(testMasterKey(1))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.db.Set(keyKeyCheck, s.keys.seal([]byte("something else"), keyKeyCheck), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if s, err := open(testMasterKey(1)); !errors.Is(err, ErrWrongMasterKey) {
			s.Close()
			t.Fatalf("Open with a tampered key check = %v, want ErrWrongMasterKey", err)
		}
	})
}

func TestCrashDurability(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s, err := Open("db", Options{MasterKey: testMasterKey(1), Logger: quietLogger(), fs: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := populate(t, s)
	// Control: a write that is not synced is lost in the crash, which shows the clone keeps synced data only.
	if err := s.db.Set([]byte("meta/unsynced"), []byte("x"), pebble.NoSync); err != nil {
		t.Fatal(err)
	}

	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2, err := Open("db", Options{MasterKey: testMasterKey(1), Logger: quietLogger(), fs: crashed})
	if err != nil {
		t.Fatalf("Open after crash: %v", err)
	}
	defer s2.Close()
	if _, err := s2.get([]byte("meta/unsynced")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an unsynced write survived the crash (%v): the crash simulation keeps too much", err)
	}
	checkPopulated(t, s2, p)

	// The crashed store is writable and keeps working.
	if _, _, err := s2.APIKeys.Create(p.ws.ID, "after-crash", false); err != nil {
		t.Fatal(err)
	}
}

// TestCrashAfterEachWrite crashes right after each kind of write returns, with nothing written after it that
// could sync it by accident, and checks that the write is in the store recovered from the crash.
func TestCrashAfterEachWrite(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s, err := Open("db", Options{MasterKey: testMasterKey(1), Logger: quietLogger(), fs: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ws1 := &Workspace{ID: NewUUID(), Slug: "crash-1", OrganisationID: NewUUID()}
	ws2 := &Workspace{ID: NewUUID(), Slug: "crash-2", OrganisationID: NewUUID()}
	var (
		secret, opSecret, initSecret string
		key1                         *APIKey
	)
	apiKeyHas := func(s *Store, secret string, want func(*APIKey) bool) error {
		k, err := s.APIKeys.Lookup(secret)
		if err != nil || !want(k) {
			return fmt.Errorf("Lookup = %+v, %v", k, err)
		}
		return nil
	}
	gone := func(err error) error {
		if !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("got %v, want ErrNotFound", err)
		}
		return nil
	}
	fields := func(v string) map[string]json.RawMessage {
		return map[string]json.RawMessage{"api_key": json.RawMessage(`"` + v + `"`)}
	}
	steps := []struct {
		name  string
		write func() error
		check func(s *Store) error
	}{
		{name: "workspace put", write: func() error { _, err := s.Workspaces.Put(ws1); return err },
			check: func(s *Store) error { _, err := s.Workspaces.Resolve("crash-1"); return err }},
		{name: "workspace rename", write: func() error {
			w := *ws1
			w.Slug = "crash-1b"
			_, err := s.Workspaces.Put(&w)
			return err
		}, check: func(s *Store) error {
			if _, err := s.Workspaces.Resolve("crash-1"); !errors.Is(err, ErrNotFound) {
				return fmt.Errorf("old slug: %v", err)
			}
			_, err := s.Workspaces.Resolve("crash-1b")
			return err
		}},
		{name: "second workspace", write: func() error { _, err := s.Workspaces.Put(ws2); return err },
			check: func(s *Store) error { _, err := s.Workspaces.Get(ws2.ID); return err }},
		{name: "api key create", write: func() (err error) { secret, key1, err = s.APIKeys.Create(ws1.ID, "k", false); return err },
			check: func(s *Store) error { return apiKeyHas(s, secret, func(k *APIKey) bool { return k.ID == key1.ID }) }},
		{name: "api key put", write: func() error {
			opSecret = "operator-crash-key"
			_, _, err := s.APIKeys.Put(opSecret, &APIKey{WorkspaceID: ws1.ID, Admin: true})
			return err
		}, check: func(s *Store) error { return apiKeyHas(s, opSecret, func(k *APIKey) bool { return k.Admin }) }},
		{name: "api key revoke admin", write: func() error {
			_, _, err := s.APIKeys.Put(opSecret, &APIKey{WorkspaceID: ws1.ID, Admin: false})
			return err
		}, check: func(s *Store) error { return apiKeyHas(s, opSecret, func(k *APIKey) bool { return !k.Admin }) }},
		{name: "api key move", write: func() error {
			_, _, err := s.APIKeys.Put(opSecret, &APIKey{WorkspaceID: ws2.ID})
			return err
		}, check: func(s *Store) error {
			if l, _ := s.APIKeys.List(ws1.ID); len(l) != 1 {
				return fmt.Errorf("old workspace lists %d keys, want 1", len(l))
			}
			return apiKeyHas(s, opSecret, func(k *APIKey) bool { return k.WorkspaceID == ws2.ID })
		}},
		{name: "api key delete", write: func() error { return s.APIKeys.Delete(ws1.ID, key1.ID) },
			check: func(s *Store) error { _, err := s.APIKeys.Lookup(secret); return gone(err) }},
		{name: "provider put", write: func() error {
			_, err := s.Providers.Put(&Provider{WorkspaceID: ws1.ID, Slug: "p", Provider: "openai", Fields: fields("sk-1")})
			return err
		}, check: func(s *Store) error {
			p, err := s.Providers.Get(ws1.ID, "p")
			if err != nil || string(p.Fields["api_key"]) != `"sk-1"` {
				return fmt.Errorf("Get = %+v, %v", p, err)
			}
			return nil
		}},
		{name: "provider update", write: func() error {
			_, err := s.Providers.Put(&Provider{WorkspaceID: ws1.ID, Slug: "p", Provider: "openai", Fields: fields("sk-2")})
			return err
		}, check: func(s *Store) error {
			p, err := s.Providers.Get(ws1.ID, "p")
			if err != nil || string(p.Fields["api_key"]) != `"sk-2"` {
				return fmt.Errorf("Get = %+v, %v", p, err)
			}
			return nil
		}},
		{name: "provider delete", write: func() error { return s.Providers.Delete(ws1.ID, "p") },
			check: func(s *Store) error { _, err := s.Providers.Get(ws1.ID, "p"); return gone(err) }},
		{name: "config put", write: func() error {
			_, err := s.Configs.Put(ws1.ID, "c", &Config{Config: json.RawMessage(`{"a":1}`)})
			return err
		}, check: func(s *Store) error { _, err := s.Configs.Get(ws1.ID, "c"); return err }},
		{name: "config delete", write: func() error { return s.Configs.Delete(ws1.ID, "c") },
			check: func(s *Store) error { _, err := s.Configs.Get(ws1.ID, "c"); return gone(err) }},
		{name: "prompt put", write: func() error {
			_, err := s.Prompts.Put(ws1.ID, "pr", &Prompt{Versions: []PromptVersion{{Version: 1}}})
			return err
		}, check: func(s *Store) error { _, err := s.Prompts.Get(ws1.ID, "pr"); return err }},
		{name: "guardrail put", write: func() error {
			_, err := s.Guardrails.Put(ws1.ID, "g", &Guardrail{Guardrail: json.RawMessage(`{}`)})
			return err
		}, check: func(s *Store) error { _, err := s.Guardrails.Get(ws1.ID, "g"); return err }},
		{name: "policy put", write: func() error {
			_, err := s.Policies.Put(ws1.ID, "pol", &RateLimitPolicy{Value: 1})
			return err
		}, check: func(s *Store) error { _, err := s.Policies.Get(ws1.ID, "pol"); return err }},
		{name: "policy delete", write: func() error { return s.Policies.Delete(ws1.ID, "pol") },
			check: func(s *Store) error { _, err := s.Policies.Get(ws1.ID, "pol"); return gone(err) }},
		{name: "plugin put", write: func() error { _, _, err := s.Plugins.Put(ws1.ID, "pl", []byte("wasm")); return err },
			check: func(s *Store) error {
				b, err := s.Plugins.Wasm(ws1.ID, "pl")
				if err != nil || string(b) != "wasm" {
					return fmt.Errorf("Wasm = %q, %v", b, err)
				}
				return nil
			}},
		{name: "plugin delete", write: func() error { return s.Plugins.Delete(ws1.ID, "pl") },
			check: func(s *Store) error {
				if _, err := s.Plugins.Get(ws1.ID, "pl"); !errors.Is(err, ErrNotFound) {
					return fmt.Errorf("Get = %v", err)
				}
				_, err := s.Plugins.Wasm(ws1.ID, "pl")
				return gone(err)
			}},
		{name: "initialize", write: func() (err error) { initSecret, err = s.Initialize(); return err },
			check: func(s *Store) error {
				if done, err := s.Initialized(); err != nil || !done {
					return fmt.Errorf("Initialized = %v, %v", done, err)
				}
				return apiKeyHas(s, initSecret, func(k *APIKey) bool { return k.Admin })
			}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if err := st.write(); err != nil {
				t.Fatalf("write: %v", err)
			}
			crashed := fs.CrashClone(vfs.CrashCloneCfg{})
			s2, err := Open("db", Options{MasterKey: testMasterKey(1), Logger: quietLogger(), fs: crashed})
			if err != nil {
				t.Fatalf("Open after crash: %v", err)
			}
			defer s2.Close()
			if err := st.check(s2); err != nil {
				t.Fatalf("after a crash right after %s: %v", st.name, err)
			}
		})
	}
}

func TestSecretsAtRest(t *testing.T) {
	fs := vfs.NewMem()
	s, err := Open("db", Options{MasterKey: testMasterKey(1), Logger: quietLogger(), fs: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	ws := newWorkspace(t, s, "sec")
	const providerSecret = "sk-very-secret-value"
	const saSecret = "PRIVATE-KEY-MATERIAL-42"
	if _, err := s.Providers.Put(&Provider{WorkspaceID: ws.ID, Slug: "openai", Provider: "openai", Fields: map[string]json.RawMessage{
		"api_key":                     json.RawMessage(`"` + providerSecret + `"`),
		"cloudz_secret_access_key":    json.RawMessage(`"cloudz-secret-99"`),
		"cloudy_service_account_json": json.RawMessage(`{"private_key":"` + saSecret + `"}`),
		"custom_host":                 json.RawMessage(`"https://user:host-pass-77@upstream-host.test/v1"`),
		"cloudz_region":               json.RawMessage(`"clear-marker-region"`),
	}}); err != nil {
		t.Fatal(err)
	}
	created, _, err := s.APIKeys.Create(ws.ID, "c", true)
	if err != nil {
		t.Fatal(err)
	}
	const operator = "operator-plaintext-secret"
	if _, _, err := s.APIKeys.Put(operator, &APIKey{WorkspaceID: ws.ID}); err != nil {
		t.Fatal(err)
	}
	initial, err := s.Initialize()
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{providerSecret, saSecret, "cloudz-secret-99", "host-pass-77", "upstream-host.test", created, operator, initial,
		created[len(APIKeyPrefix):]} // the random part alone
	if len(rawAll(t, s)) < 8 {
		t.Fatal("the raw scan sees too few records")
	}

	check := func(t *testing.T, where string, k, v []byte) {
		t.Helper()
		for _, sec := range secrets {
			if sec == "" { // Initialize makes no key when an admin key exists already
				continue
			}
			if bytes.Contains(k, []byte(sec)) || bytes.Contains(v, []byte(sec)) {
				t.Errorf("%s %q holds secret %q", where, k, sec)
			}
		}
	}
	t.Run("pebble values", func(t *testing.T) {
		for _, kv := range rawAll(t, s) {
			check(t, "record", kv.k, kv.v)
		}
	})
	t.Run("files before close", func(t *testing.T) {
		seen := false // control: the scan does see clear data in the files (the WAL)
		for name, data := range fsFileContents(t, fs, "db") {
			check(t, "file", []byte(name), data)
			seen = seen || bytes.Contains(data, []byte("clear-marker-region"))
		}
		if !seen {
			t.Fatal("the clear field is in no file: the file scan sees nothing")
		}
	})
	t.Run("files after close", func(t *testing.T) {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		files := fsFileContents(t, fs, "db")
		if len(files) == 0 {
			t.Fatal("no files")
		}
		for name, data := range files {
			check(t, "file", []byte(name), data)
		}
		s, err = Open("db", Options{MasterKey: testMasterKey(1), Logger: quietLogger(), fs: fs})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("secrets still open", func(t *testing.T) {
		pr, err := s.Providers.Get(ws.ID, "openai")
		if err != nil || string(pr.Fields["api_key"]) != `"`+providerSecret+`"` {
			t.Fatalf("Get = %+v, %v", pr, err)
		}
	})
}

func TestSealBinding(t *testing.T) {
	s := openTest(t, nil, nil)
	kr := s.keys
	aad := key(tableProvider, "ws", "a")
	sealed := kr.seal([]byte("payload"), aad)

	other, err := newKeyring(testMasterKey(9))
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), sealed...)
	flipped[len(flipped)-1] ^= 0x01
	nonceFlipped := append([]byte(nil), sealed...)
	nonceFlipped[0] ^= 0x80

	tests := []struct {
		name    string
		kr      *keyring
		sealed  []byte
		aad     []byte
		wantErr bool
	}{
		{name: "same key", kr: kr, sealed: sealed, aad: aad},
		{name: "copied under another slug", kr: kr, sealed: sealed, aad: key(tableProvider, "ws", "b"), wantErr: true},
		{name: "copied under another workspace", kr: kr, sealed: sealed, aad: key(tableProvider, "ws2", "a"), wantErr: true},
		{name: "no aad", kr: kr, sealed: sealed, aad: nil, wantErr: true},
		{name: "other master key", kr: other, sealed: sealed, aad: aad, wantErr: true},
		{name: "tampered ciphertext", kr: kr, sealed: flipped, aad: aad, wantErr: true},
		{name: "tampered nonce", kr: kr, sealed: nonceFlipped, aad: aad, wantErr: true},
		{name: "truncated", kr: kr, sealed: sealed[:10], aad: aad, wantErr: true},
		{name: "empty", kr: kr, sealed: nil, aad: aad, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plain, err := tt.kr.open(tt.sealed, tt.aad)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("open = %q, want an error", plain)
				}
				return
			}
			if err != nil || string(plain) != "payload" {
				t.Fatalf("open = %q, %v", plain, err)
			}
		})
	}
	if bytes.Equal(kr.seal([]byte("payload"), aad), sealed) {
		t.Fatal("two seals of the same plaintext are equal: the nonce is not random")
	}

	t.Run("provider record copied under another key", func(t *testing.T) {
		wsA, wsB := NewUUID(), NewUUID()
		if _, err := s.Providers.Put(&Provider{WorkspaceID: wsA, Slug: "src", Provider: "openai",
			Fields: map[string]json.RawMessage{"api_key": json.RawMessage(`"sk-copied"`)}}); err != nil {
			t.Fatal(err)
		}
		raw, err := s.get(key(tableProvider, wsA, "src"))
		if err != nil {
			t.Fatal(err)
		}
		targets := []struct {
			name string
			ws   string
			slug string
		}{
			{name: "same workspace, other slug", ws: wsA, slug: "dst"},
			{name: "other workspace, same slug", ws: wsB, slug: "src"},
		}
		for _, tg := range targets {
			t.Run(tg.name, func(t *testing.T) {
				k := key(tableProvider, tg.ws, tg.slug)
				if err := s.db.Set(k, raw, pebble.Sync); err != nil {
					t.Fatal(err)
				}
				defer s.db.Delete(k, pebble.Sync)
				if pr, err := s.Providers.Get(tg.ws, tg.slug); err == nil {
					t.Fatalf("Get of a copied record opened its secrets: %+v", pr)
				}
				// List must not open it either: it is bound to where it was found, not to what it says.
				list, err := s.Providers.List(tg.ws)
				if err == nil {
					t.Fatalf("List of a workspace holding a copied record = %+v, nil error; want an error", list)
				}
			})
		}
		// The original still opens.
		if pr, err := s.Providers.Get(wsA, "src"); err != nil || string(pr.Fields["api_key"]) != `"sk-copied"` {
			t.Fatalf("original = %+v, %v", pr, err)
		}
		if l, err := s.Providers.List(wsA); err != nil || len(l) != 1 {
			t.Fatalf("List of the original workspace = %d, %v", len(l), err)
		}
	})
}
