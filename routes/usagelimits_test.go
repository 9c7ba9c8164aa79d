package routes

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/ratelimit"
	"github.com/llmgw/gateway/storage"
)

const usageLimitsPath = "/v1/policies/usage-limits"

// newBudgetFixture is a fixture whose engine enforces usage-limit policies on clock.
func newBudgetFixture(t *testing.T) (*fixture, *testClock, *ratelimit.Budgets) {
	clock := &testClock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	var budgets *ratelimit.Budgets
	f := newFixtureWith(t, Options{}, func(st *storage.Store) runtime.Options {
		budgets = ratelimit.NewBudgets(st, ratelimit.BudgetOptions{Now: clock.Now, FlushInterval: time.Hour,
			Logger: slog.New(slog.DiscardHandler)})
		t.Cleanup(func() { budgets.Close() })
		return runtime.Options{Budgets: budgets, Now: clock.Now}
	})
	return f, clock, budgets
}

func (f *fixture) newUsageLimit(t *testing.T, body string) map[string]any {
	t.Helper()
	a := f.policyJSON(t, "POST", usageLimitsPath, f.admin, body)
	if a.status != 200 {
		t.Fatalf("POST %s %s: %d %s", usageLimitsPath, body, a.status, a.body)
	}
	return a.json(t)
}

func (f *fixture) usageLimit(t *testing.T, id string) map[string]any {
	t.Helper()
	a := f.do(t, "GET", usageLimitsPath+"/"+id, "", HeaderAPIKey, f.plain)
	if a.status != 200 {
		t.Fatalf("GET %s: %d %s", id, a.status, a.body)
	}
	return a.json(t)
}

