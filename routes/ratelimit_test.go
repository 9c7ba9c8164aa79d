package routes

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/ratelimit"
	"github.com/llmgw/gateway/storage"
)

// testClock is a settable clock shared by the rate limiter and the engine.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newLimitedFixture is a fixture whose engine enforces rate limits and expires cache entries on clock.
func newLimitedFixture(t *testing.T) (*fixture, *testClock) {
	clock := &testClock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	f := newFixtureWith(t, Options{}, func(st *storage.Store) runtime.Options {
		lim := ratelimit.New(st, ratelimit.Options{Now: clock.Now, FlushInterval: time.Hour})
		t.Cleanup(func() { lim.Close() })
		return runtime.Options{RateLimiter: lim, Now: clock.Now}
	})
	return f, clock
}

// upstreamHeaders routes a chat request to the local upstream with header-based routing.
func upstreamHeaders(u *upstream) []string {
	return []string{HeaderProvider, "openai", "Authorization", "Bearer sk-test", HeaderCustomHost, u.URL + "/v1"}
}

func TestRequestsPolicyEnforced(t *testing.T) {
	f, clock := newLimitedFixture(t)
	up := newUpstream(t, nil)
	f.newPolicy(t, f.admin, `{"type": "requests", "unit": "rpm", "value": 2, "group_by": [{"key": "api_key"}]}`)
	h := upstreamHeaders(up)

	for i, remaining := range []string{"1", "0"} {
		a := f.chat(t, chatBody, h...)
		if a.status != 200 {
			t.Fatalf("request %d: %d %s", i, a.status, a.body)
		}
		if a.header.Get("X-Ratelimit-Limit") != "2" || a.header.Get("X-Ratelimit-Remaining") != remaining || a.header.Get("X-Ratelimit-Reset") == "" {
			t.Fatalf("request %d: rate-limit headers %v", i, a.header)
		}
	}
	a := f.chat(t, chatBody, h...)
	checkError(t, a, 429, "rate_limited", nil)
	if a.header.Get("Retry-After") != "60" || a.header.Get("X-Ratelimit-Remaining") != "0" || a.header.Get("X-Ratelimit-Limit") != "2" {
		t.Fatalf("429 headers: %v", a.header)
	}
	if up.calls.Load() != 2 {
		t.Fatalf("upstream called %d times; a refused request must not reach it", up.calls.Load())
	}
	// group_by api_key: another key of the workspace has its own counter.
	if a := f.do(t, "POST", "/v1/chat/completions", chatBody, append([]string{HeaderAPIKey, f.admin, "Content-Type", "application/json"}, h...)...); a.status != 200 {
		t.Fatalf("another key: %d %s", a.status, a.body)
	}
	// Half a minute later the window still holds both requests; a minute later it holds none.
	clock.Advance(30 * time.Second)
	checkError(t, f.chat(t, chatBody, h...), 429, "rate_limited", nil)
	clock.Advance(31 * time.Second)
	if a := f.chat(t, chatBody, h...); a.status != 200 {
		t.Fatalf("after the window slid: %d %s", a.status, a.body)
	}
}

func TestTokensPolicyEnforced(t *testing.T) {
	f, clock := newLimitedFixture(t)
	up := newUpstream(t, nil) // chatAnswer uses 7 tokens
	f.newPolicy(t, f.admin, `{"type": "tokens", "unit": "rph", "value": 10}`)
	h := upstreamHeaders(up)
	for i := range 2 { // 0 < 10 and 7 < 10 tokens counted: both admitted
		if a := f.chat(t, chatBody, h...); a.status != 200 {
			t.Fatalf("request %d: %d %s", i, a.status, a.body)
		}
	}
	a := f.chat(t, chatBody, h...)
	checkError(t, a, 429, "rate_limited", nil)
	if a.header.Get("Retry-After") == "" {
		t.Fatal("no retry-after on a 429")
	}
	clock.Advance(time.Hour + time.Minute)
	if a := f.chat(t, chatBody, h...); a.status != 200 {
		t.Fatalf("an hour later: %d %s", a.status, a.body)
	}
}

