package storage

import (
	"bytes"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// pausingFS pauses the first read of a table file made on behalf of APIKeyStore.Lookup once armed, so that a
// test can run a write between Lookup's read from pebble and its update of the cache: the interleaving that
// the cache's generation counter must make harmless.
type pausingFS struct {
	vfs.FS
	mu      sync.Mutex
	armed   bool
	entered chan struct{} // closed when a Lookup's read is paused
	release chan struct{} // closing it lets the read go on
}

func (fs *pausingFS) arm() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.armed = true
	fs.entered = make(chan struct{})
	fs.release = make(chan struct{})
}

func (fs *pausingFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil {
		return nil, err
	}
	return &pausingFile{File: f, fs: fs}, nil
}

type pausingFile struct {
	vfs.File
	fs *pausingFS
}

func (f *pausingFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	pause := f.fs.armed && inLookup()
	var entered, release chan struct{}
	if pause {
		f.fs.armed = false
		entered, release = f.fs.entered, f.fs.release
	}
	f.fs.mu.Unlock()
	if pause {
		close(entered)
		<-release
	}
	return f.File.ReadAt(p, off)
}

func inLookup() bool {
	buf := make([]byte, 64<<10)
	buf = buf[:runtime.Stack(buf, false)]
	return bytes.Contains(buf, []byte("storage.(*APIKeyStore).Lookup("))
}

// TestLookupRacingWrite pins down the interleaving in which Lookup reads a key from pebble, a write to that key
// completes, and only then Lookup updates the cache. The cache must end up agreeing with the write: a deleted
// key must not authenticate, and a key whose admin right, workspace or name changed must not be served as it
// was before.
func TestLookupRacingWrite(t *testing.T) {
	type fixture struct {
		s        *Store
		secret   string
		k        *APIKey
		ws, ws2  *Workspace
		hashKey  []byte // apikey/<hash>
		indexKey []byte // apikeyid/<workspace>/<id>
	}
	tests := []struct {
		name string
		// inMemtable names the record the write reads: once the Lookup is paused it is rewritten (same value)
		// into the memtable, so that the write does not wait on the Lookup's paused read of the table.
		inMemtable func(f *fixture) []byte
		write      func(f *fixture) error
		check      func(t *testing.T, f *fixture, got *APIKey, err error)
	}{
		{
			name:       "delete",
			inMemtable: func(f *fixture) []byte { return f.indexKey },
			write:      func(f *fixture) error { return f.s.APIKeys.Delete(f.ws.ID, f.k.ID) },
			check: func(t *testing.T, f *fixture, got *APIKey, err error) {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("a deleted key authenticates: %+v, %v", got, err)
				}
			},
		},
		{
			name:       "revoke admin",
			inMemtable: func(f *fixture) []byte { return f.hashKey },
			write: func(f *fixture) error {
				_, _, err := f.s.APIKeys.Put(f.secret, &APIKey{WorkspaceID: f.ws.ID, Name: f.k.Name, Admin: false})
				return err
			},
			check: func(t *testing.T, f *fixture, got *APIKey, err error) {
				if err != nil || got.Admin {
					t.Fatalf("after revoking admin Lookup = %+v, %v; want admin=false", got, err)
				}
			},
		},
		{
			name:       "move to another workspace",
			inMemtable: func(f *fixture) []byte { return f.hashKey },
			write: func(f *fixture) error {
				_, _, err := f.s.APIKeys.Put(f.secret, &APIKey{WorkspaceID: f.ws2.ID, Name: f.k.Name, Admin: true})
				return err
			},
			check: func(t *testing.T, f *fixture, got *APIKey, err error) {
				if err != nil || got.WorkspaceID != f.ws2.ID {
					t.Fatalf("after the move Lookup = %+v, %v; want workspace %s", got, err, f.ws2.ID)
				}
			},
		},
		{
			name:       "rename",
			inMemtable: func(f *fixture) []byte { return f.hashKey },
			write: func(f *fixture) error {
				_, _, err := f.s.APIKeys.Put(f.secret, &APIKey{WorkspaceID: f.ws.ID, Name: "renamed", Admin: true})
				return err
			},
			check: func(t *testing.T, f *fixture, got *APIKey, err error) {
				if err != nil || got.Name != "renamed" {
					t.Fatalf("after the rename Lookup = %+v, %v", got, err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := &pausingFS{FS: vfs.NewMem()}
			f := &fixture{s: openTest(t, fs, nil)}
			requirePebble(t, f.s)
			f.ws = newWorkspace(t, f.s, "one")
			f.ws2 = newWorkspace(t, f.s, "two")
			var err error
			if f.secret, f.k, err = f.s.APIKeys.Create(f.ws.ID, "racy", true); err != nil {
				t.Fatal(err)
			}
			h := f.s.keys.hashAPIKey(f.secret).hex()
			f.hashKey, f.indexKey = key(tableAPIKey, h), key(tableAPIKeyID, f.ws.ID, f.k.ID)
			// A big record that sorts between apikeyid/ and meta/ puts the key in another data block than
			// meta/keycheck, which Open reads.
			big := json.RawMessage(`"` + strings.Repeat(NewUUID(), 300) + `"`)
			if _, err := f.s.Configs.Put(f.ws.ID, "big", &Config{Config: big}); err != nil {
				t.Fatal(err)
			}
			mk := tt.inMemtable(f)
			v, err := f.s.get(mk) // now, from the memtable: reading the table later would warm the block cache
			if err != nil {
				t.Fatal(err)
			}
			// Move everything into a table and reopen, so that Lookup reads the table (through pausingFS) with
			// cold caches.
			if err := f.s.pdb.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := f.s.Close(); err != nil {
				t.Fatal(err)
			}
			f.s = openTest(t, fs, nil)

			fs.arm()
			type result struct {
				k   *APIKey
				err error
			}
			looked := make(chan result, 1)
			go func() {
				k, err := f.s.APIKeys.Lookup(f.secret)
				looked <- result{k, err}
			}()
			select {
			case <-fs.entered:
			case r := <-looked:
				t.Fatalf("Lookup (%+v, %v) did not read the table: the test cannot pause it", r.k, r.err)
			case <-time.After(10 * time.Second):
				t.Fatal("Lookup did not reach the table")
			}

			// The Lookup's read is paused, its snapshot taken: rewrite the record the write reads into the
			// memtable (a raw write, which reads nothing), where the Lookup cannot see it.
			if err := f.s.db.Set(mk, v, pebble.Sync); err != nil {
				close(fs.release)
				t.Fatal(err)
			}
			wrote := make(chan error, 1)
			go func() { wrote <- tt.write(f) }()
			select {
			case err := <-wrote:
				if err != nil {
					close(fs.release)
					t.Fatalf("write: %v", err)
				}
			case <-time.After(10 * time.Second):
				close(fs.release)
				t.Fatal("the write waited for the paused Lookup")
			}
			close(fs.release)
			r := <-looked
			if r.err != nil || r.k.ID != f.k.ID {
				t.Fatalf("the racing Lookup = %+v, %v; want the key as it was before the write", r.k, r.err)
			}
			if !r.k.Admin || r.k.WorkspaceID != f.ws.ID {
				t.Fatalf("the racing Lookup did not read the old record: %+v", r.k)
			}

			got, err := f.s.APIKeys.Lookup(f.secret)
			tt.check(t, f, got, err)
			dropAPIKeyCache(f.s)
			got, err = f.s.APIKeys.Lookup(f.secret)
			tt.check(t, f, got, err) // and pebble agrees
		})
	}
}
