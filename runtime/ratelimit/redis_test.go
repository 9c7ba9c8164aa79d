package ratelimit

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/gateway/internal/testservices"
	"github.com/llmgw/gateway/runtime/redisstate"
	"github.com/llmgw/gateway/storage"
	"github.com/redis/go-redis/v9"
)

// waitFor polls cond until it holds, failing the test after a bound far above what a background write takes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// openRedis connects to url under prefix; closed when the test ends.
func openRedis(t testing.TB, url, prefix string, opts redisstate.Options) *redisstate.Client {
	t.Helper()
	opts.Prefix, opts.Logger = prefix, quietLogger()
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Second // generous: the tests run under -race on shared cores
	}
	c, err := redisstate.Open(url, opts)
	if err != nil {
		t.Fatalf("redisstate.Open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// replicas are gateways that share one Redis (each with a client of its own) and nothing else: each has its own
// store. Their limiters and budgets run on one clock.
type replicas struct {
	t      testing.TB
	clk    *clock
	ws     string
	stores []*storage.Store
	ls     []*Limiter
	bs     []*Budgets
	alerts []*atomic.Int64
}

func newReplicas(t testing.TB, n int, url string, opts redisstate.Options) *replicas {
	t.Helper()
	prefix := testservices.RedisPrefix(t)
	r := &replicas{t: t, clk: newClock(), ws: storage.NewUUID()}
	for range n {
		s := openStore(t, "")
		l := New(s, Options{Now: r.clk.Now, FlushInterval: time.Hour, Logger: quietLogger(),
			Redis: openRedis(t, url, prefix, opts)})
		t.Cleanup(func() { l.Close() })
		alerts := &atomic.Int64{}
		b := NewBudgets(s, BudgetOptions{Now: r.clk.Now, FlushInterval: time.Hour, Logger: quietLogger(),
			Redis: openRedis(t, url, prefix, opts), OnAlert: func(string) { alerts.Add(1) }})
		t.Cleanup(func() { b.Close() })
		r.stores, r.ls, r.bs, r.alerts = append(r.stores, s), append(r.ls, l), append(r.bs, b), append(r.alerts, alerts)
	}
	return r
}

// policy puts the same policy into every replica's store.
func (r *replicas) policy(typ, unit string, value float64, mod ...func(*storage.RateLimitPolicy)) *storage.RateLimitPolicy {
	r.t.Helper()
	p := &storage.RateLimitPolicy{ID: storage.NewUUID(), WorkspaceID: r.ws, OrganisationID: storage.NewUUID(),
		Type: typ, Unit: unit, Value: value, Status: "active",
		Conditions: []storage.PolicyMatch{}, GroupBy: []storage.PolicyGroup{}}
	for _, m := range mod {
		m(p)
	}
	for _, s := range r.stores {
		if _, err := s.Policies.Put(p.WorkspaceID, p.ID, p); err != nil {
			r.t.Fatalf("Policies.Put: %v", err)
		}
	}
	return p
}

func (r *replicas) budget(limit float64, mod ...func(*storage.UsageLimitPolicy)) *storage.UsageLimitPolicy {
	r.t.Helper()
	p := &storage.UsageLimitPolicy{ID: storage.NewUUID(), WorkspaceID: r.ws, Type: "tokens", CreditLimit: limit,
		Status: "active", Conditions: []storage.PolicyMatch{}, GroupBy: []storage.PolicyGroup{}}
	for _, m := range mod {
		m(p)
	}
	for _, s := range r.stores {
		if _, err := s.UsageLimits.Put(p.WorkspaceID, p.ID, p); err != nil {
			r.t.Fatalf("UsageLimits.Put: %v", err)
		}
	}
	return p
}

func (r *replicas) req(apiKey string) *Attrs {
	return &Attrs{WorkspaceID: r.ws, APIKey: apiKey, Provider: "openai", Body: bodyOf(`{"model":"gpt-4o","max_tokens":10}`)}
}

type verdict struct {
	limit, remaining float64
	reset            int64
	ok               bool
	ex               *Exceeded
}

func verdictOf(adm Admission, ex *Exceeded) verdict {
	v := verdict{ex: ex}
	v.limit, v.remaining, v.reset, v.ok = adm.Headers()
	return v
}

func (v verdict) String() string {
	if v.ex != nil {
		return fmt.Sprintf("refused %+v", *v.ex)
	}
	return fmt.Sprintf("admitted limit=%v remaining=%v reset=%d ok=%v", v.limit, v.remaining, v.reset, v.ok)
}

// TestRedisRequestsAcrossReplicas: a 10 rpm policy admits exactly 10 requests across two replicas, refuses the
// 11th with the Retry-After a single replica would give, and every answer (headers, refusal) is the one a
// single local limiter gives for the same sequence, also as the window slides.
func TestRedisRequestsAcrossReplicas(t *testing.T) {
	url := testservices.RedisURL(t)
	r := newReplicas(t, 2, url, redisstate.Options{})
	p := r.policy("requests", "rpm", 10)

	single := openStore(t, "")
	if _, err := single.Policies.Put(p.WorkspaceID, p.ID, p); err != nil {
		t.Fatal(err)
	}
	local := newLimiter(t, single, r.clk)

	a := r.req("k1")
	step := func(i int) (shared, alone verdict) {
		shared = verdictOf(r.ls[i%2].Admit(a))
		alone = verdictOf(local.Admit(a))
		if shared.String() != alone.String() {
			t.Fatalf("request %d at +%v: replicas %v, one local limiter %v", i, r.clk.Now().Sub(t0), shared, alone)
		}
		return shared, alone
	}
	admitted := 0
	for i := range 11 {
		if v, _ := step(i); v.ex == nil {
			admitted++
		}
		r.clk.Advance(1500 * time.Millisecond)
	}
	if admitted != 10 {
		t.Fatalf("admitted %d of 11 across the replicas, want 10", admitted)
	}
	v, _ := step(11)
	if v.ex == nil || v.ex.PolicyID != p.ID || v.ex.RetryAfterSeconds() < 1 {
		t.Fatalf("12th request: %v, want refused with a Retry-After", v)
	}
	// The window slides: the first buckets leave and as many requests fit again, on either replica.
	r.clk.Set(t0.Add(time.Minute + 2*time.Second))
	for i := 12; i < 20; i++ {
		step(i)
		r.clk.Advance(700 * time.Millisecond)
	}
}

// TestRedisTokensAcrossReplicas: tokens added on two replicas count against one window, written in the
// background.
func TestRedisTokensAcrossReplicas(t *testing.T) {
	url := testservices.RedisURL(t)
	r := newReplicas(t, 2, url, redisstate.Options{})
	r.policy("tokens", "rpm", 100)
	a := r.req("k1")

	admA, ex := r.ls[0].Admit(a)
	if ex != nil {
		t.Fatal(ex)
	}
	admB, ex := r.ls[1].Admit(a)
	if ex != nil {
		t.Fatal(ex)
	}
	r.ls[0].AddTokens(&admA, 60)
	r.clk.Advance(time.Second)
	r.ls[1].AddTokens(&admB, 50)

	// Neither replica alone reached 100; together they did.
	for i, l := range r.ls {
		waitFor(t, fmt.Sprintf("replica %d to see 110 tokens", i), func() bool {
			_, ex := l.Admit(a)
			return ex != nil
		})
	}
	_, ex = r.ls[0].Admit(a)
	if ex.Type != "tokens" || ex.Limit != 100 {
		t.Fatalf("refusal %+v", ex)
	}
	// 60 tokens leave with the first bucket: 50 remain, below the limit.
	r.clk.Set(t0.Add(time.Minute))
	adm, ex := r.ls[1].Admit(a)
	if ex != nil {
		t.Fatalf("refused after the first bucket left: %v", ex)
	}
	if _, rem, _, _ := adm.Headers(); rem != 50 {
		t.Fatalf("remaining %v, want 50", rem)
	}
}

// TestRedisGroupsSeparate: each group_by value has its own shared counter.
func TestRedisGroupsSeparate(t *testing.T) {
	url := testservices.RedisURL(t)
	r := newReplicas(t, 2, url, redisstate.Options{})
	r.policy("requests", "rpm", 2, groupBy("api_key"))

	for _, key := range []string{"k1", "k2"} {
		for i := range 2 {
			if _, ex := r.ls[i].Admit(r.req(key)); ex != nil {
				t.Fatalf("%s on replica %d refused: %v", key, i, ex)
			}
		}
		for i := range 2 {
			if _, ex := r.ls[i].Admit(r.req(key)); ex == nil {
				t.Fatalf("%s: third request admitted on replica %d", key, i)
			}
		}
	}
}

// TestRedisUnreachable: with a Redis that never answers, the limiter and the budgets decide on their own.
func TestRedisUnreachable(t *testing.T) {
	r := newReplicas(t, 1, "redis://127.0.0.1:1", redisstate.Options{Timeout: 50 * time.Millisecond, ProbeEvery: time.Hour})
	r.policy("requests", "rpm", 3)
	r.policy("tokens", "rpm", 1e9)
	bp := r.budget(100)
	a := r.req("k1")
	for range 3 {
		adm, ex := r.ls[0].Admit(a)
		if ex != nil {
			t.Fatal(ex)
		}
		r.ls[0].AddTokens(&adm, 5)
	}
	if _, ex := r.ls[0].Admit(a); ex == nil {
		t.Fatal("4th request admitted: the local counters did not decide")
	}
	h, ex := r.bs[0].Reserve(a)
	if ex != nil {
		t.Fatal(ex)
	}
	h.Settle(&Spend{InputTokens: 100})
	if _, ex := r.bs[0].Reserve(a); ex == nil {
		t.Fatal("budget spent locally, yet the next request was admitted")
	}
	if u := r.bs[0].Usage(bp); u.Current != 100 {
		t.Fatalf("usage %+v", u)
	}
}

// redisServer is a redis-server of the test's own, which it can stop and start again on the same port.
type redisServer struct {
	t    testing.TB
	port int
	cmd  *exec.Cmd
}

func startRedisServer(t testing.TB) *redisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s := &redisServer{t: t, port: port}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *redisServer) url() string { return "redis://127.0.0.1:" + strconv.Itoa(s.port) + "/0" }

func (s *redisServer) start() {
	s.t.Helper()
	s.cmd = exec.Command("redis-server", "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no")
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("redis-server: %v", err)
	}
	waitFor(s.t, "redis-server to listen", func() bool {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(s.port), 100*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

func (s *redisServer) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
	}
}

// TestRedisDiesMidRun: when Redis stops answering, each replica goes on deciding with its local counters,
// which start from the shared view it last saw; when Redis is back (empty), they count there again.
func TestRedisDiesMidRun(t *testing.T) {
	srv := startRedisServer(t)
	r := newReplicas(t, 2, srv.url(), redisstate.Options{Timeout: 500 * time.Millisecond, ProbeEvery: 20 * time.Millisecond})
	r.policy("requests", "rpm", 4)
	a := r.req("k1")
	admit := func(i int) bool {
		_, ex := r.ls[i].Admit(a)
		return ex == nil
	}
	if !admit(0) || !admit(1) || !admit(0) {
		t.Fatal("refused below the limit")
	}
	// Replica 0 last saw 3 in Redis (its two and replica 1's one).

	srv.stop()
	// Still answers, locally: replica 0 starts from the 3 it saw, so it admits one more.
	if !admit(0) {
		t.Fatal("replica 0 refused its first request without Redis")
	}
	if admit(0) {
		t.Fatal("replica 0 admitted past the limit it last saw")
	}
	if r.ls[0].redis.Available() {
		t.Fatal("a failed call left Redis marked available")
	}

	srv.start()
	for i := range r.ls {
		c := r.ls[i].redis
		waitFor(t, "Redis to be back", func() bool {
			return c.Available() && c.Redis().Ping(context.Background()).Err() == nil
		})
	}
	// Redis came back empty and the local counts were not copied up: the shared window starts again, while
	// replica 0 alone would have refused.
	r.clk.Advance(time.Second)
	for i := range 4 {
		if !admit(i % 2) {
			t.Fatalf("request %d refused: the replicas did not go back to Redis", i)
		}
	}
	if admit(0) || admit(1) {
		t.Fatal("admitted past the shared limit after Redis came back")
	}
}

// TestRedisBudgetsAcrossReplicas: spend settled on one replica refuses on the other; the alert fires once, on
// the replica whose settlement crossed the threshold; usage shows the shared spend.
func TestRedisBudgetsAcrossReplicas(t *testing.T) {
	url := testservices.RedisURL(t)
	r := newReplicas(t, 2, url, redisstate.Options{})
	p := r.budget(100, alertAt(50))
	a := r.req("k1")

	h, ex := r.bs[0].Reserve(a)
	if ex != nil {
		t.Fatal(ex)
	}
	h.Settle(&Spend{InputTokens: 60})
	waitFor(t, "the alert on replica 0", func() bool { return r.alerts[0].Load() == 1 })

	h, ex = r.bs[1].Reserve(a)
	if ex != nil {
		t.Fatalf("replica 1 refused at 60 of 100: %v", ex)
	}
	h.Settle(&Spend{InputTokens: 45})
	waitFor(t, "replica 0 to refuse", func() bool {
		h, ex := r.bs[0].Reserve(a)
		h.Settle(nil)
		return ex != nil
	})
	_, ex = r.bs[1].Reserve(a)
	if ex == nil || ex.Committed != 105 {
		t.Fatalf("replica 1: %+v, want refused at 105", ex)
	}
	if r.alerts[0].Load() != 1 || r.alerts[1].Load() != 0 {
		t.Fatalf("alerts %d and %d, want 1 on the replica that crossed only", r.alerts[0].Load(), r.alerts[1].Load())
	}
	for i, b := range r.bs {
		if u := b.Usage(p); u.Current != 105 || !u.Exhausted {
			t.Fatalf("replica %d usage %+v, want 105 exhausted", i, u)
		}
		// The flusher saves the shared spend, so that a restart without Redis refuses too.
		if err := b.flush(); err != nil {
			t.Fatal(err)
		}
		rec, ok, err := r.stores[i].BudgetSpend.Load(r.ws, p.ID, "")
		if err != nil || !ok || rec.Spend != 105 {
			t.Fatalf("replica %d saved %+v %v %v, want 105", i, rec, ok, err)
		}
	}
}

// TestRedisBudgetSeededFromStorage: a group's spend saved before Redis was used reaches the other replicas.
func TestRedisBudgetSeededFromStorage(t *testing.T) {
	url := testservices.RedisURL(t)
	r := newReplicas(t, 2, url, redisstate.Options{})
	p := r.budget(80)
	if err := r.stores[0].BudgetSpend.SaveBatch([]*storage.BudgetRecord{{WorkspaceID: r.ws, PolicyID: p.ID,
		Type: "tokens", Spend: 80}}, nil); err != nil {
		t.Fatal(err)
	}
	a := r.req("k1")
	if _, ex := r.bs[0].Reserve(a); ex == nil {
		t.Fatal("replica 0 admitted with its saved spend at the limit")
	}
	waitFor(t, "replica 1 to see the seeded spend", func() bool {
		h, ex := r.bs[1].Reserve(a)
		h.Settle(nil)
		return ex != nil
	})
}

// TestWriteQueueFullDrops: a full queue refuses a write at once and counts it; a closed one refuses too.
func TestWriteQueueFullDrops(t *testing.T) {
	q := &writeQueue{ch: make(chan redisOp, 1)} // no goroutine: nothing drains it
	if !q.push(redisOp{key: "a"}) {
		t.Fatal("an empty queue refused a write")
	}
	if q.push(redisOp{key: "b"}) {
		t.Fatal("a full queue took a write")
	}
	if n := q.dropped.Load(); n != 1 {
		t.Fatalf("dropped %d, want 1", n)
	}
	q.closed.Store(true)
	<-q.ch
	if q.push(redisOp{key: "c"}) {
		t.Fatal("a closed queue took a write")
	}
}

// TestRedisBudgetPeriodReset: a new period is a new shared key, so every replica starts it from nothing.
func TestRedisBudgetPeriodReset(t *testing.T) {
	url := testservices.RedisURL(t)
	r := newReplicas(t, 2, url, redisstate.Options{})
	r.budget(100, resetEvery("monthly"))
	a := r.req("k1")
	h, ex := r.bs[0].Reserve(a)
	if ex != nil {
		t.Fatal(ex)
	}
	h.Settle(&Spend{InputTokens: 100})
	waitFor(t, "replica 1 to refuse", func() bool {
		h, ex := r.bs[1].Reserve(a)
		h.Settle(nil)
		return ex != nil
	})
	r.clk.Set(time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)) // t0 is in May
	for i, b := range r.bs {
		h, ex := b.Reserve(a)
		if ex != nil {
			t.Fatalf("replica %d refused in the new period: %v", i, ex)
		}
		h.Settle(nil)
	}
}

