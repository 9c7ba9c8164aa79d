package ratelimit

import (
	"fmt"
	"testing"

	"github.com/llmgw/gateway/storage"
)

// BenchmarkFlush measures one sweep of the flusher over a policy grouped by api_key with n groups, on a store
// on disk (the save is a synced batch): "idle" when no counter changed since the last sweep (the cost of the
// walk alone), "dirty" when every one did (a record encoded and written per counter). Multiplied by sweeps per
// second, it is the flusher's share of a core, which is what a shorter FlushInterval would raise.
func BenchmarkFlush(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		for _, dirty := range []bool{false, true} {
			b.Run(fmt.Sprintf("groups=%d/dirty=%v", n, dirty), func(b *testing.B) {
				s := openStore(b, b.TempDir())
				l := newLimiter(b, s, nil)
				ws := storage.NewUUID()
				p := &storage.RateLimitPolicy{ID: storage.NewUUID(), WorkspaceID: ws, Type: "requests", Unit: "rpd",
					Value: 1e15, Status: "active", GroupBy: []storage.PolicyGroup{{Key: "api_key"}}}
				if _, err := s.Policies.Put(ws, p.ID, p); err != nil {
					b.Fatal(err)
				}
				reqs := make([]*Attrs, n)
				for i := range reqs {
					reqs[i] = &Attrs{WorkspaceID: ws, APIKey: fmt.Sprint("key-", i)}
					l.Admit(reqs[i])
				}
				if err := l.flush(); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if dirty {
						b.StopTimer()
						for _, a := range reqs {
							l.Admit(a)
						}
						b.StartTimer()
					}
					if err := l.flush(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
