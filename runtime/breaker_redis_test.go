package runtime

import (
	"context"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/gateway/internal/testservices"
	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/redisstate"
	"github.com/redis/go-redis/v9"
)

// openBreakerRedis connects to the test Redis under prefix (one per test, shared by the test's replicas).
func openBreakerRedis(t testing.TB, prefix string) *redisstate.Client {
	t.Helper()
	c, err := redisstate.Open(testservices.RedisURL(t), redisstate.Options{Prefix: prefix,
		Logger: slog.New(slog.DiscardHandler), Timeout: 2 * time.Second}) // -race on shared cores
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if !c.Available() {
		t.Fatal("the test Redis does not answer")
	}
	return c
}

// breakerReplicas makes n engines (replicas) sharing breakers through the test Redis, each with a client of its
// own, and waits until each listens to the channel.
func breakerReplicas(t *testing.T, n int, now func() time.Time) []*Engine {
	t.Helper()
	prefix := testservices.RedisPrefix(t)
	var engines []*Engine
	var c *redisstate.Client
	for range n {
		c = openBreakerRedis(t, prefix)
		e := New(nil, Options{Redis: c, Now: now, Logger: slog.New(slog.DiscardHandler)})
		t.Cleanup(e.Close)
		engines = append(engines, e)
	}
	channel := c.Key("breakers")
	waitFor(t, "every replica subscribed", func() bool {
		subs, err := c.Redis().PubSubNumSub(context.Background(), channel).Result()
		return err == nil && subs[channel] == int64(n)
	})
	return engines
}

// waitFor polls cond every few milliseconds, failing the test after 10 s: messages cross Redis asynchronously.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func fail(e *Engine, br *breaker, cfg *config.CircuitBreaker) {
	e.settleBreaker(context.Background(), br, cfg, &outcome{status: 502, prov: "openai", path: "targets[0]"})
}

// TestBreakerOpensOnEveryReplica: failures on replica A reaching the threshold open the breaker on replica B,
// which had never called the target; failures split between replicas add up to the threshold and open both;
// a probe that succeeds on one closes the other.
func TestBreakerOpensOnEveryReplica(t *testing.T) {
	var clock atomic.Int64 // the subscribers read it too
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	r := breakerReplicas(t, 2, now)
	a, b := r[0], r[1]
	cfg := &config.CircuitBreaker{FailureThreshold: 3, CooldownInterval: 30000}

	const target = "openai|https://api.example|key-sum-1"
	for range 3 {
		fail(a, a.breakers.get(target), cfg)
	}
	if a.breakers.get(target).allow(now(), cfg) {
		t.Fatal("A's breaker did not open at the threshold")
	}
	waitFor(t, "B's breaker open", func() bool { return !b.breakers.get(target).allow(now(), cfg) })

	// Split failures: two on A and one on B reach the threshold of three together.
	const split = "openai|https://api.example|key-sum-2"
	fail(a, a.breakers.get(split), cfg)
	fail(a, a.breakers.get(split), cfg)
	if !b.breakers.get(split).allow(now(), cfg) {
		t.Fatal("B's breaker opened below the threshold")
	}
	fail(b, b.breakers.get(split), cfg)
	if b.breakers.get(split).allow(now(), cfg) {
		t.Fatal("B's breaker did not open when the replicas' failures reached the threshold")
	}
	waitFor(t, "A's breaker open after B's failure", func() bool { return !a.breakers.get(split).allow(now(), cfg) })

	// After the cooldown B's probe succeeds: A closes without probing itself.
	clock.Add(int64(31 * time.Second))
	brB := b.breakers.get(split)
	if !brB.allow(now(), cfg) {
		t.Fatal("B lets no probe through after the cooldown")
	}
	b.settleBreaker(context.Background(), brB, cfg, &outcome{status: 200})
	brA := a.breakers.get(split)
	waitFor(t, "A's breaker closed by B's probe", func() bool {
		brA.mu.Lock()
		defer brA.mu.Unlock()
		return brA.state == closed
	})
}

