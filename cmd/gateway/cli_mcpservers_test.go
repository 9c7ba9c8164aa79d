package main

import (
	"strings"
	"testing"
)

// TestCLIMCPServers: the mcp-servers noun creates from flags and from a file, lists and gets with header values
// masked, replaces keeping a masked header, and deletes.
func TestCLIMCPServers(t *testing.T) {
	f := newCLIFixture(t)
	const token = "Bearer cli-mcp-token-51ab"
	f.mustRun(t, "mcp-servers", "create", "--id", "docs", "--url", "https://mcp.example.com/mcp",
		"--headers", `{"Authorization": "`+token+`"}`, "--allow-tools", `["search"]`, "--cost-per-call", "0.02")
	if out := f.mustRun(t, "mcp-servers", "get", "docs", "--json"); !strings.Contains(out, `"cost_per_call":0.02`) {
		t.Errorf("created with --cost-per-call: %s", out)
	}
	if code, _, errOut := f.run(t, "mcp-servers", "create", "--id", "neg", "--url", "https://mcp.example.com/mcp",
		"--cost-per-call", "-1"); code == 0 || !strings.Contains(errOut, "cost_per_call") {
		t.Errorf("a negative --cost-per-call: exit %d, %s", code, errOut)
	}
	f.mustRun(t, "mcp-servers", "create", "-f", writeTemp(t, "s.json", `{"id": "local", "url": "http://127.0.0.1:9/mcp"}`))
	out := f.mustRun(t, "mcp-servers", "list")
	if !strings.Contains(out, "docs") || !strings.Contains(out, "local") || !strings.Contains(out, "51ab") || strings.Contains(out, "cli-mcp-token") {
		t.Errorf("mcp-servers list:\n%s", out)
	}
	f.mustRun(t, "mcp-servers", "put", "docs", "-f", writeTemp(t, "p.json",
		`{"url": "https://mcp.example.com/v2", "headers": {"Authorization": "…51ab"}, "deny_tools": ["drop"]}`))
	out = f.mustRun(t, "mcp-servers", "get", "docs", "--json")
	if !strings.Contains(out, `"url":"https://mcp.example.com/v2"`) || !strings.Contains(out, `"Authorization":"…51ab"`) ||
		!strings.Contains(out, `"deny_tools":["drop"]`) || strings.Contains(out, "cli-mcp-token") {
		t.Errorf("mcp-servers get --json: %s", out)
	}
	if code, _, errOut := f.run(t, "mcp-servers", "create", "--id", "meta", "--url", "http://169.254.169.254/"); code == 0 || !strings.Contains(errOut, "url") {
		t.Errorf("a metadata url: exit %d, %s", code, errOut)
	}
	if out := f.mustRun(t, "mcp-servers", "delete", "docs"); out != "deleted docs\n" {
		t.Errorf("mcp-servers delete: %q", out)
	}
	if code, _, _ := f.run(t, "mcp-servers", "get", "docs"); code == 0 {
		t.Error("get after delete succeeded")
	}
}
