package control

import (
	"context"
	"crypto/rand"
	"log/slog"
	"testing"

	"github.com/google/uuid"

	"github.com/llmgw/gateway/storage"
)

// fixture is a Plane over an in-memory store with one workspace, and the caller an admin key of it.
type fixture struct {
	plane  *Plane
	store  *storage.Store
	hooks  *countingHooks
	caller Caller
}

// countingHooks counts how often the engine's compiled hooks were dropped.
type countingHooks struct{ forgot int }

func (h *countingHooks) ForgetCompiledHooks() { h.forgot++ }

func newFixture(t testing.TB, opts Options) *fixture {
	t.Helper()
	master := make([]byte, storage.MasterKeySize)
	rand.Read(master)
	st, err := storage.Open("mem", storage.Options{MasterKey: master, InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ws := &storage.Workspace{ID: uuid.NewString(), Slug: "default", OrganisationID: uuid.NewString()}
	if _, err := st.Workspaces.Put(ws); err != nil {
		t.Fatal(err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	hooks := &countingHooks{}
	return &fixture{plane: New(st, hooks, opts), store: st, hooks: hooks,
		caller: Caller{WorkspaceID: ws.ID, KeyID: "key-1", TraceID: "trace-1"}}
}

var ctx = context.Background()