// commandCounter counts the commands a go-redis client sends, pings aside (pub/sub health checks).
type commandCounter struct{ n atomic.Int64 }

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() != "ping" {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// TestBreakerHappyPathMakesNoRedisCall: a closed breaker's allow and a success cost no command; a failure
// costs one.
func TestBreakerHappyPathMakesNoRedisCall(t *testing.T) {
	c := openBreakerRedis(t, testservices.RedisPrefix(t))
	var counter commandCounter
	c.Redis().AddHook(&counter)
	e := New(nil, Options{Redis: c, Logger: slog.New(slog.DiscardHandler)})
	defer e.Close()
	cfg := &config.CircuitBreaker{FailureThreshold: 5, CooldownInterval: 30000}
	before := counter.n.Load()
	for range 100 {
		br := e.breakers.get("openai|https://api.example|key")
		if !br.allow(time.Now(), cfg) {
			t.Fatal("a closed breaker refused")
		}
		e.settleBreaker(context.Background(), br, cfg, &outcome{status: 200})
	}
	if n := counter.n.Load() - before; n != 0 {
		t.Fatalf("100 allowed and successful calls sent %d Redis commands", n)
	}
	fail(e, e.breakers.get("openai|https://api.example|key"), cfg)
	if n := counter.n.Load() - before; n != 1 {
		t.Fatalf("a failure sent %d Redis commands, want 1", n)
	}
}

// TestBreakerRedisDownIsLocal: with Redis unreachable the breakers count alone, as without Redis.
func TestBreakerRedisDownIsLocal(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a port that refuses once closed
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := redisstate.Open("redis://"+addr+"/0", redisstate.Options{Logger: slog.New(slog.DiscardHandler),
		Timeout: 50 * time.Millisecond, ProbeEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e := New(nil, Options{Redis: c, Logger: slog.New(slog.DiscardHandler)})
	defer e.Close()
	cfg := &config.CircuitBreaker{FailureThreshold: 2, CooldownInterval: 30000}
	const target = "openai|https://api.example|key"
	fail(e, e.breakers.get(target), cfg)
	if !e.breakers.get(target).allow(time.Now(), cfg) {
		t.Fatal("opened below the threshold")
	}
	fail(e, e.breakers.get(target), cfg)
	if e.breakers.get(target).allow(time.Now(), cfg) {
		t.Fatal("did not open at the threshold with Redis down")
	}
}

// TestSharedBreakersBounded: breakers made by other replicas' messages count toward the bound and go once their
// opening has passed; an open one this replica uses stays.
func TestSharedBreakersBounded(t *testing.T) {
	clock := time.Unix(1_000_000, 0)
	b := breakers{max: 100, shared: &sharedBreakers{now: func() time.Time { return clock }}}
	failing := b.get("failing")
	failing.state, failing.until = open, clock.Add(time.Hour)
	for i := range 1000 {
		b.byID(identityHash(string(rune(i)))).openUntil(clock, clock.Add(time.Second))
		clock = clock.Add(time.Second)
	}
	if n := b.n.Load(); n > 102 {
		t.Fatalf("%d breakers kept, bound 100", n)
	}
	if got := b.get("failing"); got != failing {
		t.Fatal("an open breaker was dropped")
	}
	if got := b.byID(identityHash("failing")); got != failing {
		t.Fatal("the breaker's shared name leads elsewhere")
	}
}

// TestSharedBreakersBoundedAgainstFarOpenings: openings far ahead for ids this replica never called (what a
// hostile publisher on the channel sends) cannot grow the set past its bound, although prune keeps open
// breakers: once the set is full of them, the next message's breaker is still closed when added prunes, so it
// goes at once.
func TestSharedBreakersBoundedAgainstFarOpenings(t *testing.T) {
	clock := time.Unix(1_000_000, 0)
	b := breakers{max: 100, shared: &sharedBreakers{now: func() time.Time { return clock }}}
	for i := range 1000 {
		b.byID(identityHash(string(rune(i)))).openUntil(clock, clock.AddDate(100, 0, 0))
	}
	if n := b.n.Load(); n > 100 {
		t.Fatalf("%d breakers kept, bound 100", n)
	}
	if b.get("mine") == nil {
		t.Fatal("no breaker for a target this replica calls")
	}
}

var sinkAllowed bool

// BenchmarkBreakerAllowClosed: the cost of a closed breaker on a request (get, allow, a success), with and
// without Redis; they must be equal, since the happy path never calls Redis.
func BenchmarkBreakerAllowClosed(b *testing.B) {
	cfg := &config.CircuitBreaker{FailureThreshold: 5, CooldownInterval: 30000}
	for _, name := range []string{"local", "redis"} {
		b.Run(name, func(b *testing.B) {
			opts := Options{Logger: slog.New(slog.DiscardHandler)}
			if name == "redis" {
				opts.Redis = openBreakerRedis(b, testservices.RedisPrefix(b))
			}
			e := New(nil, opts)
			defer e.Close()
			ctx := context.Background()
			ok := &outcome{status: 200}
			now := time.Now()
			b.ReportAllocs()
			for b.Loop() {
				br := e.breakers.get("openai|https://api.example|key")
				sinkAllowed = br.allow(now, cfg)
				e.settleBreaker(ctx, br, cfg, ok)
			}
		})
	}
}
