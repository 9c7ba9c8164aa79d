package conformance

import (
	"testing"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/internal/wasmtest"
)

// TestGoGuest runs the table against the Go conformance guest, built with sdk-guest.
func TestGoGuest(t *testing.T) {
	Run(t, wasmtest.Build(t, "testdata/goguest"))
}

// TestTable proves the table covers what the ABI promises: every check, the condition, an unknown check, every
// input field, a repeated metadata key, every JSON type of parameter, a 64 KiB text.
func TestTable(t *testing.T) {
	cases, err := Cases()
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]bool{}
	var conditions, repeated, big int
	fieldsSet := map[string]bool{}
	paramKinds := map[byte]bool{}
	for _, c := range cases {
		checks[c.Check] = true
		if c.Kind == "condition" {
			conditions++
		}
		in := c.HostInput()
		for name, v := range map[string]string{"text": in.Text, "model": in.Model, "stage": in.Stage,
			"endpoint": in.Endpoint, "tool": in.Tool, "mcp_server": in.MCPServer} {
			if v != "" {
				fieldsSet[name] = true
			}
		}
		keys := map[string]bool{}
		for _, kv := range in.Metadata {
			if keys[kv.Key] {
				repeated++
			}
			keys[kv.Key] = true
		}
		for _, kv := range in.Params {
			if v := trimSpace(kv.Value); v != "" {
				paramKinds[v[0]] = true
			}
		}
		if len(in.Text) >= 64<<10 {
			big++
		}
	}
	for _, name := range []string{"echo", "fail", "transform", "error", "field", "nope"} {
		if !checks[name] {
			t.Errorf("no case of check %q", name)
		}
	}
	if conditions == 0 || repeated == 0 || big == 0 {
		t.Errorf("conditions %d, repeated metadata keys %d, 64 KiB texts %d: want each", conditions, repeated, big)
	}
	if len(fieldsSet) != 6 {
		t.Errorf("input fields set in some case: %v, want all six", fieldsSet)
	}
	for _, first := range []byte(`"-0tfn[{`) { // string, numbers, true, false, null, array, object
		if !paramKinds[first] {
			t.Errorf("no parameter starting with %q", first)
		}
	}
}

func trimSpace(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t' || s[0] == '\n') {
		s = s[1:]
	}
	return s
}

// TestCompare proves the runner notices each kind of difference.
func TestCompare(t *testing.T) {
	yes, text, msg := true, "T", "boom"
	want := Want{Verdict: &yes, Data: []byte(`{"a": [1, 2]}`), TransformedText: &text}
	out := hostapi.NewOutput()
	out.Data = []byte(`{"a":[1,2]}`)
	out.SetTransformedText("T")
	if p := Compare(&want, &out); len(p) != 0 {
		t.Fatalf("equal outputs differ: %v", p)
	}
	out.Verdict, out.Data, out.Error = false, []byte(`{"a":[2,1]}`), "oops"
	out.SetTransformedText("t")
	if p := Compare(&want, &out); len(p) != 4 {
		t.Fatalf("want 4 problems (verdict, data, text, error), got %d: %v", len(p), p)
	}
	want = Want{ErrorContains: &msg, Match: &yes}
	out = hostapi.NewOutput()
	if p := Compare(&want, &out); len(p) != 2 {
		t.Fatalf("want 2 problems (error, match), got %d: %v", len(p), p)
	}
}
