package ratelimit

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/gateway/storage"
)

var windows = []struct {
	unit   string
	window time.Duration
}{
	{"rpm", time.Minute},
	{"rph", time.Hour},
	{"rpd", 24 * time.Hour},
}

func TestRequestsWindows(t *testing.T) {
	for _, w := range windows {
		t.Run(w.unit, func(t *testing.T) {
			e := newEnv(t)
			bucket := w.window / nBuckets
			p := e.policy("requests", w.unit, 3)
			a := e.req("k1")

			// Two in bucket 0, one in bucket 10: the limit is reached.
			e.admit(a)
			e.admit(a)
			e.clk.Advance(10 * bucket)
			e.admit(a)
			ex := e.refuse(a)
			if ex.PolicyID != p.ID || ex.Type != "requests" || ex.Unit != w.unit || ex.Limit != 3 || ex.Remaining != 0 {
				t.Errorf("Exceeded = %+v", ex)
			}
			// Bucket 0 leaves the window at t0+window; everything has left at t0+window+10 buckets.
			if want := w.window - 10*bucket; ex.RetryAfter != want {
				t.Errorf("RetryAfter = %v, want %v", ex.RetryAfter, want)
			}
			if ex.Reset != w.window {
				t.Errorf("Reset = %v, want %v", ex.Reset, w.window)
			}

			// Just before bucket 0 leaves: still refused, and a refusal counted nothing.
			e.clk.Set(t0.Add(w.window - time.Nanosecond))
			ex = e.refuse(a)
			if ex.RetryAfter != time.Nanosecond || ex.RetryAfterSeconds() != 1 {
				t.Errorf("RetryAfter = %v (%d s), want 1ns (1 s)", ex.RetryAfter, ex.RetryAfterSeconds())
			}

			// The window slid past bucket 0 only: two fit again, not three.
			e.clk.Set(t0.Add(w.window))
			e.admit(a)
			e.admit(a)
			ex = e.refuse(a)
			if want := 10 * bucket; ex.RetryAfter != want {
				t.Errorf("after a partial slide RetryAfter = %v, want %v (the bucket at +10 leaving)", ex.RetryAfter, want)
			}

			// A whole window later everything has left.
			e.clk.Advance(w.window)
			for range 3 {
				e.admit(a)
			}
			e.refuse(a)
		})
	}
}

func TestTokensWindows(t *testing.T) {
	for _, w := range windows {
		t.Run(w.unit, func(t *testing.T) {
			e := newEnv(t)
			bucket := w.window / nBuckets
			p := e.policy("tokens", w.unit, 100)
			a := e.req("k1")

			adm := e.admit(a)
			if lim, rem, _, ok := adm.Headers(); !ok || lim != 100 || rem != 100 {
				t.Errorf("Headers before any usage = %v, %v, ok %v; want 100, 100", lim, rem, ok)
			}
			if !adm.CountsTokens() {
				t.Error("CountsTokens = false under a tokens policy")
			}
			e.l.AddTokens(&adm, 60)
			if adm.CountsTokens() {
				t.Error("CountsTokens = true after AddTokens")
			}
			e.l.AddTokens(&adm, 60) // a second call adds nothing
			e.clk.Advance(5 * bucket)
			adm = e.admit(a) // 60 < 100: admitted although this one will pass the limit
			e.l.AddTokens(&adm, 50)

			ex := e.refuse(a)
			if ex.PolicyID != p.ID || ex.Type != "tokens" || ex.Limit != 100 {
				t.Errorf("Exceeded = %+v", ex)
			}
			// 110 counted; the 60 of bucket 0 must leave for the count to fall below 100.
			if want := w.window - 5*bucket; ex.RetryAfter != want {
				t.Errorf("RetryAfter = %v, want %v", ex.RetryAfter, want)
			}
			if ex.Reset != w.window {
				t.Errorf("Reset = %v, want %v", ex.Reset, w.window)
			}

			e.clk.Set(t0.Add(w.window))
			adm = e.admit(a)
			if _, rem, _, _ := adm.Headers(); rem != 50 {
				t.Errorf("remaining after the slide = %v, want 50", rem)
			}
			e.l.AddTokens(&adm, 50) // 100: the limit is reached exactly
			e.refuse(a)
			e.clk.Advance(w.window)
			e.admit(a)
		})
	}
}

