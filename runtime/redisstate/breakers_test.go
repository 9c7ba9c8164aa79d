package redisstate_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime/redisstate"
)

const breakerID = "0123456789abcdef0123456789abcdef"

// TestBreakersFail: failures add up across calls within a window that starts at the first one (the key's
// expiry is set once), and ids that are not lowercase hex never reach Redis.
func TestBreakersFail(t *testing.T) {
	c, prefix := openRedis(t)
	b := c.Breakers()
	for want := int64(1); want <= 3; want++ {
		n, ok := b.Fail(breakerID, time.Minute)
		if !ok || n != want {
			t.Fatalf("Fail = %d, %v; want %d", n, ok, want)
		}
	}
	ttl, err := c.Redis().PTTL(context.Background(), prefix+"breaker:"+breakerID).Result()
	if err != nil || ttl <= 0 || ttl > time.Minute {
		t.Fatalf("PTTL = %v, %v; want at most the window", ttl, err)
	}
	for _, bad := range []string{"", "ABC", "key with spaces", strings.Repeat("a", 65), "open|x"} {
		if _, ok := b.Fail(bad, time.Minute); ok {
			t.Errorf("Fail(%q) was counted", bad)
		}
	}
}

// TestBreakersWatch: Open and Close reach every watcher, the sender's own included, and malformed messages are
// dropped without stopping the watch.
func TestBreakersWatch(t *testing.T) {
	c, _ := openRedis(t)
	b := c.Breakers()
	var mu sync.Mutex
	var got []string
	stop := b.Watch(
		func(id string, until time.Time) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, "open "+id+" "+until.UTC().Format(time.RFC3339Nano))
		},
		func(id string) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, "close "+id)
		})
	defer stop()
	channel := c.Key("breakers")
	waitSubscribed(t, c, channel)
	for _, junk := range []string{"open", "open " + breakerID, "open " + breakerID + " soon", "close " + breakerID + " x",
		"close NOTHEX", "open " + breakerID + " -5", strings.Repeat("x", 200)} {
		if err := c.Redis().Publish(context.Background(), channel, junk).Err(); err != nil {
			t.Fatal(err)
		}
	}
	until := time.UnixMilli(1_900_000_000_123)
	b.Open(breakerID, until)
	b.Close(breakerID)
	want := []string{"open " + breakerID + " " + until.UTC().Format(time.RFC3339Nano), "close " + breakerID}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("watched %q, want %q", got, want)
	}
}

// waitSubscribed waits until the channel has a subscriber: a message published before is lost.
func waitSubscribed(t *testing.T, c *redisstate.Client, channel string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		subs, err := c.Redis().PubSubNumSub(context.Background(), channel).Result()
		if err == nil && subs[channel] > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no subscriber on %s within 10 s", channel)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
