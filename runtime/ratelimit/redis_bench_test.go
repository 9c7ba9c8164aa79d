package ratelimit

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/gateway/internal/testservices"
	"github.com/llmgw/gateway/runtime/redisstate"
	"github.com/llmgw/gateway/storage"
)

// onePolicyEnv is one workspace with one requests policy grouped by api_key, far from its limit, and requests
// from 64 keys whose counters exist; with client, the counts are shared through Redis.
func onePolicyEnv(tb testing.TB, client *redisstate.Client) (*Limiter, []*Attrs) {
	s := openStore(tb, "")
	l := New(s, Options{FlushInterval: time.Hour, Logger: quietLogger(), Redis: client})
	tb.Cleanup(func() { l.Close() })
	ws := storage.NewUUID()
	p := &storage.RateLimitPolicy{ID: storage.NewUUID(), WorkspaceID: ws, Type: "requests", Unit: "rpm", Value: 1e15,
		Status: "active", GroupBy: []storage.PolicyGroup{{Key: "api_key"}}}
	if _, err := s.Policies.Put(ws, p.ID, p); err != nil {
		tb.Fatal(err)
	}
	var reqs []*Attrs
	for i := range 64 {
		a := &Attrs{WorkspaceID: ws, APIKey: fmt.Sprint("key-", i), Provider: "openai"}
		if _, ex := l.Admit(a); ex != nil {
			tb.Fatal(ex)
		}
		reqs = append(reqs, a)
	}
	return l, reqs
}

func benchRedis(b *testing.B) *redisstate.Client {
	return openRedis(b, testservices.RedisURL(b), testservices.RedisPrefix(b), redisstate.Options{})
}

// BenchmarkAdmitOnePolicy is BenchmarkAdmitRedis's policy counted in this process only.
func BenchmarkAdmitOnePolicy(b *testing.B) {
	l, reqs := onePolicyEnv(b, nil)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		l.Admit(reqs[i%len(reqs)])
		i++
	}
}

// BenchmarkAdmitRedis is one request's check and count in Redis: one script call.
func BenchmarkAdmitRedis(b *testing.B) {
	l, reqs := onePolicyEnv(b, benchRedis(b))
	b.ReportAllocs()
	defer reportCPU(b)()
	i := 0
	for b.Loop() {
		if _, ex := l.Admit(reqs[i%len(reqs)]); ex != nil {
			b.Fatal(ex)
		}
		i++
	}
	if !l.redis.Available() {
		b.Fatal("Redis went away during the benchmark: it measured the fallback")
	}
}

// BenchmarkAdmitRedisParallel runs requests from every core over one client's connection pool.
func BenchmarkAdmitRedisParallel(b *testing.B) {
	l, reqs := onePolicyEnv(b, benchRedis(b))
	var next atomic.Int64
	b.ReportAllocs()
	defer reportCPU(b)()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(1))
		for pb.Next() {
			l.Admit(reqs[i%len(reqs)])
			i++
		}
	})
	if !l.redis.Available() {
		b.Fatal("Redis went away during the benchmark: it measured the fallback")
	}
}

// BenchmarkRedisRoundTrip is the floor under BenchmarkAdmitRedis: a PING on the same client.
func BenchmarkRedisRoundTrip(b *testing.B) {
	c := benchRedis(b)
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		if err := c.Redis().Ping(context.Background()).Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// hotKeyEnv is the load benchmark's limited row: one requests policy, every request on one group whose shared
// counter holds a full window (60 buckets), on a clock that stays in the window's newest second.
func hotKeyEnv(b *testing.B) (*Limiter, *Attrs) {
	clk := newClock()
	s := openStore(b, "")
	l := New(s, Options{Now: clk.Now, FlushInterval: time.Hour, Logger: quietLogger(), Redis: benchRedis(b)})
	b.Cleanup(func() { l.Close() })
	ws := storage.NewUUID()
	p := &storage.RateLimitPolicy{ID: storage.NewUUID(), WorkspaceID: ws, Type: "requests", Unit: "rpm", Value: 1e15,
		Status: "active", GroupBy: []storage.PolicyGroup{{Key: "api_key"}}}
	if _, err := s.Policies.Put(ws, p.ID, p); err != nil {
		b.Fatal(err)
	}
	a := &Attrs{WorkspaceID: ws, APIKey: "hot", Provider: "openai"}
	for range nBuckets {
		for range 3 {
			if _, ex := l.Admit(a); ex != nil {
				b.Fatal(ex)
			}
		}
		clk.Advance(time.Second)
	}
	return l, a
}

// BenchmarkAdmitRedisHotKey is one request at a time on a counter whose window is full.
func BenchmarkAdmitRedisHotKey(b *testing.B) {
	l, a := hotKeyEnv(b)
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		if _, ex := l.Admit(a); ex != nil {
			b.Fatal(ex)
		}
	}
	if !l.redis.Available() {
		b.Fatal("Redis went away during the benchmark: it measured the fallback")
	}
}

// BenchmarkAdmitRedisHotKey32 is BenchmarkAdmitRedisHotKey from 32 goroutines, as the load benchmark's 32
// connections.
func BenchmarkAdmitRedisHotKey32(b *testing.B) {
	l, a := hotKeyEnv(b)
	b.ReportAllocs()
	defer reportCPU(b)()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Admit(a)
		}
	})
	if !l.redis.Available() {
		b.Fatal("Redis went away during the benchmark: it measured the fallback")
	}
}
