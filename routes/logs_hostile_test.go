package routes

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// TestLogTimesPastTheStampsRangeAreRefused: a stored entry's key holds its time in Unix nanoseconds, which an
// int64 holds up to 2262. A from or to past that wrapped around: /v1/logs?from=<year 36812> listed entries of
// 2027, and /v1/logs/stats counted them in a bucket outside the range asked for.
func TestLogTimesPastTheStampsRangeAreRefused(t *testing.T) {
	f := newFixture(t, Options{})
	var entries []*storage.LogEntry
	for i := range 10 {
		entries = append(entries, &storage.LogEntry{WorkspaceID: f.ws.ID, CreatedAt: time.Unix(1_800_000_000+int64(i), 0),
			Status: 200, Metadata: map[string]string{}})
	}
	if err := f.store.Logs.Append(entries); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, param string }{
		// 20160344079 s in nanoseconds wraps around to 2024: the range covered the entries above.
		{"/v1/logs/stats?from=20160344079&to=20246744079&bucket=86400", "from"},
		{"/v1/logs/stats?from=1099511623776&to=1099511627776", "from"},
		{"/v1/logs/stats?to=9223372037", "to"},
		{"/v1/logs?from=1099511623776", "from"},
		{"/v1/logs?to=9223372037", "to"},
		{"/v1/logs?from=-1", "from"},
		{"/v1/logs/stats?from=-9223372036854775808", "from"},
		{"/v1/logs/stats?to=9223372036854775807", "to"},
	} {
		checkError(t, f.do(t, "GET", tc.path, "", HeaderAPIKey, f.admin), 400, gwerr.CodeInvalidRequest, tc.param)
	}
	// The last second allowed still works, and counts nothing of 2027.
	last := storage.MaxLogUnix
	if s := f.stats(t, f.admin, fmt.Sprintf("from=%d&to=%d&bucket=86400", last-86400, last)); len(s.Data) != 0 {
		t.Errorf("stats at the end of the range: %+v", s.Data)
	}
	if ids, _, _, _ := (&logsFixture{fixture: f}).list(t, f.admin, fmt.Sprintf("from=%d", last)); len(ids) != 0 {
		t.Errorf("list from the end of the range: %v", ids)
	}
	if ids, _, _, _ := (&logsFixture{fixture: f}).list(t, f.admin, fmt.Sprintf("to=%d", last)); len(ids) != 10 {
		t.Errorf("list up to the end of the range: %d entries, want 10", len(ids))
	}
}

// TestStoredHookResultsAreBounded: the hook_results stored with every entry (bodies or not) come from the
// config's hooks and the checks' own messages: a guardrail of thousands of checks, or a plugin's long error,
// must not make each entry megabytes. The answer's own hook_results are the caller's, and not cut.
func TestStoredHookResultsAreBounded(t *testing.T) {
	long := strings.Repeat("<e>", 10<<10) // escaped by JSON, six bytes a '<'
	many := make([]guardrails.CheckResult, 5000)
	for i := range many {
		many[i] = guardrails.CheckResult{ID: "default.wordCount", Error: &long, Data: json.RawMessage(`{"words":1}`)}
	}
	hooks := make([]guardrails.HookResult, 2000)
	for i := range hooks {
		hooks[i] = guardrails.HookResult{ID: strings.Repeat("h", 1000), Type: long, Checks: many[:1]}
	}
	for name, h := range map[string]runtime.HookResults{
		"one hook, 5000 checks with long errors": {Before: []guardrails.HookResult{{ID: "g", Checks: many}}},
		"2000 hooks":                             {Before: hooks, After: hooks},
	} {
		t.Run(name, func(t *testing.T) {
			raw := loggedHookResults(&h, false)
			if len(raw) > maxLoggedHookResults {
				t.Fatalf("stored hook_results of %d bytes, more than %d", len(raw), maxLoggedHookResults)
			}
			var got struct {
				Before    []guardrails.HookResult `json:"before_request_hooks"`
				After     []guardrails.HookResult `json:"after_request_hooks"`
				Truncated bool                    `json:"truncated"`
			}
			if err := json.Unmarshal(raw, &got); err != nil || got.Before == nil || got.After == nil || !got.Truncated {
				t.Fatalf("stored hook_results %.200s: %v; want both lists and truncated", raw, err)
			}
			if len(got.Before) == 0 || got.Before[0].ID == "" {
				t.Errorf("the first hook was not kept: %.200s", raw)
			}
			if h.Before[0].Checks[0].Data == nil || *h.Before[0].Checks[0].Error != long {
				t.Error("the answer's own hook_results were changed")
			}
		})
	}
	// A usual one is stored whole, data left out, and not marked.
	msg := "boom"
	h := runtime.HookResults{Before: []guardrails.HookResult{{ID: "g", Verdict: true, Checks: []guardrails.CheckResult{{ID: "c", Error: &msg, Data: json.RawMessage(`{}`)}}}}}
	want := `{"before_request_hooks":[{"id":"g","verdict":true,"deny":false,"async":false,"type":"","execution_time":0,"checks":[{"id":"c","verdict":false,"data":null,"error":"boom","execution_time":0,"transformed":false}]}],"after_request_hooks":[]}`
	if got := string(loggedHookResults(&h, false)); got != want {
		t.Errorf("stored hook_results\n %s\nwant\n %s", got, want)
	}
}
