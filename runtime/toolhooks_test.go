package runtime

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/llmgw/gateway/guardrails"
)

// Checks read a tool call by path: its names, its arguments (decoded once), its metadata.
func TestToolCallViewField(t *testing.T) {
	v := &ToolCallView{Tool: "read_file", MCPServer: "files", Arguments: json.RawMessage(`{"path":"/a","opts":{"n":[1,2]}}`),
		Metadata: map[string]string{"agent": "a1"}}
	for path, want := range map[string]string{
		"tool": `"read_file"`, "mcp_server": `"files"`, "arguments.path": `"/a"`, "arguments.opts.n.1": "2",
		"arguments": `{"path":"/a","opts":{"n":[1,2]}}`, "metadata.agent": `"a1"`,
	} {
		if got, ok := v.Field(path); !ok || string(got) != want {
			t.Errorf("Field(%q) = %s, %v; want %s", path, got, ok, want)
		}
	}
	for _, path := range []string{"arguments.nope", "metadata.nope", "params.model", "arguments.opts.n.7", ""} {
		if got, ok := v.Field(path); ok {
			t.Errorf("Field(%q) = %s, want none", path, got)
		}
	}
	bad := &ToolCallView{Arguments: json.RawMessage(`not json`)}
	if _, ok := bad.Field("arguments.x"); ok {
		t.Error("arguments that are not JSON answered a field")
	}
}

// Inline configs vary without end: the compiled tool hook sets stay within maxHookSets.
func TestToolHooksCacheBounded(t *testing.T) {
	e := New(nil, Options{Logger: slog.New(slog.DiscardHandler)})
	for i := range maxHookSets + 10 {
		cfg := fmt.Sprintf(`{"before_tool_call": [{"id": "h%d", "checks": [{"id": "default.contains", "parameters": {"operator": "none", "words": ["x"]}}]}]}`, i)
		set, err := e.ToolHooks("ws-1", cfg)
		if err != nil || !set.Has(guardrails.StageBefore) {
			t.Fatalf("config %d: %v", i, err)
		}
	}
	n := 0
	e.hookSets.m.Range(func(any, any) bool { n++; return true })
	if n > maxHookSets {
		t.Errorf("%d compiled sets kept, more than %d", n, maxHookSets)
	}
}
