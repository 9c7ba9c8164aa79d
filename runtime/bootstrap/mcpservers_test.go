package bootstrap

import (
	"testing"

	"github.com/llmgw/gateway/runtime/netguard"
)

const mcpServersFile = `{"workspaces": [{"slug": "team"}],
 "mcp_servers": [
  {"id": "docs", "url": "https://mcp.example.com/mcp", "headers": {"authorization": "Bearer boot-token-1234"},
   "allow_tools": ["search"], "deny_tools": ["drop"], "cost_per_call": 0.02},
  {"id": "lan", "workspace": "team", "url": "http://192.168.10.5:8080/mcp"}]}`

// TestMCPServersApplied: entries are stored through the plane with canonical header names, and the same file
// applied again changes nothing.
func TestMCPServersApplied(t *testing.T) {
	st := newStore(t)
	f := mustParse(t, mcpServersFile, "")
	opts := Options{HostPolicy: &netguard.Policy{AllowPrivate: true}}
	for run, want := range []int{4, 0} { // default workspace, team, two servers; then nothing
		res, err := ApplyWith(st, f, opts)
		if err != nil {
			t.Fatal(err)
		}
		if res.Changed != want {
			t.Fatalf("run %d: %+v, want %d changes", run, res, want)
		}
	}
	def, _ := st.Workspaces.Resolve("default")
	srv, err := st.MCPServers.Get(def.ID, "docs")
	if err != nil || srv.Headers["Authorization"] != "Bearer boot-token-1234" || srv.AllowTools[0] != "search" || srv.DenyTools[0] != "drop" ||
		srv.CostPerCall != 0.02 {
		t.Fatalf("docs = %+v, %v", srv, err)
	}
	team, _ := st.Workspaces.Resolve("team")
	if _, err := st.MCPServers.Get(team.ID, "lan"); err != nil {
		t.Fatal(err)
	}
}

// TestMCPServersRefusedBeforeAnyWrite: a bad field fails at parse, naming it; a url the policy refuses fails
// Apply before anything is written, naming the entry's url.
func TestMCPServersRefusedBeforeAnyWrite(t *testing.T) {
	_, err := Parse([]byte(`{"mcp_servers": [{"id": "x", "url": "https://m.example.com", "headers": {"Host": "h.example.com"}},
		{"url": "gopher://m.example.com"}, {"id": "x", "url": "https://m.example.com", "extra": 1},
		{"id": "c1", "url": "https://m.example.com", "cost_per_call": -1}, {"id": "c2", "url": "https://m.example.com", "cost_per_call": "1"}]}`), "")
	ve := validationError(t, err)
	for _, want := range []struct{ path, word string }{
		{"mcp_servers[0].headers.Host", "cannot be set"}, {"mcp_servers[1].id", "required"},
		{"mcp_servers[1].url", "http or https"}, {"mcp_servers[2].extra", "unknown"}, {"mcp_servers[2].id", "duplicate"},
		{"mcp_servers[3].cost_per_call", "from 0 to 1000"}, {"mcp_servers[4].cost_per_call", "must be a number"},
	} {
		if _, ok := findProblem(ve.Problems, want.path, want.word); !ok {
			t.Errorf("no problem at %s (%s):%s", want.path, want.word, dumpProblems(ve.Problems))
		}
	}

	st := newStore(t)
	f := mustParse(t, mcpServersFile, "")
	ve = validationError(t, func() error { _, err := Apply(st, f); return err }())
	if _, ok := findProblem(ve.Problems, "mcp_servers[1].url", "192.168.10.5", "private"); !ok || len(ve.Problems) != 1 {
		t.Errorf("problems:%s", dumpProblems(ve.Problems))
	}
	if _, err := st.Workspaces.Resolve("team"); err == nil {
		t.Error("a workspace was written although the file was refused")
	}
}
