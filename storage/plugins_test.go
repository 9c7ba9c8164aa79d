package storage

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"
)

// TestPluginLoadError marks a stored module as failing to load: the mark sticks to those bytes only (a mark for
// other bytes changes nothing), keeps the update time, and storing the plugin again clears it.
func TestPluginLoadError(t *testing.T) {
	clk := newFakeClock()
	s := openTest(t, nil, clk)
	ws := NewUUID()
	wasm := []byte("\x00asm\x01\x00\x00\x00 module")
	sum := sha256.Sum256(wasm)
	meta, _, err := s.Plugins.Put(ws, "p", wasm)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if err := s.Plugins.SetLoadError(ws, "p", "0123", "not these bytes"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Plugins.Get(ws, "p"); got.LoadError != "" {
		t.Fatalf("a mark for other bytes was kept: %+v", got)
	}
	if err := s.Plugins.SetLoadError(ws, "p", hex.EncodeToString(sum[:]), "does not initialise"); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Plugins.Get(ws, "p")
	if got.LoadError != "does not initialise" || !got.UpdatedAt.Equal(meta.UpdatedAt) {
		t.Fatalf("after SetLoadError: %+v (updated %v before)", got, meta.UpdatedAt)
	}
	if list, _ := s.Plugins.List(ws); len(list) != 1 || list[0].LoadError == "" {
		t.Fatalf("List: %+v", list)
	}
	if _, changed, err := s.Plugins.Put(ws, "p", wasm); err != nil || !changed {
		t.Fatalf("Put again: changed %v, %v", changed, err)
	}
	if got, _ := s.Plugins.Get(ws, "p"); got.LoadError != "" {
		t.Fatalf("Put kept the mark: %+v", got)
	}
	if err := s.Plugins.SetLoadError(ws, "gone", hex.EncodeToString(sum[:]), "x"); err != nil {
		t.Fatalf("SetLoadError of a missing plugin: %v", err)
	}
}

// TestPluginStage keeps an upload's module for the other replicas until the upload is done, and refuses bad IDs.
func TestPluginStage(t *testing.T) {
	s := openTest(t, nil, newFakeClock())
	ws := NewUUID()
	wasm := []byte("\x00asm\x01\x00\x00\x00 staged")
	if _, err := s.Plugins.Staged(ws, "p"); err != ErrNotFound {
		t.Fatalf("nothing staged: %v", err)
	}
	if err := s.Plugins.Stage(ws, "p", wasm); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Plugins.Staged(ws, "p"); err != nil || string(got) != string(wasm) {
		t.Fatalf("staged: %q %v", got, err)
	}
	if _, err := s.Plugins.Get(ws, "p"); err != ErrNotFound {
		t.Fatalf("a staged module is not a stored plugin: %v", err)
	}
	if err := s.Plugins.Unstage(ws, "p"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Plugins.Staged(ws, "p"); err != ErrNotFound {
		t.Fatalf("unstaged: %v", err)
	}
	if err := s.Plugins.Stage(ws, "../x", wasm); err == nil {
		t.Fatal("a bad plugin id was staged")
	}
}
