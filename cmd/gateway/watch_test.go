package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/gateway/storage"
)

type recordingHost struct {
	mu     sync.Mutex
	loaded map[string][]byte
	loads  int
}

func (h *recordingHost) Validate(_ context.Context, wasm []byte) error {
	if !bytes.HasPrefix(wasm, []byte("\x00asm")) {
		return errors.New("not wasm")
	}
	return nil
}

func (h *recordingHost) Load(_ context.Context, ws, id string, wasm []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.loaded[ws+"/"+id] = wasm
	h.loads++
	return nil
}

func (h *recordingHost) Remove(ws, id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, had := h.loaded[ws+"/"+id]
	delete(h.loaded, ws+"/"+id)
	return had
}

func TestPluginWatcher(t *testing.T) {
	master := make([]byte, storage.MasterKeySize)
	rand.Read(master)
	st, err := storage.Open("mem", storage.Options{MasterKey: master, InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ws := &storage.Workspace{ID: storage.NewUUID(), Slug: "team-a", OrganisationID: storage.NewUUID()}
	if _, err := st.Workspaces.Put(ws); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "team-a"), 0o755)
	os.MkdirAll(filepath.Join(dir, "no-such-workspace"), 0o755)
	write := func(name string, data []byte, mod time.Time) {
		path := filepath.Join(dir, "team-a", name)
		os.WriteFile(path, data, 0o644)
		os.Chtimes(path, mod, mod)
	}
	host := &recordingHost{loaded: map[string][]byte{}}
	w := newPluginWatcher(dir, st, host, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	t0 := time.Now().Add(-time.Hour)

	v1 := []byte("\x00asm\x01\x00\x00\x00 one")
	write("pii.wasm", v1, t0)
	write("junk.wasm", []byte("not a module"), t0)
	write("notes.txt", []byte("ignored"), t0)
	os.WriteFile(filepath.Join(dir, "no-such-workspace", "x.wasm"), v1, 0o644)
	w.scan(ctx)
	if !bytes.Equal(host.loaded[ws.ID+"/pii"], v1) || len(host.loaded) != 1 {
		t.Fatalf("after the first scan loaded %v", host.loaded)
	}
	if stored, err := st.Plugins.Wasm(ws.ID, "pii"); err != nil || !bytes.Equal(stored, v1) {
		t.Fatalf("not stored for restarts: %v", err)
	}
	w.scan(ctx)
	if host.loads != 1 {
		t.Fatalf("an unchanged file was loaded again (%d loads)", host.loads)
	}

	v2 := []byte("\x00asm\x01\x00\x00\x00 two!")
	write("pii.wasm", v2, t0.Add(time.Minute))
	w.scan(ctx)
	if !bytes.Equal(host.loaded[ws.ID+"/pii"], v2) {
		t.Fatal("a changed file was not reloaded")
	}

	os.Remove(filepath.Join(dir, "team-a", "pii.wasm"))
	w.scan(ctx)
	if _, ok := host.loaded[ws.ID+"/pii"]; ok {
		t.Fatal("a removed file's plugin stays loaded")
	}
	if _, err := st.Plugins.Get(ws.ID, "pii"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a removed file's plugin stays stored: %v", err)
	}
}
