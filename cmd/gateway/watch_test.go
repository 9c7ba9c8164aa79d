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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/plugins"
	"github.com/llmgw/gateway/runtime/gwerr"
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

// Install refuses modules that contain "bad-load", as the engine refuses one that traps in _initialize.
func (h *recordingHost) Install(_ context.Context, ws, id string, wasm []byte, save func() error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.loads++
	if bytes.Contains(wasm, []byte("bad-load")) {
		return gwerr.BadRequest("body", "plugin %q does not initialise: unreachable", id)
	}
	if save != nil {
		if err := save(); err != nil {
			return err
		}
	}
	h.loaded[ws+"/"+id] = wasm
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
	w := newPluginWatcher(dir, st, host, control.New(st, nil, control.Options{Plugins: host}), slog.New(slog.NewTextHandler(io.Discard, nil)))
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

	// A change that does not load is not stored, and the loaded module stays.
	loads := host.loads
	write("pii.wasm", []byte("\x00asm\x01\x00\x00\x00 bad-load"), t0.Add(2*time.Minute))
	w.scan(ctx)
	if host.loads != loads+1 || !bytes.Equal(host.loaded[ws.ID+"/pii"], v2) {
		t.Fatalf("after a bad change: %d loads, loaded %q", host.loads-loads, host.loaded[ws.ID+"/pii"])
	}
	if stored, err := st.Plugins.Wasm(ws.ID, "pii"); err != nil || !bytes.Equal(stored, v2) {
		t.Fatalf("a module that did not load replaced the stored one: %q, %v", stored, err)
	}
	w.scan(ctx)
	if host.loads != loads+1 {
		t.Fatal("a file that did not load was tried again without a change")
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

// TestPluginWatcherWarnsOncePerChange scans a folder with problems again and again: each problem is logged once,
// when it appears or changes, and an error's text is not repeated within its line.
func TestPluginWatcherWarnsOncePerChange(t *testing.T) {
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
	quiet := slog.New(slog.DiscardHandler)
	engine, err := plugins.New(plugins.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(context.Background())
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "team-a"), 0o755)
	os.MkdirAll(filepath.Join(dir, "no-such-workspace"), 0o755)
	junk := filepath.Join(dir, "team-a", "junk.wasm")
	t0 := time.Now().Add(-time.Hour)
	os.WriteFile(junk, []byte("not a module"), 0o644)
	os.Chtimes(junk, t0, t0)
	os.WriteFile(filepath.Join(dir, "team-a", "Not An ID!.wasm"), []byte("x"), 0o644)

	var logs bytes.Buffer
	w := newPluginWatcher(dir, st, engine, control.New(st, nil, control.Options{Plugins: engine}), slog.New(slog.NewTextHandler(&logs, nil)))
	ctx := context.Background()
	count := func(msg string) int { return strings.Count(logs.String(), `msg="`+msg) }
	want := func(when string, n int, msgs ...string) {
		t.Helper()
		for _, msg := range msgs {
			if got := count(msg); got != n {
				t.Errorf("%s: %q logged %d times, want %d\n%s", when, msg, got, n, logs.String())
			}
		}
	}
	for range 5 {
		w.scan(ctx)
	}
	want("after 5 scans", 1, "folder names no workspace", "file name is not a valid plugin id", "plugin file refused")
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "plugin file refused") {
			if n := strings.Count(line, "invalid magic number"); n != 1 || strings.Contains(line, "400 invalid_request") {
				t.Errorf("the error is repeated or decorated (%d times): %s", n, line)
			}
		}
	}

	// A change is a new problem: one more line each.
	t1 := t0.Add(time.Minute)
	os.WriteFile(junk, []byte("still not a module"), 0o644)
	os.Chtimes(junk, t1, t1)
	os.Remove(filepath.Join(dir, "no-such-workspace"))
	w.scan(ctx)
	os.MkdirAll(filepath.Join(dir, "no-such-workspace"), 0o755)
	for range 3 {
		w.scan(ctx)
	}
	want("after the changes", 2, "folder names no workspace", "plugin file refused")
	want("after the changes", 1, "file name is not a valid plugin id")
	if _, err := st.Plugins.Get(ws.ID, "junk"); err == nil {
		t.Error("a refused file was stored")
	}
}
