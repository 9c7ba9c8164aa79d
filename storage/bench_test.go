package storage

import (
	"errors"
	"testing"
)

func BenchmarkAPIKeyLookupCached(b *testing.B) {
	s := openTest(b, nil, nil)
	ws := newWorkspace(b, s, "bench")
	secret, k, err := s.APIKeys.Create(ws.ID, "bench", false)
	if err != nil {
		b.Fatal(err)
	}
	if got, err := s.APIKeys.Lookup(secret); err != nil || got.ID != k.ID {
		b.Fatalf("Lookup = %v, %v", got, err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.APIKeys.Lookup(secret); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAPIKeyLookupMiss(b *testing.B) {
	s := openTest(b, nil, nil)
	secret := NewAPIKeySecret()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.APIKeys.Lookup(secret); !errors.Is(err, ErrNotFound) {
			b.Fatal(err)
		}
	}
}

var sinkKey []byte

func BenchmarkKeyEncoding(b *testing.B) {
	ws, id := NewUUID(), NewUUID()
	b.ReportAllocs()
	for b.Loop() {
		sinkKey = key(tableAPIKeyID, ws, id)
	}
}

var sinkHash apiKeyHash

func BenchmarkHashAPIKey(b *testing.B) {
	kr, err := newKeyring(testMasterKey(1))
	if err != nil {
		b.Fatal(err)
	}
	secret := NewAPIKeySecret()
	b.ReportAllocs()
	for b.Loop() {
		sinkHash = kr.hashAPIKey(secret)
	}
}

// TestAllocations holds the hot paths to their allocation budgets: authenticating a request with a cached key
// and hashing a key allocate nothing; encoding a key allocates the key only.
func TestAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items, which allocates")
	}
	s := openTest(t, nil, nil)
	ws := newWorkspace(t, s, "allocs")
	secret, _, err := s.APIKeys.Create(ws.ID, "a", false)
	if err != nil {
		t.Fatal(err)
	}
	wsID, id := NewUUID(), NewUUID()
	tests := []struct {
		name string
		max  float64
		fn   func()
	}{
		{name: "cached Lookup", max: 0, fn: func() {
			if _, err := s.APIKeys.Lookup(secret); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "hashAPIKey", max: 0, fn: func() { sinkHash = s.keys.hashAPIKey(secret) }},
		{name: "key", max: 1, fn: func() { sinkKey = key(tableAPIKeyID, wsID, id) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := testing.AllocsPerRun(200, tt.fn); got > tt.max {
				t.Fatalf("%v allocations per run, want at most %v", got, tt.max)
			}
		})
	}
}