func TestUsageLimitEndpoints(t *testing.T) {
	f, _, _ := newBudgetFixture(t)
	p := f.newUsageLimit(t, `{"name": "team", "type": "cost", "credit_limit": 25.5, "alert_threshold": 20,
		"periodic_reset": "weekly", "group_by": [{"key": "metadata.team"}]}`)
	want := []string{"alert_threshold", "conditions", "created_at", "credit_limit", "current_usage", "group_by", "id",
		"last_updated_at", "name", "object", "organisation_id", "period_end", "period_start", "periodic_reset", "status",
		"type", "usage_by_group", "workspace_id"}
	for _, k := range want {
		if _, ok := p[k]; !ok {
			t.Errorf("view lacks %q: %v", k, p)
		}
	}
	if len(p) != len(want) || p["object"] != "policy_usage_limits" || p["status"] != "active" || p["workspace_id"] != f.ws.ID ||
		p["current_usage"] != 0.0 || p["period_start"] == nil {
		t.Fatalf("view %v", p)
	}
	id := p["id"].(string)
	// The week of 2026-11-22 (a Sunday) began on Monday 2026-11-16.
	if got := int64(p["period_start"].(float64)); got != time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC).Unix() {
		t.Fatalf("period_start %d", got)
	}

	// A view sent back changed is accepted: read-only fields are ignored.
	p["credit_limit"] = 30
	p["periodic_reset"] = nil
	raw, _ := json.Marshal(p)
	body := string(raw)
	a := f.policyJSON(t, "PUT", usageLimitsPath+"/"+id, f.admin, body)
	if a.status != 200 {
		t.Fatalf("PUT: %d %s", a.status, a.body)
	}
	if got := a.json(t); got["credit_limit"] != 30.0 || got["periodic_reset"] != nil || got["period_start"] != nil {
		t.Fatalf("updated %v", got)
	}
	list := f.do(t, "GET", usageLimitsPath+"?type=cost&page_size=10", "", HeaderAPIKey, f.plain).json(t)
	if list["total"] != 1.0 || len(list["data"].([]any)) != 1 {
		t.Fatalf("list %v", list)
	}
	checkError(t, f.do(t, "GET", usageLimitsPath+"?status=paused", "", HeaderAPIKey, f.plain), 400, "invalid_request", "status")

	// Writes need an admin key.
	checkError(t, f.policyJSON(t, "POST", usageLimitsPath, f.plain, `{"type": "cost", "credit_limit": 1}`), 403, "forbidden", nil)
	checkError(t, f.policyJSON(t, "DELETE", usageLimitsPath+"/"+id, f.plain, ""), 403, "forbidden", nil)
	// Validation names the field.
	checkError(t, f.policyJSON(t, "POST", usageLimitsPath, f.admin, `{"type": "cost", "credit_limit": -1}`), 400, "invalid_request", "credit_limit")
	checkError(t, f.policyJSON(t, "POST", usageLimitsPath, f.admin, `{"type": "cost", "credit_limit": 5, "alert_threshold": 9}`), 400, "invalid_request", "alert_threshold")
	checkError(t, f.policyJSON(t, "POST", usageLimitsPath, f.admin, `{"type": "cost", "credit_limit": 5, "periodic_reset": "yearly"}`), 400, "invalid_request", "periodic_reset")
	checkError(t, f.do(t, "GET", usageLimitsPath+"/nope", "", HeaderAPIKey, f.plain), 400, "invalid_request", "usageLimitsPolicyId")

	// Another workspace's policy id is a 404.
	a = f.do(t, "POST", usageLimitsPath, `{"type": "tokens", "credit_limit": 5}`, HeaderAPIKey, f.otherKey, "Content-Type", "application/json")
	if a.status != 200 {
		t.Fatalf("other workspace's create: %d %s", a.status, a.body)
	}
	theirs := a.json(t)["id"].(string)
	checkError(t, f.do(t, "GET", usageLimitsPath+"/"+theirs, "", HeaderAPIKey, f.plain), 404, "not_found", nil)
	checkError(t, f.policyJSON(t, "PUT", usageLimitsPath+"/"+theirs, f.admin, `{"credit_limit": 1}`), 404, "not_found", nil)
	checkError(t, f.policyJSON(t, "DELETE", usageLimitsPath+"/"+theirs, f.admin, ""), 404, "not_found", nil)

	if a := f.policyJSON(t, "DELETE", usageLimitsPath+"/"+id, f.admin, ""); a.status != 200 || a.json(t)["deleted"] != true {
		t.Fatalf("DELETE: %d %s", a.status, a.body)
	}
	checkError(t, f.do(t, "GET", usageLimitsPath+"/"+id, "", HeaderAPIKey, f.plain), 404, "not_found", nil)
	// The rate-limit routes beside these still answer for themselves.
	if a := f.do(t, "GET", policiesPath, "", HeaderAPIKey, f.plain); a.status != 200 {
		t.Fatalf("rate limits list: %d", a.status)
	}
}

// hammerAnswer is an upstream answer using 50 input and 100 output tokens, at most the reservation of
// hammerBody (its length, over 50, plus its max_tokens 100).
const hammerAnswer = `{"id":"chatcmpl-h","object":"chat.completion","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":100,"total_tokens":150}}`

const hammerBody = `{"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":"Hi"}]}`