func TestGroupByAPIKey(t *testing.T) {
	e := newEnv(t)
	e.policy("requests", "rpm", 1, groupBy("api_key"))
	e.admit(e.req("k1"))
	e.refuse(e.req("k1"))
	e.admit(e.req("k2"))
	e.refuse(e.req("k2"))
}

func TestGroupByMetadata(t *testing.T) {
	e := newEnv(t)
	e.policy("requests", "rpm", 1, groupBy("metadata._user"))
	user := func(u string) *Attrs {
		a := e.req("k1")
		if u != "" {
			a.Metadata = map[string]string{"_user": u, "env": "prod"}
		}
		return a
	}
	e.admit(user("alice"))
	e.refuse(user("alice"))
	e.admit(user("bob"))
	// Requests without the attribute share the counter of "".
	e.admit(user(""))
	e.refuse(user(""))
}

func TestGroupBySeveralKeys(t *testing.T) {
	e := newEnv(t)
	p := e.policy("requests", "rpm", 1, groupBy("api_key", "model"))
	a := e.req("k1")
	e.admit(a)
	e.refuse(a)
	b := e.req("k1")
	b.Body = bodyOf(`{"model":"gpt-3"}`)
	e.admit(b)
	e.admit(e.req("k2"))
	// The tuple is spelled unambiguously in storage.
	e.flush()
	if _, ok, _ := e.s.Counters.Load(e.ws, p.ID, "api_key=k1&model=gpt-3"); !ok {
		t.Error("no saved counter for the group api_key=k1&model=gpt-3")
	}
}

func TestConditions(t *testing.T) {
	t.Run("model", func(t *testing.T) {
		e := newEnv(t)
		e.policy("requests", "rpm", 1, where("model", "gpt-4"))
		gpt := func(m string) *Attrs {
			a := e.req("k1")
			a.Body = bodyOf(`{"messages":[{"role":"user","content":"\"model\": \"x\""}],"model":"` + m + `"}`)
			return a
		}
		e.admit(gpt("gpt-3"))
		e.admit(gpt("gpt-3"))
		adm := e.admit(gpt("gpt-4"))
		if _, _, _, ok := adm.Headers(); !ok {
			t.Error("gpt-4 matched no policy")
		}
		e.refuse(gpt("gpt-4"))
		adm = e.admit(gpt("gpt-3")) // not counted, not limited
		if _, _, _, ok := adm.Headers(); ok {
			t.Error("gpt-3 matched the gpt-4 policy")
		}
	})
	t.Run("metadata and AND", func(t *testing.T) {
		e := newEnv(t)
		e.policy("requests", "rpm", 1, where("metadata.env", "prod"), where("provider", "openai"))
		env := func(v, provider string) *Attrs {
			a := e.req("k1")
			a.Metadata = map[string]string{"env": v}
			a.Provider = provider
			return a
		}
		e.admit(env("dev", "openai"))
		e.admit(env("prod", "@anthropic-prod"))
		e.admit(env("prod", "openai"))
		e.refuse(env("prod", "openai"))
		e.admit(env("dev", "openai"))
		e.admit(e.req("k1")) // no metadata at all
	})
	t.Run("every key", func(t *testing.T) {
		e := newEnv(t)
		e.policy("requests", "rpm", 1, where("api_key", "k1"), where("workspace_id", e.ws), where("provider", "openai"),
			where("virtual_key", "vk"), where("model", "gpt-4o"), where("config", "cfg-a"), where("metadata.team", "t"))
		full := func() *Attrs {
			a := e.req("k1")
			a.VirtualKey, a.Config, a.Metadata = "vk", "cfg-a", map[string]string{"team": "t"}
			return a
		}
		e.admit(full())
		e.refuse(full())
		for name, change := range map[string]func(*Attrs){
			"api_key":     func(a *Attrs) { a.APIKey = "k2" },
			"provider":    func(a *Attrs) { a.Provider = "@openai" },
			"virtual_key": func(a *Attrs) { a.VirtualKey = "" },
			"model":       func(a *Attrs) { a.Body = bodyOf(`{"model":"gpt-4o-mini"}`) },
			"config":      func(a *Attrs) { a.Config = "" },
			"metadata":    func(a *Attrs) { a.Metadata["team"] = "u" },
		} {
			a := full()
			change(a)
			if _, ex := e.l.Admit(a); ex != nil {
				t.Errorf("a request with another %s was refused", name)
			}
		}
	})
}

