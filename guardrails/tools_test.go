package guardrails

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime/gwerr"
)

// Tool hooks are shaped like request hooks, name their own lists in errors, and may deny on either side.
func TestCompileTools(t *testing.T) {
	before := []json.RawMessage{json.RawMessage(`{"id": "no-rm", "checks": [{"id": "default.contains", "parameters": {"operator": "none", "words": ["rm -rf"]}}], "on_fail": {"deny": true}}`)}
	after := []json.RawMessage{json.RawMessage(`{"id": "no-key", "async": false, "checks": [{"id": "default.regexMatch", "parameters": {"rule": "sk-[a-z]+", "not": true}}], "on_fail": {"deny": true}}`)}
	set, err := CompileTools("ws", "", before, after, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if out := set.Run(ctx, StageBefore, &hostapi.Input{Text: `{"cmd":"rm -rf /"}`}, nil); !out.Deny || out.Results[0].ID != "no-rm" {
		t.Errorf("before: %+v", out)
	}
	if out := set.Run(ctx, StageBefore, &hostapi.Input{Text: `{"cmd":"ls"}`}, nil); out.Deny || out.Failed {
		t.Errorf("before, clean: %+v", out)
	}
	if out := set.Run(ctx, StageAfter, &hostapi.Input{Text: "key sk-abc"}, nil); !out.Deny || out.Results[0].ID != "no-key" {
		t.Errorf("after: %+v", out)
	}
	for _, tc := range []struct {
		before, after string
		param         string
	}{
		{`{"id": "x", "checks": [{"id": "default.nope", "parameters": {}}]}`, "", "before_tool_call[0].checks[0].id"},
		{"", `{"id": "x", "checks": [], "unknown": 1}`, "after_tool_call[0].unknown"},
		{`{"id": "x", "async": true, "checks": []}`, "", "before_tool_call[0].async"},
	} {
		var b, a []json.RawMessage
		if tc.before != "" {
			b = []json.RawMessage{json.RawMessage(tc.before)}
		}
		if tc.after != "" {
			a = []json.RawMessage{json.RawMessage(tc.after)}
		}
		_, err := CompileTools("ws", "", b, a, nil, nil)
		var ge *gwerr.Error
		if !errors.As(err, &ge) || ge.Param != tc.param {
			t.Errorf("%s%s: %v, want an error naming %s", tc.before, tc.after, err, tc.param)
		}
		if v := ValidateToolHook(json.RawMessage(tc.before+tc.after), "item", tc.after != ""); v == nil && tc.param != "" {
			t.Errorf("ValidateToolHook accepted %s%s", tc.before, tc.after)
		}
	}
}
