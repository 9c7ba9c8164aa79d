package main

import (
	"strings"
	"testing"
)

// TestCLIPluginKV: the plugin-kv noun sets from the command line and from a file, lists without values, gets
// the value, refuses a bad key naming it, and deletes.
func TestCLIPluginKV(t *testing.T) {
	f := newCLIFixture(t)
	f.mustRun(t, "plugin-kv", "set", "banned", "apollo")
	f.mustRun(t, "plugin-kv", "set", "long", "--file", writeTemp(t, "words.txt", "alpha\nbeta\n"))
	out := f.mustRun(t, "plugin-kv", "list")
	if !strings.Contains(out, "banned") || !strings.Contains(out, "long") || strings.Contains(out, "apollo") {
		t.Errorf("plugin-kv list:\n%s", out)
	}
	if out := f.mustRun(t, "plugin-kv", "get", "long", "--json"); !strings.Contains(out, `"value":"alpha\nbeta\n"`) || !strings.Contains(out, `"size":11`) {
		t.Errorf("plugin-kv get --json: %s", out)
	}
	if code, _, errOut := f.run(t, "plugin-kv", "set", "a b", "x"); code == 0 || !strings.Contains(errOut, "key") {
		t.Errorf("a key with a space: exit %d, %s", code, errOut)
	}
	if code, _, _ := f.run(t, "plugin-kv", "set", "banned"); code == 0 {
		t.Error("set without a value succeeded")
	}
	if out := f.mustRun(t, "plugin-kv", "delete", "banned"); out != "deleted banned\n" {
		t.Errorf("plugin-kv delete: %q", out)
	}
	if code, _, _ := f.run(t, "plugin-kv", "get", "banned"); code == 0 {
		t.Error("get after delete succeeded")
	}
}