// TestBudgetHammer sends 100 concurrent requests through the HTTP server against a tokens budget: the persisted
// spend passes the limit by at most one request's reservation, and the refused requests got 429
// budget_exceeded without reaching the upstream.
func TestBudgetHammer(t *testing.T) {
	f, _, budgets := newBudgetFixture(t)
	base, _ := f.serve(t)
	up := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ int64) {
		time.Sleep(2 * time.Millisecond) // requests overlap
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, hammerAnswer)
	})
	reservation := float64(len(hammerBody) + 100)
	limit := 1500.0 // ten answers
	p := f.newUsageLimit(t, fmt.Sprintf(`{"type": "tokens", "credit_limit": %v}`, limit))
	id := p["id"].(string)

	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(hammerBody))
			for i, h := 0, append([]string{HeaderAPIKey, f.plain, "Content-Type", "application/json"}, upstreamHeaders(up)...); i+1 < len(h); i += 2 {
				req.Header.Set(h[i], h[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case resp.StatusCode == 200:
				ok.Add(1)
			case resp.StatusCode == 429 && strings.Contains(string(body), `"code":"budget_exceeded"`) && strings.Contains(string(body), id):
				refused.Add(1)
			default:
				t.Errorf("answer %d %s", resp.StatusCode, body)
			}
		})
	}
	wg.Wait()
	if ok.Load()+refused.Load() != 100 || refused.Load() == 0 {
		t.Fatalf("%d answered, %d refused", ok.Load(), refused.Load())
	}
	if up.calls.Load() != ok.Load() {
		t.Fatalf("upstream called %d times for %d answers: a refused request reached it", up.calls.Load(), ok.Load())
	}
	if err := budgets.Close(); err != nil { // saves the spend
		t.Fatal(err)
	}
	recs, err := f.store.BudgetSpend.List(f.ws.ID, id, 0)
	if err != nil || len(recs) != 1 {
		t.Fatalf("saved spend %v %v", recs, err)
	}
	spent := recs[0].Spend
	// Requests refused while others held reservations may leave the spend below the limit; never above it by
	// more than one reservation.
	if spent != float64(ok.Load())*150 || spent > limit+reservation {
		t.Fatalf("spend %v after %d answers; want at most %v", spent, ok.Load(), limit+reservation)
	}
	if v := f.usageLimit(t, id); v["status"] != map[bool]string{true: "exhausted", false: "active"}[spent >= limit] || v["current_usage"] != spent {
		t.Fatalf("view %v", v)
	}
}

