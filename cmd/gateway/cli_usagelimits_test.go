package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCLIUsageLimits manages a usage-limit policy through every verb of the usage-limits noun.
func TestCLIUsageLimits(t *testing.T) {
	f := newCLIFixture(t)
	out := f.mustRun(t, "usage-limits", "create", "--type", "cost", "--credit-limit", "100", "--alert-threshold", "80",
		"--periodic-reset", "monthly", "--name", "team", "--group-by", `[{"key": "api_key"}]`, "--json")
	var p map[string]any
	if err := json.Unmarshal([]byte(out), &p); err != nil || p["object"] != "policy_usage_limits" || p["credit_limit"] != 100.0 ||
		p["alert_threshold"] != 80.0 || p["periodic_reset"] != "monthly" || p["current_usage"] != 0.0 {
		t.Fatalf("create: %v %s", err, out)
	}
	id := p["id"].(string)
	list := f.mustRun(t, "usage-limits", "list")
	if lines := strings.Split(strings.TrimSpace(list), "\n"); len(lines) != 2 || !strings.Contains(lines[0], "CREDIT_LIMIT") ||
		!strings.Contains(lines[1], id) || !strings.Contains(lines[1], "team") {
		t.Fatalf("list:\n%s", list)
	}
	f.mustRun(t, "usage-limits", "update", id, "--credit-limit", "200")
	if got := f.mustRun(t, "usage-limits", "get", id, "--json"); !strings.Contains(got, `"credit_limit":200`) {
		t.Fatalf("get after update: %s", got)
	}
	if code, _, errOut := f.run(t, "usage-limits", "create", "--type", "cost", "--credit-limit", "-1"); code != 1 || !strings.Contains(errOut, "credit_limit") {
		t.Fatalf("a bad body: exit %d, stderr %s", code, errOut)
	}
	if code, _, _ := f.runAs(t, f.plain, "usage-limits", "delete", id); code != 1 {
		t.Fatal("a non-admin key deleted a usage-limit policy")
	}
	if out := f.mustRun(t, "usage-limits", "delete", id); out != "deleted "+id+"\n" {
		t.Fatalf("delete: %q", out)
	}
}
