package storage

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// testMasterKey returns a fixed 32-byte master key; seed varies it so that tests can make a wrong key.
func testMasterKey(seed byte) []byte {
	k := make([]byte, MasterKeySize)
	for i := range k {
		k[i] = seed + byte(i)*7
	}
	return k
}

// fakeClock is a controllable clock for the `now` option.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2024, 5, 1, 12, 0, 0, 123456789, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward and returns the new time.
func (c *fakeClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// openTest opens an in-memory store (or one on fs, when given) and closes it when the test ends. With
// GATEWAY_TEST_STORAGE=postgres it opens a store on a fresh PostgreSQL schema instead (postgres_test.go).
func openTest(t testing.TB, fs vfs.FS, clk *fakeClock) *Store {
	t.Helper()
	if os.Getenv("GATEWAY_TEST_STORAGE") == "postgres" {
		return openTestPostgres(t, fs, clk)
	}
	opts := Options{MasterKey: testMasterKey(1), InMemory: fs == nil, Logger: quietLogger(), fs: fs}
	if clk != nil {
		opts.now = clk.Now
	}
	s, err := Open("db", opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// requirePebble skips a test that needs the embedded engine itself (its files, a crash, Flush, Metrics).
func requirePebble(t testing.TB, s *Store) {
	t.Helper()
	if s.pdb == nil {
		t.Skip("needs the embedded pebble engine; this run is on PostgreSQL (GATEWAY_TEST_STORAGE=postgres)")
	}
}

// newWorkspace puts a workspace with a fresh ID and the given slug.
func newWorkspace(t testing.TB, s *Store, slug string) *Workspace {
	t.Helper()
	ws := &Workspace{ID: NewUUID(), Slug: slug, OrganisationID: NewUUID(), Name: "ws " + slug}
	if _, err := s.Workspaces.Put(ws); err != nil {
		t.Fatalf("Workspaces.Put(%s): %v", slug, err)
	}
	return ws
}

// dropAPIKeyCache empties Lookup's cache, as a fresh process would have it.
func dropAPIKeyCache(s *Store) {
	s.APIKeys.mu.Lock()
	s.APIKeys.cache = make(map[apiKeyHash]*APIKey)
	s.APIKeys.mu.Unlock()
}

// rawKV is one key and value read straight from pebble.
type rawKV struct{ k, v []byte }

// rawAll returns every key and value in the database.
func rawAll(t testing.TB, s *Store) []rawKV {
	t.Helper()
	it, err := s.db.NewIter(&pebble.IterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []rawKV
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rawKV{append([]byte(nil), it.Key()...), append([]byte(nil), v...)})
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// countPrefix counts the raw keys under p.
func countPrefix(t testing.TB, s *Store, p string) int {
	t.Helper()
	n := 0
	for _, kv := range rawAll(t, s) {
		if bytes.HasPrefix(kv.k, []byte(p)) {
			n++
		}
	}
	return n
}

// fsFileContents returns the bytes of every file below dir in a vfs.
func fsFileContents(t testing.TB, fs vfs.FS, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		p := fs.PathJoin(dir, name)
		st, err := fs.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.IsDir() {
			for k, v := range fsFileContents(t, fs, p) {
				out[k] = v
			}
			continue
		}
		f, err := fs.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		out[p] = data
	}
	return out
}

// compactJSON returns s compacted, failing the test on invalid JSON.
func compactJSON(t testing.TB, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("compact %q: %v", s, err)
	}
	return b.String()
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ids[T any](items []*T, id func(*T) string) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, id(it))
	}
	return out
}
