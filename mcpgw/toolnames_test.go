package mcpgw

import (
	"strings"
	"testing"

	"github.com/llmgw/gateway/storage"
)

// A call must name a tool its server lists, exactly: made-up names and case variants reach no server, with or
// without a tools/list before.
func TestCallNamesAListedTool(t *testing.T) {
	up := newUpstream(t, []string{"echo"}, nil)
	reg := &registry{}
	reg.add(&storage.MCPServer{ID: "up", WorkspaceID: "ws-one", URL: up.srv.URL})
	cs := connect(t, newFront(t, reg), "gw-key-one-5d1f")
	for _, name := range []string{"up__ECHO", "up__echo2", "up__ echo", "up__nope"} {
		if _, err := call(t, cs, name, nil); err == nil || !strings.Contains(err.Error(), "unknown tool") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n := up.callCount(); n != 0 {
		t.Fatalf("made-up names reached the server %d times", n)
	}
	if res, err := call(t, cs, "up__echo", map[string]int{"n": 1}); err != nil || res.IsError {
		t.Fatalf("listed tool: %v %+v", err, res)
	}
	if names := toolNames(t, cs); len(names) != 1 {
		t.Fatalf("tools: %v", names)
	}
	if _, err := call(t, cs, "up__Echo", nil); err == nil || up.callCount() != 1 {
		t.Errorf("a case variant after tools/list: %v, %d calls", err, up.callCount())
	}
}