func TestTokensPolicyCountsStreams(t *testing.T) {
	f, _ := newLimitedFixture(t)
	base, _ := f.serve(t)
	const withUsage = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n" +
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":30,\"total_tokens\":50}}\n\n" +
		"data: [DONE]\n\n"
	up := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ int64) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, withUsage)
	})
	f.newPolicy(t, f.admin, `{"type": "tokens", "unit": "rpd", "value": 60}`)
	for i, want := range []int{200, 200, 429} { // 0, then 50 counted: admitted; then 100 >= 60
		resp := f.postStream(t, base, up.URL+"/v1")
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("stream %d: %d %s", i, resp.StatusCode, body)
		}
		// The caller did not ask for usage (stream_options.include_usage): its chunk is counted but not shown.
		if shown := withUsage[:strings.Index(withUsage, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[],")] + "data: [DONE]\n\n"; want == 200 && string(body) != shown {
			t.Fatalf("stream %d changed on the way: %q", i, body)
		}
	}
}

func TestPolicyConditionsAndArchive(t *testing.T) {
	f, _ := newLimitedFixture(t)
	up := newUpstream(t, nil)
	p := f.newPolicy(t, f.admin, `{"type": "requests", "unit": "rpm", "value": 1, "conditions": [{"key": "metadata.env", "value": "prod"}]}`)
	h := upstreamHeaders(up)
	prod := append([]string{HeaderMetadata, `{"env": "prod"}`}, h...)
	for i := range 3 { // the condition does not select these
		if a := f.chat(t, chatBody, append([]string{HeaderMetadata, `{"env": "dev"}`}, h...)...); a.status != 200 || a.header.Get("X-Ratelimit-Limit") != "" {
			t.Fatalf("dev request %d: %d %v", i, a.status, a.header)
		}
	}
	if a := f.chat(t, chatBody, prod...); a.status != 200 {
		t.Fatalf("first prod request: %d %s", a.status, a.body)
	}
	checkError(t, f.chat(t, chatBody, prod...), 429, "rate_limited", nil)
	// Archiving the policy stops its enforcement at once.
	if a := f.policyJSON(t, "PUT", policiesPath+"/"+p["id"].(string), f.admin, `{"status": "archived"}`); a.status != 200 {
		t.Fatalf("archive: %d %s", a.status, a.body)
	}
	if a := f.chat(t, chatBody, prod...); a.status != 200 {
		t.Fatalf("after archiving: %d %s", a.status, a.body)
	}
	// Deleting a policy too.
	q := f.newPolicy(t, f.admin, `{"type": "requests", "unit": "rpm", "value": 1}`)
	f.chat(t, chatBody, h...)
	checkError(t, f.chat(t, chatBody, h...), 429, "rate_limited", nil)
	if a := f.do(t, "DELETE", policiesPath+"/"+q["id"].(string), "", HeaderAPIKey, f.admin); a.status != 200 {
		t.Fatalf("delete: %d %s", a.status, a.body)
	}
	if a := f.chat(t, chatBody, h...); a.status != 200 {
		t.Fatalf("after deleting: %d %s", a.status, a.body)
	}
}

func TestPoliciesOfAnotherWorkspaceDoNotApply(t *testing.T) {
	f, _ := newLimitedFixture(t)
	up := newUpstream(t, nil)
	f.newPolicy(t, f.otherKey, `{"type": "requests", "unit": "rpm", "value": 1}`)
	for i := range 3 {
		if a := f.chat(t, chatBody, upstreamHeaders(up)...); a.status != 200 || strings.Contains(a.header.Get("X-Ratelimit-Limit"), "1") {
			t.Fatalf("request %d: %d %v", i, a.status, a.header)
		}
	}
}
