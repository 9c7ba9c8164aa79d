package control

import (
	"context"
	"crypto/rand"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/llmgw/gateway/internal/testservices"
	"github.com/llmgw/gateway/storage"
)

// TestPluginKVBoundsUnderConcurrency: parallel PUTs of new keys, through one plane on the embedded store and
// through two replicas on PostgreSQL, never take a workspace past MaxPluginKVEntries or MaxPluginKVBytes: the
// bounds check and the write are one step across replicas.
func TestPluginKVBoundsUnderConcurrency(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		f := newFixture(t, Options{})
		checkPluginKVBoundsUnderConcurrency(t, f.store, []*Plane{f.plane}, func() Caller { return newKVWorkspace(t, f.store) })
	})
	t.Run("postgres", func(t *testing.T) {
		u := testservices.PostgresSchemaURL(t)
		master := make([]byte, storage.MasterKeySize)
		rand.Read(master)
		var planes []*Plane
		var stores []*storage.Store
		for range 2 {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			st, err := storage.OpenPostgres(ctx, u, storage.Options{MasterKey: master, Logger: slog.New(slog.DiscardHandler)})
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			stores = append(stores, st)
			planes = append(planes, New(st, &countingHooks{}, Options{Logger: slog.New(slog.DiscardHandler)}))
		}
		checkPluginKVBoundsUnderConcurrency(t, stores[0], planes, func() Caller { return newKVWorkspace(t, stores[0]) })
	})
}

func newKVWorkspace(t *testing.T, st *storage.Store) Caller {
	t.Helper()
	ws := &storage.Workspace{ID: uuid.NewString(), Slug: "kv-" + uuid.NewString()[:8], OrganisationID: uuid.NewString()}
	if _, err := st.Workspaces.Put(ws); err != nil {
		t.Fatal(err)
	}
	return Caller{WorkspaceID: ws.ID, KeyID: "key-1", TraceID: "trace-1"}
}

func checkPluginKVBoundsUnderConcurrency(t *testing.T, st *storage.Store, planes []*Plane, workspace func() Caller) {
	const writers = 8
	// race runs writers PUTs of new keys with body at once, spread over the planes, and returns how many
	// succeeded.
	race := func(caller Caller, body []byte) int {
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok := 0
		for i := range writers {
			wg.Go(func() {
				_, _, err := planes[i%len(planes)].PutPluginKV(ctx, caller, "new"+strconv.Itoa(i), body)
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					ok++
				} else if !strings.Contains(err.Error(), "limit") {
					t.Errorf("PUT: %v, want a 409 naming the limit", err)
				}
			})
		}
		wg.Wait()
		return ok
	}
	count := workspace()
	for i := range MaxPluginKVEntries - 2 {
		if _, err := st.PluginKV.Put(&storage.PluginKVEntry{WorkspaceID: count.WorkspaceID, Key: "k" + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if ok := race(count, []byte(`{"value": ""}`)); ok != 2 {
		t.Errorf("%d of %d parallel PUTs 2 keys below the count bound succeeded, want 2", ok, writers)
	}
	if all, _ := st.PluginKV.List(count.WorkspaceID); len(all) != MaxPluginKVEntries {
		t.Errorf("%d keys stored, want %d", len(all), MaxPluginKVEntries)
	}

	size := workspace()
	value := strings.Repeat("v", MaxPluginKVValue)
	for i := range MaxPluginKVBytes/MaxPluginKVValue - 1 {
		if _, err := st.PluginKV.Put(&storage.PluginKVEntry{WorkspaceID: size.WorkspaceID, Key: "big" + strconv.Itoa(i), Value: value}); err != nil {
			t.Fatal(err)
		}
	}
	if ok := race(size, []byte(`{"value": "`+value+`"}`)); ok != 1 {
		t.Errorf("%d of %d parallel 1 MiB PUTs 1 MiB below the size bound succeeded, want 1", ok, writers)
	}
	all, _ := st.PluginKV.List(size.WorkspaceID)
	total := 0
	for _, e := range all {
		total += len(e.Value)
	}
	if total > MaxPluginKVBytes {
		t.Errorf("%d bytes of values stored, above the bound of %d", total, MaxPluginKVBytes)
	}
}
