package ratelimit

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/gateway/internal/testservices"
	"github.com/llmgw/gateway/runtime/jsoncheck"
	"github.com/llmgw/gateway/runtime/redisstate"
	"github.com/llmgw/gateway/storage"
)

// toolCall returns the attributes of a tool call of the env's workspace, as /mcp fills them.
func (e *env) toolCall(apiKey, server, tool string) *Attrs {
	return &Attrs{WorkspaceID: e.ws, APIKey: apiKey, ToolCall: true, MCPServer: server, Tool: tool}
}

// TestToolPoliciesAndModelPoliciesCountApart: a policy naming tool counts tool calls, each tool on its own
// counter, and never model requests; a policy without tool keys counts model requests and never tool calls.
func TestToolPoliciesAndModelPoliciesCountApart(t *testing.T) {
	e := newEnv(t)
	e.policy("requests", "rpm", 2, groupBy("api_key"))
	e.policy("requests", "rpm", 3, groupBy("tool"))

	search := e.toolCall("k1", "docs", "search")
	for range 3 {
		adm := e.admit(search)
		if limit, _, _, ok := adm.Headers(); !ok || limit != 3 {
			t.Fatalf("tool call headers: limit %v ok %v, want the tool policy's 3", limit, ok)
		}
	}
	if ex := e.refuse(search); ex.Limit != 3 || ex.Type != "requests" {
		t.Fatalf("refusal %+v, want the tool policy", ex)
	}
	e.admit(e.toolCall("k1", "docs", "fetch")) // another tool, another counter
	e.admit(e.toolCall("k2", "other", "fetch"))
	e.admit(e.toolCall("k2", "other", "fetch"))
	e.refuse(e.toolCall("k2", "other", "fetch")) // group_by tool alone: the same tool of any server

	// Five tool calls of k1 left the api_key policy untouched.
	model := e.req("k1")
	e.admit(model)
	adm := e.admit(model)
	if limit, remaining, _, _ := adm.Headers(); limit != 2 || remaining != 0 {
		t.Fatalf("model request headers: limit %v remaining %v, want 2 and 0", limit, remaining)
	}
	e.refuse(model)

	// A tool policy matches no model request, even one without conditions.
	only := newEnv(t)
	only.policy("requests", "rpm", 1, groupBy("mcp_server"))
	for range 3 {
		if adm := only.admit(only.req("k1")); adm.ok {
			t.Fatal("a model request matched a policy grouped by mcp_server")
		}
	}
	only.admit(only.toolCall("k1", "docs", "search"))
	only.refuse(only.toolCall("k1", "docs", "fetch"))
}

// TestToolConditions: conditions on mcp_server and tool select tool calls of that server or tool only.
func TestToolConditions(t *testing.T) {
	e := newEnv(t)
	e.policy("requests", "rph", 1, where("mcp_server", "x"))
	e.policy("requests", "rph", 2, where("tool", "write"), where("mcp_server", "y"))

	for range 5 {
		adm := e.admit(e.toolCall("k1", "z", "read"))
		if _, _, _, ok := adm.Headers(); ok {
			t.Fatal("a tool call of server z matched a policy")
		}
	}
	e.admit(e.toolCall("k1", "x", "read"))
	e.refuse(e.toolCall("k2", "x", "write"))
	e.admit(e.toolCall("k1", "y", "write"))
	e.admit(e.toolCall("k1", "y", "read")) // the tool condition fails: nothing counts y's reads
	e.admit(e.toolCall("k1", "y", "write"))
	e.refuse(e.toolCall("k1", "y", "write"))
	for range 3 {
		e.admit(e.req("k1")) // model requests match neither
	}
}

// TestToolPolicyMetadataAndKey: a tool policy may also condition on api_key and metadata, which tool calls carry.
func TestToolPolicyMetadataAndKey(t *testing.T) {
	e := newEnv(t)
	e.policy("requests", "rpm", 1, where("metadata.team", "a"), groupBy("mcp_server", "api_key"))
	a := e.toolCall("k1", "docs", "search")
	a.Metadata = map[string]string{"team": "a"}
	e.admit(a)
	e.refuse(a)
	b := e.toolCall("k2", "docs", "search")
	b.Metadata = a.Metadata
	e.admit(b)
	c := e.toolCall("k1", "docs", "search") // no metadata: the condition fails
	e.admit(c)
	e.admit(c)
}

