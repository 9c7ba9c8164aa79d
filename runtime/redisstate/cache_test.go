package redisstate_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/internal/testservices"
	"github.com/llmgw/gateway/runtime/redisstate"
	"github.com/llmgw/gateway/storage"
)

var _ storage.CacheRemote = (*redisstate.Cache)(nil)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// openRedis connects to the test Redis with a prefix of the test's own.
func openRedis(t testing.TB) (*redisstate.Client, string) {
	t.Helper()
	prefix := testservices.RedisPrefix(t)
	c, err := redisstate.Open(testservices.RedisURL(t), redisstate.Options{Prefix: prefix, Logger: quiet(),
		Timeout: 2 * time.Second}) // -race on shared cores: not the production bound
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if !c.Available() {
		t.Fatal("the test Redis does not answer")
	}
	return c, prefix
}

// openReplica opens an in-memory store whose answers live in c, as a replica started with --redis does.
func openReplica(t testing.TB, c *redisstate.Client, hotLife time.Duration) *storage.Store {
	t.Helper()
	key := make([]byte, storage.MasterKeySize)
	s, err := storage.Open("db", storage.Options{MasterKey: key, InMemory: true, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if c != nil {
		s.Cache.UseRemote(c.Cache(), hotLife)
	}
	return s
}

func chatAnswer() []byte {
	content := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 40)
	return []byte(`{"id":"chatcmpl-9x","object":"chat.completion","created":1715000000,"model":"gpt-4o-mini",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"` + content + `"},"logprobs":null,"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":12,"completion_tokens":400,"total_tokens":412}}`)
}

// TestCacheSharedByReplicas: an answer replica A puts is a hit on replica B, kept in Redis under the prefix and
// the store's key with the answer's remaining life as its TTL; a delete on A is a miss on B.
func TestCacheSharedByReplicas(t *testing.T) {
	c, prefix := openRedis(t)
	a, b := openReplica(t, c, 0), openReplica(t, c, 0)
	ws := storage.NewUUID()
	k := sha256.Sum256([]byte("question"))
	now := time.Now()
	body := chatAnswer()
	if err := a.Cache.Put(ws, k, &storage.CachedAnswer{Status: 200, ContentType: "application/json", Body: body, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	got, ok, err := b.Cache.Get(ws, k, now)
	if err != nil || !ok {
		t.Fatalf("replica B: %v, %v", ok, err)
	}
	if string(got.Body) != string(body) || got.Status != 200 || got.ContentType != "application/json" {
		t.Fatalf("replica B read %d %q %q", got.Status, got.ContentType, got.Body)
	}
	redisKey := fmt.Sprintf("%scache/%s/%x", prefix, ws, k)
	ttl, err := c.Redis().PTTL(context.Background(), redisKey).Result()
	if err != nil {
		t.Fatal(err)
	}
	// The TTL is the answer's life at Put, less the time the test took since.
	if ttl <= 59*time.Minute || ttl > time.Hour {
		t.Fatalf("PTTL of %s = %v, want just under an hour", redisKey, ttl)
	}
	if err := a.Cache.Delete(ws, k); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := b.Cache.Get(ws, k, now); ok || err != nil {
		t.Fatalf("after A's delete, B: %v, %v", ok, err)
	}
}

// TestCacheRedisUnreachable: a Redis that does not answer makes Get a miss and Put a no-op, without an error
// and without a call (Available is false).
func TestCacheRedisUnreachable(t *testing.T) {
	c, err := redisstate.Open("redis://127.0.0.1:1/0", redisstate.Options{Logger: quiet(), Timeout: 50 * time.Millisecond,
		ProbeEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Available() {
		t.Fatal("a Redis on port 1 is available")
	}
	s := openReplica(t, c, 0)
	ws := storage.NewUUID()
	k := sha256.Sum256([]byte("question"))
	now := time.Now()
	if err := s.Cache.Put(ws, k, &storage.CachedAnswer{Status: 200, Body: []byte("{}"), ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatalf("Put with Redis down = %v", err)
	}
	if _, ok, err := s.Cache.Get(ws, k, now); ok || err != nil {
		t.Fatalf("Get with Redis down = %v, %v; want a plain miss", ok, err)
	}
}

// TestCacheValueBounded: an answer too large to share is refused with an error naming the bound, not sent.
func TestCacheValueBounded(t *testing.T) {
	c, _ := openRedis(t)
	r := c.Cache()
	if err := r.Set("big", make([]byte, redisstate.MaxCacheValue+1), time.Minute); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Fatalf("Set of an oversized value = %v", err)
	}
	if err := r.Set("short", []byte("x"), time.Microsecond); err == nil {
		t.Fatal("Set with a TTL below a millisecond was accepted")
	}
	if _, ok, err := r.Get("big"); ok || err != nil {
		t.Fatalf("Get = %v, %v", ok, err)
	}
}

var sinkAnswer *storage.CachedAnswer

// BenchmarkCacheHit reads a cached 2 KB chat answer: from pebble (the embedded default), from Redis on every
// hit (no hot copy), and from Redis with the usual hot life (most hits served from memory).
func BenchmarkCacheHit(b *testing.B) {
	c, _ := openRedis(b)
	for _, bc := range []struct {
		name   string
		client *redisstate.Client
		life   time.Duration
	}{
		{"embedded", nil, 0},
		{"redis", c, 0},
		{"redis-hot", c, storage.DefaultRemoteHotLife},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := openReplica(b, bc.client, bc.life)
			ws := storage.NewUUID()
			k := sha256.Sum256([]byte("bench"))
			now := time.Now()
			if err := s.Cache.Put(ws, k, &storage.CachedAnswer{Status: 200, ContentType: "application/json", Body: chatAnswer(), ExpiresAt: now.Add(time.Hour)}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				a, ok, err := s.Cache.Get(ws, k, now)
				if !ok || err != nil {
					b.Fatal(ok, err)
				}
				sinkAnswer = a
			}
		})
	}
}