// deadlineHook records calls that reach Redis without a deadline of at most the client's Timeout.
type deadlineHook struct {
	bound time.Duration
	calls atomic.Int64
	bad   atomic.Int64
}

func (h *deadlineHook) check(ctx context.Context) {
	h.calls.Add(1)
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > h.bound {
		h.bad.Add(1)
	}
}

func (h *deadlineHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *deadlineHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.check(ctx); return next(ctx, cmd) }
}

func (h *deadlineHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.check(ctx); return next(ctx, cmds) }
}

// TestRedisCallsCarryDeadline: every call of the limiter and the budgets is bounded as a whole by the client's
// Timeout. The client's per-step timeouts alone let a call that waited for a pooled connection (the pool held by
// calls to a Redis that accepts and never answers) then wait as long again for its answer: measured with 200
// concurrent admissions against such a Redis, 530 ms at a 250 ms Timeout before, 265 ms after.
func TestRedisCallsCarryDeadline(t *testing.T) {
	url := testservices.RedisURL(t)
	r := newReplicas(t, 1, url, redisstate.Options{})
	hook := &deadlineHook{bound: 2 * time.Second}
	r.ls[0].redis.Redis().AddHook(hook)
	r.bs[0].redis.Redis().AddHook(hook)
	r.policy("requests", "rpm", 100)
	r.policy("tokens", "rpm", 1e6)
	p := r.budget(1000)
	a := r.req("k1")
	adm, ex := r.ls[0].Admit(a)
	if ex != nil {
		t.Fatal(ex)
	}
	r.ls[0].AddTokens(&adm, 7)
	h, bex := r.bs[0].Reserve(a)
	if bex != nil {
		t.Fatal(bex)
	}
	h.Settle(&Spend{InputTokens: 5})
	waitFor(t, "the spend to reach Redis", func() bool { return r.bs[0].Usage(p).Current == 5 && hook.calls.Load() >= 5 })
	if n := hook.bad.Load(); n > 0 {
		t.Fatalf("%d of %d calls reached Redis without a deadline within the client's Timeout", n, hook.calls.Load())
	}
}

