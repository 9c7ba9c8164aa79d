package control

import (
	"bytes"
	"context"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// fakeHost loads any module that starts with the wasm magic.
type fakeHost struct{ removed []string }

func (h *fakeHost) Validate(_ context.Context, wasm []byte) error {
	if !bytes.HasPrefix(wasm, []byte("\x00asm")) {
		return gwerr.BadRequest("body", "not a WebAssembly module")
	}
	return nil
}

func (h *fakeHost) Install(_ context.Context, _, _ string, _ []byte, save func() error) error {
	return save()
}

func (h *fakeHost) Remove(ws, id string) bool {
	h.removed = append(h.removed, ws+"/"+id)
	return true
}

func module(b []byte) func() ([]byte, error) { return func() ([]byte, error) { return b, nil } }

// Deleting a plugin unloads it and drops the engine's compiled hooks, which may have accepted checks that name
// it: the caller of DeletePlugin has nothing else to remember.
func TestDeletePluginForgetsCompiledHooks(t *testing.T) {
	host := &fakeHost{}
	f := newFixture(t, Options{Plugins: host})
	if _, err := f.plane.PutPlugin(ctx, f.caller, "pii", module([]byte("\x00asm\x01\x00\x00\x00"))); err != nil {
		t.Fatal(err)
	}
	if err := f.plane.DeletePlugin(ctx, f.caller, "pii"); err != nil {
		t.Fatal(err)
	}
	if f.hooks.forgot != 1 || len(host.removed) != 1 {
		t.Fatalf("after a delete: compiled hooks forgotten %d times, plugins removed %v", f.hooks.forgot, host.removed)
	}
	if err := f.plane.DeletePlugin(ctx, f.caller, "pii"); status(err) != 404 {
		t.Fatalf("deleting it again: %v, want a 404", err)
	}
}

// The engine and the id are checked before the body is read, so that their refusals come first.
func TestPutPluginChecksBeforeReadingTheBody(t *testing.T) {
	read := func() ([]byte, error) {
		t.Error("the body was read")
		return nil, nil
	}
	if _, err := newFixture(t, Options{}).plane.PutPlugin(ctx, Caller{}, "pii", read); status(err) != 503 {
		t.Errorf("without an engine: %v, want a 503", err)
	}
	f := newFixture(t, Options{Plugins: &fakeHost{}})
	if _, err := f.plane.PutPlugin(ctx, f.caller, "a/b", read); status(err) != 400 {
		t.Errorf("a bad id: %v, want a 400", err)
	}
}