func TestAllOrNothing(t *testing.T) {
	e := newEnv(t)
	all := e.policy("requests", "rpm", 5)
	perKey := e.policy("requests", "rpm", 2, groupBy("api_key"))
	e.admit(e.req("k1"))
	e.admit(e.req("k1"))
	ex := e.refuse(e.req("k1"))
	if ex.PolicyID != perKey.ID {
		t.Errorf("refused by %s, want the per-key policy %s", ex.PolicyID, perKey.ID)
	}
	// The refused request did not count against the workspace-wide policy: 2 of 5 used, now 3.
	adm := e.admit(e.req("k2"))
	lim, rem, _, ok := adm.Headers()
	if !ok || lim != 5 || rem != 2 {
		t.Errorf("Headers = %v, %v, ok %v; want the workspace policy's 5, 2 (k2's per-key share 1/2 is larger)", lim, rem, ok)
	}
	e.admit(e.req("k3"))
	e.admit(e.req("k3"))
	ex = e.refuse(e.req("k4"))
	if ex.PolicyID != all.ID {
		t.Errorf("refused by %s, want the workspace policy %s", ex.PolicyID, all.ID)
	}
}

func TestRefusalNamesThePolicyThatFreesLast(t *testing.T) {
	e := newEnv(t)
	minute := e.policy("requests", "rpm", 1)
	hour := e.policy("requests", "rph", 1)
	e.admit(e.req("k1"))
	ex := e.refuse(e.req("k1"))
	if ex.PolicyID != hour.ID || ex.RetryAfter != time.Hour {
		t.Errorf("refused by %s after %v, want the hourly policy after 1h (minute policy %s)", ex.PolicyID, ex.RetryAfter, minute.ID)
	}
	if !strings.Contains(ex.Error(), hour.ID) || !strings.Contains(ex.Error(), "1 requests per hour") ||
		!strings.Contains(ex.Error(), "retry after 3600 s") {
		t.Errorf("Error() = %q", ex.Error())
	}
}

func TestHeaders(t *testing.T) {
	e := newEnv(t)
	e.clk.Set(t0.Add(1500 * time.Millisecond))
	adm, ex := e.l.Admit(e.req("k1"))
	if ex != nil {
		t.Fatal(ex)
	}
	if _, _, _, ok := adm.Headers(); ok {
		t.Error("Headers ok without any policy")
	}
	e.policy("requests", "rpm", 10)
	e.policy("requests", "rph", 100)
	for range 3 {
		adm = e.admit(e.req("k1"))
	}
	if adm.CountsTokens() {
		t.Error("CountsTokens = true without a tokens policy")
	}
	lim, rem, reset, ok := adm.Headers()
	// rpm: 7/10 left; rph: 97/100. The minute's last count (bucket 1 s..2 s) leaves at 61 s: 59.5 s → 60.
	if !ok || lim != 10 || rem != 7 || reset != 60 {
		t.Errorf("Headers = %v, %v, %v, ok %v; want 10, 7, 60", lim, rem, reset, ok)
	}
	e.clk.Advance(30 * time.Second)
	adm = e.admit(e.req("k1"))
	if lim, rem, reset, _ := adm.Headers(); lim != 10 || rem != 6 || reset != 60 {
		t.Errorf("Headers = %v, %v, %v; want 10, 6, 60", lim, rem, reset)
	}
}

func TestPolicyChangesTakeEffectAtOnce(t *testing.T) {
	e := newEnv(t)
	p := e.policy("requests", "rpm", 1)
	a := e.req("k1")
	e.admit(a)
	e.refuse(a)

	// Raising the limit keeps the count.
	p.Value = 2
	e.put(p)
	e.admit(a)
	e.refuse(a)

	// Archived: not enforced on the next request; its counters leave memory.
	p.Status = "archived"
	e.put(p)
	adm := e.admit(a)
	if _, _, _, ok := adm.Headers(); ok {
		t.Error("an archived policy matched")
	}
	e.flush()

	// Active again: the saved count comes back.
	p.Status = "active"
	e.put(p)
	e.refuse(a)

	// Changing the unit starts over.
	p.Unit = "rph"
	e.put(p)
	e.admit(a)
	e.admit(a)
	e.refuse(a)

	// Deleted: not enforced, and its saved counters are removed.
	e.flush()
	if _, ok, _ := e.s.Counters.Load(e.ws, p.ID, ""); !ok {
		t.Fatal("no saved counter before the delete")
	}
	if err := e.s.Policies.Delete(e.ws, p.ID); err != nil {
		t.Fatal(err)
	}
	e.admit(a)
	e.flush()
	if ids, _ := e.s.Counters.PolicyIDs(e.ws); len(ids) != 0 {
		t.Errorf("saved counters of deleted policies remain: %v", ids)
	}
}