// TestRedisConcurrentAdmitsExact: requests racing on two replicas, sent in shared pipelines, take exactly the
// limit; after Redis lost its scripts (SCRIPT FLUSH) the pipelines send them again and stay exact.
func TestRedisConcurrentAdmitsExact(t *testing.T) {
	srv := startRedisServer(t)
	r := newReplicas(t, 2, srv.url(), redisstate.Options{})
	const limit, goroutines, each = 50, 32, 4
	a := r.req("k1")
	race := func(round int) {
		t.Helper()
		var admitted atomic.Int64
		done := make(chan struct{})
		for g := range goroutines {
			go func() {
				defer func() { done <- struct{}{} }()
				for range each {
					if _, ex := r.ls[g%2].Admit(a); ex == nil {
						admitted.Add(1)
					}
				}
			}()
		}
		for range goroutines {
			<-done
		}
		if n := admitted.Load(); n != limit {
			t.Fatalf("round %d: %d of %d racing requests admitted, want %d", round, n, goroutines*each, limit)
		}
		for i, l := range r.ls {
			if !l.redis.Available() {
				t.Fatalf("round %d: replica %d fell back to local counting", round, i)
			}
		}
	}
	r.policy("requests", "rpm", limit)
	race(1)
	if err := r.ls[0].redis.Redis().ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	// A pipeline is the first to meet the flushed cache (a lone call would reload it through Script.Run).
	batch := make([]*admitCall, 3)
	for i := range batch {
		batch[i] = newAdmitCall(r.ls[0].redis)
		batch[i].keys = append(batch[i].keys, r.ls[0].redis.Key("rl", "noscript", strconv.Itoa(i)))
		batch[i].args = append(batch[i].args, 1, "r", 10, 60_000)
	}
	send(r.ls[0].redis, batch)
	for i, c := range batch {
		if c.err != nil || len(c.answer) != 1 || c.answer[0] != "1 1 1 1" {
			t.Fatalf("call %d after SCRIPT FLUSH: answer %q, err %v", i, c.answer, c.err)
		}
	}
	r.clk.Advance(2 * time.Minute) // a fresh window
	race(2)
}