// TestTokensToolPolicySkipped: a tokens policy naming a tool key, found in storage though the validators refuse
// it, is skipped with a warning: it limits neither tool calls nor model requests.
func TestTokensToolPolicySkipped(t *testing.T) {
	s := openStore(t, "")
	clk := newClock()
	logs := &syncBuffer{}
	l := New(s, Options{Now: clk.Now, FlushInterval: time.Hour, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	t.Cleanup(func() { l.Close() })
	e := &env{t: t, s: s, clk: clk, l: l, ws: storage.NewUUID()}
	e.policy("tokens", "rpm", 1, groupBy("tool"))
	for range 3 {
		adm := e.admit(e.toolCall("k1", "docs", "search"))
		if adm.CountsTokens() {
			t.Fatal("a tool call waits for tokens")
		}
		e.l.AddTokens(&adm, 100)
		adm = e.admit(e.req("k1"))
		e.l.AddTokens(&adm, 100)
	}
	if !strings.Contains(logs.String(), "a tokens policy cannot match mcp_server or tool") {
		t.Fatalf("log does not say why the policy is skipped:\n%s", logs)
	}
}

func TestToolKeysValidation(t *testing.T) {
	for _, k := range []string{"mcp_server", "tool"} {
		if err := CheckKey(k); err != nil {
			t.Errorf("CheckKey(%s) = %v", k, err)
		}
	}
	tests := []struct {
		name    string
		parse   func([]byte) error
		doc     string
		message string // "" for valid
	}{
		{"requests by tool", parseRate, `{"type": "requests", "unit": "rpm", "value": 5, "group_by": [{"key": "tool"}]}`, ""},
		{"requests on a server", parseRate, `{"type": "requests", "unit": "rpm", "value": 5,
			"conditions": [{"key": "mcp_server", "value": "docs"}]}`, ""},
		{"tokens by tool", parseRate, `{"type": "tokens", "unit": "rpm", "value": 5, "group_by": [{"key": "tool"}]}`,
			"a tokens policy cannot match mcp_server or tool: tool calls use no tokens; use type requests"},
		{"tokens on a server", parseRate, `{"type": "tokens", "unit": "rpm", "value": 5,
			"conditions": [{"key": "mcp_server", "value": "docs"}]}`, "use type requests"},
		{"cost by tool", parseUsage, `{"type": "cost", "credit_limit": 5, "group_by": [{"key": "tool"}]}`, ""},
		{"tokens budget on a server", parseUsage, `{"type": "tokens", "credit_limit": 5,
			"conditions": [{"key": "mcp_server", "value": "docs"}]}`,
			"a tokens policy cannot match mcp_server or tool: tool calls use no tokens; use type cost"},
		{"tokens budget by tool", parseUsage, `{"type": "tokens", "credit_limit": 5, "group_by": [{"key": "tool"}]}`, "use type cost"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.parse([]byte(tc.doc))
			if tc.message == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var pe *jsoncheck.Error
			if !errors.As(err, &pe) || len(pe.Problems) != 1 {
				t.Fatalf("err = %v, want one problem", err)
			}
			if p := pe.Problems[0]; p.Path != "type" || !strings.Contains(p.Message, tc.message) {
				t.Fatalf("problem %+v, want at type saying %q", p, tc.message)
			}
		})
	}
}

func parseRate(raw []byte) error {
	_, err := ParsePolicy(raw)
	return err
}

func parseUsage(raw []byte) error {
	_, err := ParseUsageLimit(raw)
	return err
}

func (e *benv) toolCall(server, tool string) *Attrs {
	return &Attrs{WorkspaceID: e.ws, APIKey: "k", ToolCall: true, MCPServer: server, Tool: tool}
}

func budgetWhere(k, v string) func(*storage.UsageLimitPolicy) {
	return func(p *storage.UsageLimitPolicy) {
		p.Conditions = append(p.Conditions, storage.PolicyMatch{Key: k, Value: v})
	}
}

// TestBudgetToolCost: a cost policy on a server admits calls of 0.02 while they fit 0.06, exactly three
// (0.02 + 0.02 + 0.02 is above 0.06 in binary), and refuses the fourth; calls not forwarded cost nothing; model
// requests and other servers' calls are not counted.
func TestBudgetToolCost(t *testing.T) {
	e := newBenv(t, nil, nil)
	p := e.policy("cost", 0.06, budgetWhere("mcp_server", "docs"))
	modelCost := e.policy("cost", 0.01) // a model policy: tool calls never reach it

	a := e.toolCall("docs", "search")
	h, ex := e.b.ReserveTool(a, 0.02)
	if ex != nil {
		t.Fatal(ex)
	}
	h.SettleTool(false) // refused by a guardrail: free
	if u := e.b.Usage(p); u.Current != 0 {
		t.Fatalf("spend %v after a call not forwarded, want 0", u.Current)
	}
	for i := range 3 {
		h, ex := e.b.ReserveTool(a, 0.02)
		if ex != nil {
			t.Fatalf("call %d refused: %v", i+1, ex)
		}
		h.SettleTool(true)
		h.SettleTool(true) // once only
	}
	_, ex = e.b.ReserveTool(a, 0.02)
	if ex == nil || ex.PolicyID != p.ID || ex.ToolCost != 0.02 || !strings.Contains(ex.Error(), "this tool call costs 0.02") {
		t.Fatalf("fourth call: %v, want refused by %s", ex, p.ID)
	}
	if _, ex := e.b.ReserveTool(a, 0); ex == nil {
		t.Fatal("a free call admitted by an exhausted budget")
	}
	if u := e.b.Usage(p); !u.Exhausted || u.Current < 0.06 || u.Current > 0.0600001 {
		t.Fatalf("usage %+v, want 0.06 exhausted", u)
	}
	if h, ex := e.b.ReserveTool(e.toolCall("other", "search"), 0.02); h != nil || ex != nil {
		t.Fatalf("another server's call: hold %v, refusal %v, want nothing matched", h, ex)
	}
	if u := e.b.Usage(modelCost); u.Current != 0 {
		t.Fatalf("the model policy counted %v", u.Current)
	}

	// A call that would pass the limit is refused before the limit is reached.
	q := e.policy("cost", 0.05, budgetWhere("tool", "big"))
	big := e.toolCall("any", "big")
	h, ex = e.b.ReserveTool(big, 0.02)
	if ex != nil {
		t.Fatal(ex)
	}
	h.SettleTool(true)
	h, ex = e.b.ReserveTool(big, 0.02)
	if ex != nil {
		t.Fatal(ex)
	}
	h.SettleTool(true)
	if _, ex = e.b.ReserveTool(big, 0.02); ex == nil || ex.PolicyID != q.ID {
		t.Fatalf("0.04 + 0.02 of 0.05: %v, want refused", ex)
	}
	h, ex = e.b.ReserveTool(big, 0.01) // still fits
	if ex != nil {
		t.Fatal(ex)
	}
	h.SettleTool(true)
}

// TestBudgetToolCallsAndModelRequestsApart: a cost policy without tool keys counts model requests only, and
// Reserve given a tool call reserves it as a free tool call.
func TestBudgetToolCallsAndModelRequestsApart(t *testing.T) {
	e := newBenv(t, nil, nil)
	tools := e.policy("cost", 1, budgetGroupBy("tool"))
	if h, ex := e.b.Reserve(e.attrs("k", tokensBody)); h != nil || ex != nil {
		t.Fatalf("a model request matched a tool policy: %v %v", h, ex)
	}
	h, ex := e.b.Reserve(e.toolCall("docs", "search"))
	if ex != nil || h == nil {
		t.Fatalf("Reserve of a tool call: %v %v, want held", h, ex)
	}
	h.SettleTool(true)
	// ReserveTool takes its Attrs as a tool call's even when ToolCall is not set.
	h, ex = e.b.ReserveTool(&Attrs{WorkspaceID: e.ws, Tool: "search"}, 0.5)
	if ex != nil || h == nil {
		t.Fatalf("ReserveTool without ToolCall: %v %v", h, ex)
	}
	h.SettleTool(true)
	if u := e.b.Usage(tools); u.Current != 0.5 {
		t.Fatalf("tool spend %v, want 0.5", u.Current)
	}
	if strings.Contains(e.logs.String(), "no price") {
		t.Fatalf("a tool call was reported as an unpriced model:\n%s", e.logs)
	}
}

// TestTokensBudgetWithToolKeySkipped: a tokens usage-limit naming a tool key is not enforced.
func TestTokensBudgetWithToolKeySkipped(t *testing.T) {
	e := newBenv(t, nil, nil)
	e.policy("tokens", 1, budgetGroupBy("tool"))
	for range 3 {
		h, ex := e.b.ReserveTool(e.toolCall("docs", "search"), 1)
		if ex != nil {
			t.Fatal(ex)
		}
		h.SettleTool(true)
	}
	if !strings.Contains(e.logs.String(), "a tokens policy cannot match mcp_server or tool") {
		t.Fatalf("log does not say why the policy is skipped:\n%s", e.logs)
	}
}

// TestBudgetToolConcurrent: 32 goroutines racing calls of 0.01 against 0.1 get exactly ten through, whether
// they hold their reservations or settle as they go.
func TestBudgetToolConcurrent(t *testing.T) {
	for _, settle := range []bool{false, true} {
		e := newBenv(t, nil, nil)
		p := e.policy("cost", 0.1, budgetWhere("mcp_server", "docs"))
		if n := raceToolCalls(e.b, e.toolCall("docs", "search"), 0.01, settle); n != 10 {
			t.Fatalf("settle %v: %d calls admitted, want 10", settle, n)
		}
		if u := e.b.Usage(p); settle && (u.Current < 0.0999999 || u.Current > 0.1000001) {
			t.Fatalf("spend %v, want 0.1", u.Current)
		}
	}
}

// raceToolCalls makes 32 goroutines reserve 4 calls each of cost, settling each forwarded at once when settle
// (else holding them to the end), and returns how many were admitted.
func raceToolCalls(b *Budgets, a *Attrs, cost float64, settle bool) int64 {
	const goroutines, each = 32, 4
	var admitted atomic.Int64
	var mu sync.Mutex
	var holds []*Hold
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				h, ex := b.ReserveTool(a, cost)
				if ex != nil {
					continue
				}
				admitted.Add(1)
				if settle {
					h.SettleTool(true)
				} else {
					mu.Lock()
					holds = append(holds, h)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for _, h := range holds {
		h.SettleTool(true)
	}
	return admitted.Load()
}

func TestAdmitToolAllocs(t *testing.T) {
	e := newEnv(t)
	e.policy("requests", "rpm", 1e15, groupBy("tool"))
	e.policy("requests", "rpm", 1e15, groupBy("api_key"))
	a := e.toolCall("k1", "docs", "search")
	e.admit(a)
	if n := testing.AllocsPerRun(1000, func() { e.admit(a) }); n != 0 {
		t.Fatalf("Admit of a tool call allocates %v times", n)
	}
}

// TestRedisToolRequestsAcrossReplicas: a tool policy counts the calls of both replicas in one shared counter per
// tool, and model requests do not touch it.
func TestRedisToolRequestsAcrossReplicas(t *testing.T) {
	url := testservices.RedisURL(t)
	r := newReplicas(t, 2, url, redisstate.Options{})
	r.policy("requests", "rpm", 3, groupBy("tool"))
	call := func(tool string) *Attrs {
		return &Attrs{WorkspaceID: r.ws, APIKey: "k1", ToolCall: true, MCPServer: "docs", Tool: tool}
	}
	for i := range 3 {
		if _, ex := r.ls[i%2].Admit(call("search")); ex != nil {
			t.Fatalf("call %d refused: %v", i+1, ex)
		}
	}
	for i, l := range r.ls {
		if _, ex := l.Admit(call("search")); ex == nil {
			t.Fatalf("replica %d admitted a fourth call", i)
		}
		if _, ex := l.Admit(call("fetch")); ex != nil {
			t.Fatalf("replica %d refused another tool: %v", i, ex)
		}
		if adm, ex := l.Admit(r.req("k1")); ex != nil || adm.ok {
			t.Fatalf("replica %d: a model request matched: %v %v", i, adm.ok, ex)
		}
	}
}

// TestRedisToolBudgetAcrossReplicas: tool-call spend settled on one replica reaches the other through Redis, and
// racing calls on one replica get exactly what fits.
func TestRedisToolBudgetAcrossReplicas(t *testing.T) {
	url := testservices.RedisURL(t)
	r := newReplicas(t, 2, url, redisstate.Options{})
	p := r.budget(0.06, func(p *storage.UsageLimitPolicy) {
		p.Type = "cost"
		p.GroupBy = []storage.PolicyGroup{{Key: "mcp_server"}}
	})
	a := &Attrs{WorkspaceID: r.ws, APIKey: "k1", ToolCall: true, MCPServer: "docs", Tool: "search"}
	for range 2 {
		h, ex := r.bs[0].ReserveTool(a, 0.02)
		if ex != nil {
			t.Fatal(ex)
		}
		h.SettleTool(true)
	}
	// Replica 1 sees 0.04 spent once the writes land: a call of 0.03 no longer fits, one of 0.02 does.
	waitFor(t, "replica 1 to see replica 0's spend", func() bool {
		h, ex := r.bs[1].ReserveTool(a, 0.03)
		h.SettleTool(false)
		return ex != nil
	})
	h, ex := r.bs[1].ReserveTool(a, 0.02)
	if ex != nil {
		t.Fatalf("replica 1 refused the call that fits: %v", ex)
	}
	h.SettleTool(true)
	waitFor(t, "replica 0 to see the budget spent", func() bool {
		h, ex := r.bs[0].ReserveTool(a, 0)
		h.SettleTool(false)
		return ex != nil
	})
	if u := r.bs[1].Usage(p); len(u.Groups) != 1 || !u.Groups[0].Exhausted {
		t.Fatalf("usage %+v, want the group exhausted", u)
	}

	other := &Attrs{WorkspaceID: r.ws, APIKey: "k1", ToolCall: true, MCPServer: "race", Tool: "search"}
	if n := raceToolCalls(r.bs[0], other, 0.01, true); n != 6 {
		t.Fatalf("%d racing calls of 0.01 admitted against 0.06, want 6", n)
	}
	if !r.bs[0].redis.Available() {
		t.Fatal("replica 0 fell back to local spend")
	}
}