func TestBudgetCostFromTheCatalogue(t *testing.T) {
	f, _, _ := newBudgetFixture(t)
	openai := newUpstream(t, nil) // chatAnswer: 5 input, 2 output tokens
	anthropic := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ int64) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1000,"output_tokens":200}}`)
	})
	id := f.newUsageLimit(t, `{"type": "cost", "credit_limit": 1, "group_by": [{"key": "provider"}]}`)["id"].(string)
	if a := f.chat(t, `{"model":"gpt-4o","messages":[{"role":"user","content":"Hi"}]}`, upstreamHeaders(openai)...); a.status != 200 {
		t.Fatalf("openai: %d %s", a.status, a.body)
	}
	a := f.chat(t, `{"model":"claude-sonnet-4-5","max_tokens":300,"messages":[{"role":"user","content":"Hi"}]}`,
		HeaderProvider, "anthropic", "Authorization", "Bearer sk-ant", HeaderCustomHost, anthropic.URL+"/v1")
	if a.status != 200 {
		t.Fatalf("anthropic: %d %s", a.status, a.body)
	}
	gpt4o := (5*2.5 + 2*10) / 1e6     // openai gpt-4o: $2.50 / $10 per million
	claude := (1000*3 + 200*15) / 1e6 // anthropic claude-sonnet-4-5: $3 / $15 per million
	v := f.usageLimit(t, id)
	if got := v["current_usage"].(float64); math.Abs(got-(gpt4o+claude)) > 1e-12 {
		t.Fatalf("current_usage %v, want %v", got, gpt4o+claude)
	}
	groups := v["usage_by_group"].([]any)
	if len(groups) != 2 {
		t.Fatalf("usage_by_group %v", groups)
	}
	first := groups[0].(map[string]any)
	if first["group"].(map[string]any)["provider"] != "anthropic" || math.Abs(first["usage"].(float64)-claude) > 1e-12 || first["exhausted"] != false {
		t.Fatalf("largest group %v", first)
	}
}

func TestBudgetExhaustedRefusesBeforeTheProvider(t *testing.T) {
	f, clock, _ := newBudgetFixture(t)
	up := newUpstream(t, nil) // 7 tokens an answer
	id := f.newUsageLimit(t, `{"type": "tokens", "credit_limit": 7, "periodic_reset": "monthly", "alert_threshold": 5}`)["id"].(string)
	h := upstreamHeaders(up)
	if a := f.chat(t, chatBody, h...); a.status != 200 {
		t.Fatalf("first: %d %s", a.status, a.body)
	}
	if v := f.usageLimit(t, id); v["status"] != "exhausted" || v["current_usage"] != 7.0 {
		t.Fatalf("view %v", v)
	}
	a := f.chat(t, chatBody, h...)
	checkError(t, a, 429, "budget_exceeded", nil)
	if !strings.Contains(string(a.body), id) || !strings.Contains(string(a.body), "allows 7 tokens") {
		t.Fatalf("message does not name the policy and its limit: %s", a.body)
	}
	if up.calls.Load() != 1 {
		t.Fatalf("upstream called %d times", up.calls.Load())
	}
	clock.Advance(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Sub(clock.Now())) // the next month
	if a := f.chat(t, chatBody, h...); a.status != 200 {
		t.Fatalf("after the reset: %d %s", a.status, a.body)
	}
	if v := f.usageLimit(t, id); v["current_usage"] != 7.0 || v["period_start"] != float64(clock.Now().Unix()) {
		t.Fatalf("view after reset %v", v)
	}
}

func TestBudgetFailedRequestReleasesItsReservation(t *testing.T) {
	f, _, _ := newBudgetFixture(t)
	fail := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ int64) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(500)
		io.WriteString(w, `{"error":{"message":"boom"}}`)
	})
	// Room for one reservation only: while one is held, every other request is refused.
	body := `{"model":"m","max_tokens":10,"messages":[]}`
	id := f.newUsageLimit(t, fmt.Sprintf(`{"type": "tokens", "credit_limit": %d}`, len(body)+10))["id"].(string)
	for i := range 3 {
		if a := f.chat(t, body, upstreamHeaders(fail)...); a.status != 500 {
			t.Fatalf("request %d: %d %s (a failed request kept its reservation?)", i, a.status, a.body)
		}
	}
	if v := f.usageLimit(t, id); v["current_usage"] != 0.0 {
		t.Fatalf("failures spent %v", v["current_usage"])
	}
}

func TestBudgetStreamSettledWhenClosed(t *testing.T) {
	f, _, _ := newBudgetFixture(t)
	base, _ := f.serve(t)
	const withUsage = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n" +
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":30,\"total_tokens\":50}}\n\n" +
		"data: [DONE]\n\n"
	up := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ int64) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, withUsage)
	})
	id := f.newUsageLimit(t, `{"type": "tokens", "credit_limit": 100000}`)["id"].(string)
	resp := f.postStream(t, base, up.URL+"/v1")
	io.ReadAll(resp.Body)
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		v := f.usageLimit(t, id)
		if v["current_usage"] == 50.0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream's usage not settled: %v", v["current_usage"])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestBudgetOfAnotherWorkspaceDoesNotApply(t *testing.T) {
	f, _, _ := newBudgetFixture(t)
	up := newUpstream(t, nil)
	a := f.do(t, "POST", usageLimitsPath, `{"id": "`+uuid.NewString()+`", "type": "tokens", "credit_limit": 1}`,
		HeaderAPIKey, f.otherKey, "Content-Type", "application/json")
	if a.status != 200 {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	for range 3 {
		if a := f.chat(t, chatBody, upstreamHeaders(up)...); a.status != 200 {
			t.Fatalf("%d %s", a.status, a.body)
		}
	}
}

// A JSON null body is refused naming the kind of policy the endpoint takes (the decoding is shared).
func TestPolicyNullBodyNamesItsKind(t *testing.T) {
	f, _, _ := newBudgetFixture(t)
	tests := []struct {
		name, path, want string
	}{
		{"rate-limit", policiesPath, "request body must be a rate-limit policy object, not null"},
		{"usage-limit", usageLimitsPath, "request body must be a usage-limit policy object, not null"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := f.policyJSON(t, "POST", tc.path, f.admin, `null`)
			checkError(t, a, 400, "invalid_json", nil)
			if msg := a.json(t)["error"].(map[string]any)["message"].(string); msg != tc.want {
				t.Fatalf("message %q, want %q", msg, tc.want)
			}
		})
	}
}
