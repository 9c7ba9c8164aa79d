package control

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

func wantStatus(t *testing.T, err error, status int, param string) {
	t.Helper()
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Status != status || ge.Param != param {
		t.Fatalf("error %v (%#v), want a %d naming %q", err, ge, status, param)
	}
}

// TestPluginKVValidation: each wrong key or body is a 400 naming "key" or "value" (unknown fields by their
// name), and nothing is stored.
func TestPluginKVValidation(t *testing.T) {
	f := newFixture(t, Options{})
	for _, tc := range []struct{ key, body, param string }{
		{"", `{"value": "x"}`, "key"},
		{"a/b", `{"value": "x"}`, "key"},
		{"a b", `{"value": "x"}`, "key"},
		{"é", `{"value": "x"}`, "key"},
		{strings.Repeat("k", MaxPluginKVKey+1), `{"value": "x"}`, "key"},
		{"k", `{}`, "value"},
		{"k", `{"value": null}`, "value"},
		{"k", `{"value": 3}`, "value"},
		{"k", `{"value": ["a"]}`, "value"},
		{"k", `{"value": "` + strings.Repeat("v", MaxPluginKVValue+1) + `"}`, "value"},
		{"k", `{"value": "x", "secret": true}`, "secret"},
		{"k", `["x"]`, ""},
	} {
		_, _, err := f.plane.PutPluginKV(ctx, f.caller, tc.key, []byte(tc.body))
		wantStatus(t, err, 400, tc.param)
	}
	for _, bad := range []string{"", "a/b"} {
		_, err := f.plane.GetPluginKV(ctx, f.caller, bad)
		wantStatus(t, err, 400, "key")
		wantStatus(t, f.plane.DeletePluginKV(ctx, f.caller, bad), 400, "key")
	}
	if all, _, _ := f.plane.ListPluginKV(ctx, f.caller, Page{}); len(all) != 0 {
		t.Fatalf("refused writes stored %+v", all)
	}
}

// TestPluginKVLifecycle: PUT creates then replaces (a value of exactly 1 MiB, multi-byte UTF-8 counted in
// bytes, is accepted), GET and the engine's read (the store's Lookup) see it, another workspace sees none of it, DELETE removes
// it and answers 404 after.
func TestPluginKVLifecycle(t *testing.T) {
	f := newFixture(t, Options{})
	e, created, err := f.plane.PutPluginKV(ctx, f.caller, "banned", []byte(`{"value": "alpha\nbeta"}`))
	if err != nil || !created || e.Value != "alpha\nbeta" {
		t.Fatalf("PUT = %+v, %v, %v", e, created, err)
	}
	if v, ok, err := f.store.PluginKV.Lookup(f.caller.WorkspaceID, "banned"); err != nil || !ok || string(v) != "alpha\nbeta" {
		t.Fatalf("PluginKV = %q, %v, %v", v, ok, err)
	}
	full := strings.Repeat("é", MaxPluginKVValue/2) // 2 bytes each
	if _, created, err := f.plane.PutPluginKV(ctx, f.caller, "banned", []byte(`{"value": "`+full+`"}`)); err != nil || created {
		t.Fatalf("replace with 1 MiB = %v, %v", created, err)
	}
	if v, _, _ := f.store.PluginKV.Lookup(f.caller.WorkspaceID, "banned"); string(v) != full {
		t.Fatalf("the engine reads %d bytes after the replace", len(v))
	}
	other := Caller{WorkspaceID: uuid.NewString(), KeyID: "key-2"}
	if _, err := f.plane.GetPluginKV(ctx, other, "banned"); err == nil {
		t.Fatal("another workspace reads the entry")
	}
	wantStatus(t, f.plane.DeletePluginKV(ctx, other, "banned"), 404, "")
	if _, ok, _ := f.store.PluginKV.Lookup(other.WorkspaceID, "banned"); ok {
		t.Fatal("the engine serves the entry to another workspace")
	}
	if err := f.plane.DeletePluginKV(ctx, f.caller, "banned"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := f.store.PluginKV.Lookup(f.caller.WorkspaceID, "banned"); ok {
		t.Fatal("the engine still serves a deleted entry")
	}
	_, err = f.plane.GetPluginKV(ctx, f.caller, "banned")
	wantStatus(t, err, 404, "")
	wantStatus(t, f.plane.DeletePluginKV(ctx, f.caller, "banned"), 404, "")
}

// TestPluginKVBounds: the 1001st key is a 409 naming "key" while replacing an existing key still works; values
// past 16 MiB together are a 409 naming "value", counting a replaced value once.
func TestPluginKVBounds(t *testing.T) {
	f := newFixture(t, Options{})
	for i := range MaxPluginKVEntries { // through the store: a thousand PUTs each listing the rest take long under -race
		if _, err := f.store.PluginKV.Put(&storage.PluginKVEntry{WorkspaceID: f.caller.WorkspaceID, Key: "k" + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := f.plane.PutPluginKV(ctx, f.caller, "one-more", []byte(`{"value": ""}`))
	wantStatus(t, err, 409, "key")
	if _, _, err := f.plane.PutPluginKV(ctx, f.caller, "k0", []byte(`{"value": "replaced"}`)); err != nil {
		t.Fatalf("replacing a key at the count bound: %v", err)
	}

	g := newFixture(t, Options{})
	mib := []byte(`{"value": "` + strings.Repeat("v", MaxPluginKVValue) + `"}`)
	for i := range MaxPluginKVBytes / MaxPluginKVValue {
		if _, _, err := g.plane.PutPluginKV(ctx, g.caller, "big"+strconv.Itoa(i), mib); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err = g.plane.PutPluginKV(ctx, g.caller, "one-byte", []byte(`{"value": "x"}`))
	wantStatus(t, err, 409, "value")
	if _, _, err := g.plane.PutPluginKV(ctx, g.caller, "big0", mib); err != nil {
		t.Fatalf("replacing a value at the size bound: %v", err)
	}
}
