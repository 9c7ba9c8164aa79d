package netguard

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"
)

type countingResolver struct {
	calls int
	addrs []netip.Addr
	err   error
}

func (r *countingResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	r.calls++
	return r.addrs, r.err
}

func TestCachingResolver(t *testing.T) {
	next := &countingResolver{addrs: []netip.Addr{netip.MustParseAddr("93.184.216.34")}}
	c := NewCachingResolver(next, 30*time.Second)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	for range 3 {
		if a, err := c.LookupNetIP(context.Background(), "ip", "llm.example.com"); err != nil || len(a) != 1 {
			t.Fatal(a, err)
		}
	}
	if next.calls != 1 {
		t.Fatalf("resolved %d times within the TTL, want 1", next.calls)
	}
	now = now.Add(31 * time.Second)
	c.LookupNetIP(context.Background(), "ip", "llm.example.com")
	if next.calls != 2 {
		t.Fatalf("resolved %d times after the TTL, want 2", next.calls)
	}
	next.err = errors.New("no such host")
	for range 2 {
		if _, err := c.LookupNetIP(context.Background(), "ip", "other.example.com"); err == nil {
			t.Fatal("a failure was answered from the cache")
		}
	}
	if next.calls != 4 {
		t.Fatalf("failures were remembered: %d calls", next.calls)
	}
}
