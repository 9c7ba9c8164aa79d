package storage

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

const hostWithPassword = "http://user:s3cret@127.0.0.1:9/v1"

// TestCustomHostSealed: a provider's custom_host, whose userinfo may hold a password, is sealed like api_key:
// the raw pebble value holds neither the password nor the host, and Get gives it back.
func TestCustomHostSealed(t *testing.T) {
	s := openTest(t, nil, nil)
	ws := newWorkspace(t, s, "hosts")
	host, _ := json.Marshal(hostWithPassword)
	if _, err := s.Providers.Put(&Provider{WorkspaceID: ws.ID, Slug: "up", Provider: "openai",
		Fields: map[string]json.RawMessage{"custom_host": host, "llmvendor_project": json.RawMessage(`"proj-clear"`)}}); err != nil {
		t.Fatal(err)
	}
	raw, err := s.get(key(tableProvider, ws.ID, "up"))
	if err != nil {
		t.Fatal(err)
	}
	for _, clear := range []string{"s3cret", "user", "127.0.0.1", "custom_host"} {
		if bytes.Contains(raw, []byte(clear)) {
			t.Errorf("the stored record holds %q in clear: %s", clear, raw)
		}
	}
	if !bytes.Contains(raw, []byte("proj-clear")) {
		t.Errorf("a field that is not secret is not in clear: %s", raw)
	}
	got, err := s.Providers.Get(ws.ID, "up")
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Fields["custom_host"]) != string(host) {
		t.Errorf("custom_host read back as %s", got.Fields["custom_host"])
	}
}

// TestClearSecretsSealedAtOpen: records an older gateway wrote, with custom_host in clear beside sealed
// secrets or alone, are read as before, and sealed when the store opens again, keeping their content and
// stamps; a record that does not decode is left untouched.
func TestClearSecretsSealedAtOpen(t *testing.T) {
	fs := vfs.NewMem()
	clk := newFakeClock()
	open := func() *Store {
		t.Helper()
		s, err := Open("db", Options{MasterKey: testMasterKey(1), Logger: quietLogger(), fs: fs, now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	ws := newWorkspace(t, s, "old")
	host, _ := json.Marshal(hostWithPassword)

	// "mixed": written by today's Put with an api key, then rewritten as an older gateway had it.
	if _, err := s.Providers.Put(&Provider{WorkspaceID: ws.ID, Slug: "mixed", Provider: "openai", Name: "Mixed",
		Fields: map[string]json.RawMessage{"api_key": json.RawMessage(`"sk-old"`), "cloudz_region": json.RawMessage(`"eu-west-1"`)}}); err != nil {
		t.Fatal(err)
	}
	mixedKey := key(tableProvider, ws.ID, "mixed")
	var mixed providerRecord
	old, _ := s.get(mixedKey)
	if err := json.Unmarshal(old, &mixed); err != nil {
		t.Fatal(err)
	}
	mixed.Fields["custom_host"] = host
	// "alone": no sealed part at all, as a keyless local provider had it.
	alone := providerRecord{WorkspaceID: ws.ID, Slug: "alone", Provider: "ollama",
		Fields: map[string]json.RawMessage{"custom_host": host}, Stamps: Stamps{CreatedAt: clk.Now(), UpdatedAt: clk.Now()}}
	aloneKey := key(tableProvider, ws.ID, "alone")
	brokenKey := key(tableProvider, ws.ID, "broken")
	broken := []byte(`{"custom_host": "http://user:s3cret@127.0.0.1:9/v1", not json`)
	for k, rec := range map[string]*providerRecord{string(mixedKey): &mixed, string(aloneKey): &alone} {
		raw, _ := json.Marshal(rec)
		if err := s.db.Set([]byte(k), raw, pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.Set(brokenKey, broken, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	// Before the reopen, the old records read as they always did.
	s.Providers.cache.forget(string(mixedKey))
	before := map[string]*Provider{}
	for _, slug := range []string{"mixed", "alone"} {
		pr, err := s.Providers.Get(ws.ID, slug)
		if err != nil {
			t.Fatal(err)
		}
		if string(pr.Fields["custom_host"]) != string(host) {
			t.Fatalf("%s: custom_host %s before the reopen", slug, pr.Fields["custom_host"])
		}
		before[slug] = pr
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	clk.Advance(1e9)
	s = open()
	defer s.Close()
	for _, k := range [][]byte{mixedKey, aloneKey} {
		raw, err := s.get(k)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte("s3cret")) || bytes.Contains(raw, []byte("127.0.0.1")) {
			t.Errorf("%s still holds the host in clear: %s", k, raw)
		}
	}
	for _, slug := range []string{"mixed", "alone"} {
		pr, err := s.Providers.Get(ws.ID, slug)
		if err != nil {
			t.Fatal(err)
		}
		want := before[slug]
		if pr.Provider != want.Provider || pr.Name != want.Name || pr.Stamps != want.Stamps ||
			len(pr.Fields) != len(want.Fields) {
			t.Errorf("%s after the reopen: %+v, want %+v", slug, pr, want)
		}
		for name, v := range want.Fields {
			if string(pr.Fields[name]) != string(v) {
				t.Errorf("%s: field %s = %s, want %s", slug, name, pr.Fields[name], v)
			}
		}
		// The same content written again is not a change.
		if changed, err := s.Providers.Put(pr); err != nil || changed {
			t.Errorf("%s: Put of the same content = %v, %v", slug, changed, err)
		}
	}
	if raw, err := s.get(brokenKey); err != nil || !bytes.Equal(raw, broken) {
		t.Errorf("the undecodable record changed: %s, %v", raw, err)
	}
}
