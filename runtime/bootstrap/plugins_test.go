package bootstrap

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// TestApplyLoadsPluginsFirst applies files whose plugin modules go through Options.LoadPlugin: a module it
// refuses fails the file at its entry and is not stored, so a good stored module is never replaced by a bad
// one; an unchanged module is not loaded again.
func TestApplyLoadsPluginsFirst(t *testing.T) {
	st := newStore(t)
	dir := t.TempDir()
	good := wasmModule
	bad := append(slices.Clone(wasmModule), 0x00, 0x03, 0x01, 'x', 0x00) // a custom section: other bytes
	writeFile(t, dir, "good.wasm", good)
	writeFile(t, dir, "bad.wasm", bad)
	var loads []string
	opts := Options{LoadPlugin: func(workspaceID, id string, wasm []byte) error {
		loads = append(loads, id)
		if bytes.Equal(wasm, bad) {
			return gwerr.BadRequest("body", "plugin %q does not initialise: unreachable", id)
		}
		return nil
	}}
	doc := func(file string) string {
		return `{"plugins": [{"id": "pii", "wasm": "` + file + `"}]}`
	}

	if _, err := ApplyWith(st, mustParse(t, doc("good.wasm"), dir), opts); err != nil {
		t.Fatalf("ApplyWith(good): %v", err)
	}
	if !slices.Equal(loads, []string{"pii"}) {
		t.Fatalf("loads = %v", loads)
	}
	ws, err := st.Workspaces.Resolve("default")
	if err != nil {
		t.Fatal(err)
	}

	_, err = ApplyWith(st, mustParse(t, doc("bad.wasm"), dir), opts)
	ve := validationError(t, err)
	if _, ok := findProblem(ve.Problems, "plugins[0].wasm", "does not load", "does not initialise"); !ok {
		t.Fatalf("problems: %s", dumpProblems(ve.Problems))
	}
	if strings.Contains(ve.Error(), "400 invalid_request") {
		t.Errorf("the problem carries the engine's status: %s", ve.Error())
	}
	if stored, err := st.Plugins.Wasm(ws.ID, "pii"); err != nil || !bytes.Equal(stored, good) {
		t.Fatalf("a module that did not load replaced the stored one: %q, %v", stored, err)
	}

	loads = nil
	if res, err := ApplyWith(st, mustParse(t, doc("good.wasm"), dir), opts); err != nil || res.Changed != 0 {
		t.Fatalf("ApplyWith(good) again: %+v, %v", res, err)
	}
	if len(loads) != 0 {
		t.Errorf("an unchanged module was loaded again: %v", loads)
	}
}