func TestNewPolicyAppliesAtOnce(t *testing.T) {
	e := newEnv(t)
	a := e.req("k1")
	e.admit(a)
	e.policy("requests", "rpm", 1)
	e.admit(a)
	e.refuse(a)
	// A change in another workspace does not disturb this one's counts.
	other := &storage.RateLimitPolicy{ID: storage.NewUUID(), WorkspaceID: storage.NewUUID(), Type: "requests",
		Unit: "rpm", Value: 1, Status: "active"}
	e.put(other)
	e.refuse(a)
}

func TestPolicyDeletedWhileArchived(t *testing.T) {
	e := newEnv(t)
	p := e.policy("requests", "rpm", 5)
	e.admit(e.req("k1"))
	p.Status = "archived"
	e.put(p)
	e.admit(e.req("k1"))
	e.flush() // saves the archived policy's counter
	if _, ok, _ := e.s.Counters.Load(e.ws, p.ID, ""); !ok {
		t.Fatal("archiving did not save the counter")
	}
	if err := e.s.Policies.Delete(e.ws, p.ID); err != nil {
		t.Fatal(err)
	}
	e.admit(e.req("k1"))
	e.flush()
	if _, ok, _ := e.s.Counters.Load(e.ws, p.ID, ""); ok {
		t.Error("the counter of a policy deleted while archived remains")
	}
}

func TestUnenforceablePolicyIsSkipped(t *testing.T) {
	e := newEnv(t)
	e.policy("requests", "rpm", 1, where("colour", "red"))
	e.policy("requests", "rps", 1)
	e.policy("bytes", "rpm", 1)
	e.policy("requests", "rpm", 1, groupBy("metadata."))
	a := e.req("k1")
	e.admit(a)
	e.admit(a)
	if err := CheckKey("colour"); err == nil || !strings.Contains(err.Error(), `"colour"`) {
		t.Errorf("CheckKey(colour) = %v", err)
	}
	if err := CheckKey("metadata.team"); err != nil {
		t.Errorf("CheckKey(metadata.team) = %v", err)
	}
}

func TestCountersSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	clk := newClock()
	ws := storage.NewUUID()
	pol := &storage.RateLimitPolicy{ID: storage.NewUUID(), WorkspaceID: ws, Type: "requests", Unit: "rpd", Value: 3,
		Status: "active", GroupBy: []storage.PolicyGroup{{Key: "api_key"}}}
	tok := &storage.RateLimitPolicy{ID: storage.NewUUID(), WorkspaceID: ws, Type: "tokens", Unit: "rpd", Value: 100,
		Status: "active"}
	a := &Attrs{WorkspaceID: ws, APIKey: "k1"}

	s, err := storage.Open(dir, storage.Options{MasterKey: testMasterKey(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*storage.RateLimitPolicy{pol, tok} {
		if _, err := s.Policies.Put(ws, p.ID, p); err != nil {
			t.Fatal(err)
		}
	}
	l := New(s, Options{Now: clk.Now, FlushInterval: time.Hour, Logger: quietLogger()})
	for range 2 {
		adm, ex := l.Admit(a)
		if ex != nil {
			t.Fatal(ex)
		}
		l.AddTokens(&adm, 40)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	clk.Advance(time.Hour)
	s2 := openStore(t, dir)
	l2 := newLimiter(t, s2, clk)
	adm, ex := l2.Admit(a)
	if ex != nil {
		t.Fatalf("third request of the day refused after a restart: %v", ex)
	}
	if lim, rem, _, _ := adm.Headers(); lim != 3 || rem != 0 {
		t.Errorf("Headers = %v, %v; want 3, 0 (the day's count went on)", lim, rem)
	}
	l2.AddTokens(&adm, 30) // 110 tokens
	ex = refusal(l2, a)
	if ex == nil {
		t.Fatal("fourth request of the day admitted after a restart")
	}
	// Both policies refuse; the requests one frees up at t0+24h (its first bucket), the tokens one when 40 of
	// its 110 tokens have left, also at t0+24h. Either way the retry is about 23 hours away.
	if want := 23 * time.Hour; ex.RetryAfter != want {
		t.Errorf("RetryAfter = %v, want %v", ex.RetryAfter, want)
	}
}

// refusal returns only Admit's refusal.
func refusal(l *Limiter, a *Attrs) *Exceeded {
	_, ex := l.Admit(a)
	return ex
}

func TestExpiredRecordStartsEmpty(t *testing.T) {
	e := newEnv(t)
	p := e.policy("requests", "rpm", 1)
	e.admit(e.req("k1"))
	if err := e.l.Close(); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Minute)
	l2 := newLimiter(t, e.s, e.clk)
	if ex := refusal(l2, e.req("k1")); ex != nil {
		t.Fatalf("refused by a record whose buckets all left the window: %v", ex)
	}
	if ex := refusal(l2, e.req("k1")); ex == nil || ex.PolicyID != p.ID {
		t.Fatalf("second request = %v, want refused", ex)
	}
}

func TestIdleCountersAreEvicted(t *testing.T) {
	e := newEnv(t)
	p := e.policy("requests", "rpm", 1, groupBy("api_key"))
	tok := e.policy("tokens", "rpm", 100)
	for i := range 10 {
		e.admit(e.req(fmt.Sprint("k", i)))
	}
	e.flush()
	if n := e.counters(p.ID); n != 10 {
		t.Fatalf("%d counters in memory, want 10", n)
	}
	e.clk.Advance(30 * time.Second)
	adm := e.admit(e.req("k-late"))
	e.clk.Advance(30 * time.Second)
	e.flush()
	if n := e.counters(p.ID); n != 1 {
		t.Errorf("%d counters in memory after the window passed, want 1 (k-late's)", n)
	}
	if n := e.counters(tok.ID); n != 0 {
		t.Errorf("%d idle tokens counters in memory, want 0", n)
	}
	left := 0
	for i := range 10 {
		if _, ok, _ := e.s.Counters.Load(e.ws, p.ID, fmt.Sprint("api_key=k", i)); ok {
			left++
		}
	}
	if left != 0 {
		t.Errorf("%d records of evicted counters remain", left)
	}
	// Tokens reported for a counter evicted while its request ran land in its successor.
	e.l.AddTokens(&adm, 10)
	if n := e.counters(tok.ID); n != 1 {
		t.Errorf("%d tokens counters, want 1", n)
	}
	e.flush()
	if rec, ok, _ := e.s.Counters.Load(e.ws, tok.ID, ""); !ok || rec.Buckets[nBuckets-1] != 10 {
		t.Errorf("tokens record = %+v, ok %v; want 10 tokens in the newest bucket", rec, ok)
	}
	// An evicted group starts again.
	e.admit(e.req("k0"))
	e.refuse(e.req("k0"))
}

func TestFlusherRuns(t *testing.T) {
	s := openStore(t, "")
	clk := newClock()
	l := New(s, Options{Now: clk.Now, FlushInterval: time.Millisecond, Logger: quietLogger()})
	defer l.Close()
	ws := storage.NewUUID()
	p := &storage.RateLimitPolicy{ID: storage.NewUUID(), WorkspaceID: ws, Type: "requests", Unit: "rpm", Value: 5,
		Status: "active"}
	if _, err := s.Policies.Put(ws, p.ID, p); err != nil {
		t.Fatal(err)
	}
	if ex := refusal(l, &Attrs{WorkspaceID: ws}); ex != nil {
		t.Fatal(ex)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if rec, ok, _ := s.Counters.Load(ws, p.ID, ""); ok && rec.Buckets[nBuckets-1] == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the flusher did not save the counter")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestConcurrentAdmit(t *testing.T) {
	s := openStore(t, "")
	clk := newClock()
	l := New(s, Options{Now: clk.Now, FlushInterval: time.Millisecond, Logger: quietLogger()})
	defer l.Close()
	ws := storage.NewUUID()
	put := func(p *storage.RateLimitPolicy) {
		if _, err := s.Policies.Put(ws, p.ID, p); err != nil {
			t.Error(err)
		}
	}
	total := &storage.RateLimitPolicy{ID: storage.NewUUID(), WorkspaceID: ws, Type: "requests", Unit: "rpm",
		Value: 1000, Status: "active"}
	perKey := &storage.RateLimitPolicy{ID: storage.NewUUID(), WorkspaceID: ws, Type: "requests", Unit: "rph",
		Value: 1e9, Status: "active", GroupBy: []storage.PolicyGroup{{Key: "api_key"}}}
	tok := &storage.RateLimitPolicy{ID: storage.NewUUID(), WorkspaceID: ws, Type: "tokens", Unit: "rpm",
		Value: 1e12, Status: "active", GroupBy: []storage.PolicyGroup{{Key: "api_key"}}}
	put(total)
	put(perKey)
	put(tok)

	const workers, each = 16, 100
	var admitted atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	// Unrelated policy writes force reloads while requests run.
	wg.Go(func() {
		other := &storage.RateLimitPolicy{ID: storage.NewUUID(), WorkspaceID: ws, Type: "requests", Unit: "rpm",
			Value: 1e9, Status: "active", Conditions: []storage.PolicyMatch{{Key: "model", Value: "none"}}}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			other.Value = float64(1e9 + i)
			put(other)
			time.Sleep(time.Millisecond)
		}
	})
	var workersWG sync.WaitGroup
	for w := range workers {
		workersWG.Go(func() {
			a := &Attrs{WorkspaceID: ws, APIKey: fmt.Sprint("k", w%4)}
			for range each {
				adm, ex := l.Admit(a)
				if ex == nil {
					admitted.Add(1)
					l.AddTokens(&adm, 3)
				}
			}
		})
	}
	workersWG.Wait()
	close(stop)
	wg.Wait()
	if got := admitted.Load(); got != 1000 {
		t.Errorf("admitted %d of %d, want exactly the limit 1000", got, workers*each)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for k := range 4 {
		rec, ok, err := s.Counters.Load(ws, tok.ID, fmt.Sprint("api_key=k", k))
		if err != nil || !ok {
			t.Fatalf("tokens counter of k%d: ok %v, err %v", k, ok, err)
		}
		for _, v := range rec.Buckets {
			sum += v
		}
	}
	if sum != 3000 {
		t.Errorf("saved tokens = %v, want 3000", sum)
	}
}

func TestNilAndEmpty(t *testing.T) {
	var l *Limiter
	adm, ex := l.Admit(&Attrs{WorkspaceID: "w"})
	if ex != nil {
		t.Fatal(ex)
	}
	l.AddTokens(&adm, 5)
	e := newEnv(t)
	if _, ex := e.l.Admit(nil); ex != nil {
		t.Fatal(ex)
	}
	if _, ex := e.l.Admit(&Attrs{}); ex != nil {
		t.Fatal(ex)
	}
	if _, ex := e.l.Admit(&Attrs{WorkspaceID: "not/valid"}); ex != nil {
		t.Fatal(ex)
	}
	e.flush()
}

func TestAdmissionOverflowsInline(t *testing.T) {
	e := newEnv(t)
	var ids []string
	for range inlineHits + 2 {
		ids = append(ids, e.policy("tokens", "rpm", 100).ID)
	}
	adm := e.admit(e.req("k1"))
	e.l.AddTokens(&adm, 100)
	ex := e.refuse(e.req("k1"))
	if ex.Type != "tokens" {
		t.Errorf("Exceeded = %+v", ex)
	}
	for _, id := range ids {
		e.flush()
		if rec, ok, _ := e.s.Counters.Load(e.ws, id, ""); !ok || rec.Buckets[nBuckets-1] != 100 {
			t.Errorf("policy %s: record %+v, ok %v; want 100 tokens", id, rec, ok)
		}
	}
}

func TestExceededSeconds(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want int64
	}{{time.Nanosecond, 1}, {time.Second, 1}, {time.Second + 1, 2}, {59500 * time.Millisecond, 60}} {
		if got := (&Exceeded{RetryAfter: tt.d}).RetryAfterSeconds(); got != tt.want {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", tt.d, got, tt.want)
		}
	}
}
