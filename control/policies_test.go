package control

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/gateway/storage"
)

// Policies are listed by created_at; policies made at the same instant by id.
func TestSortPolicies(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	mk := func(id string, at time.Time) *storage.RateLimitPolicy {
		return &storage.RateLimitPolicy{ID: id, Stamps: storage.Stamps{CreatedAt: at, UpdatedAt: t0.Add(time.Hour)}}
	}
	list := []*storage.RateLimitPolicy{mk("c", t0), mk("d", t0.Add(-time.Second)), mk("a", t0), mk("e", t0.Add(time.Nanosecond)), mk("b", t0)}
	rateLimits.sort(list)
	var got []string
	for _, p := range list {
		got = append(got, p.ID)
	}
	if want := []string{"d", "a", "b", "c", "e"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
}

func TestPageBounds(t *testing.T) {
	const huge = int(^uint(0) >> 1)
	tests := []struct {
		name             string
		n, size, current int
		sized            bool
		wantLo, wantHi   int
	}{
		{"unsized, page 0 holds all", 5, 0, 0, false, 0, 5},
		{"unsized, page 1 is past the end", 5, 0, 1, false, 5, 5},
		{"size 0 is empty", 5, 0, 0, true, 5, 5},
		{"first page", 5, 2, 0, true, 0, 2},
		{"last page is short", 5, 2, 2, true, 4, 5},
		{"past the end", 5, 2, 3, true, 5, 5},
		{"huge size", 5, huge, 0, true, 0, 5},
		{"huge page", 5, 2, huge, true, 5, 5},
		{"no items", 0, 2, 0, true, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi := pageBounds(tc.n, tc.size, tc.current, tc.sized)
			if lo != tc.wantLo || hi != tc.wantHi {
				t.Fatalf("pageBounds = [%d, %d), want [%d, %d)", lo, hi, tc.wantLo, tc.wantHi)
			}
		})
	}
}

func fields(t testing.TB, body string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Updates that each change one field, run at once, all land: the read-merge-write is serialised, so none
// writes back a field another has just changed.
func TestPolicyUpdatesHammer(t *testing.T) {
	f := newFixture(t, Options{})
	pol, err := f.plane.CreatePolicy(ctx, f.caller, fields(t, `{"type": "requests", "unit": "rpm", "value": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var body string
			if i%2 == 0 {
				body = fmt.Sprintf(`{"value": %d}`, 100+i)
			} else {
				body = fmt.Sprintf(`{"name": "n%d"}`, i)
			}
			if _, err := f.plane.UpdatePolicy(ctx, f.caller, pol.ID, fields(t, body)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := f.plane.GetPolicy(ctx, f.caller, pol.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if got.Value < 100 || got.Name == nil {
		t.Fatalf("an update was lost: value %v, name %v", got.Value, got.Name)
	}
}

// Two creates of one chosen id at once: exactly one wins, the other is a 409.
func TestPolicyCreateSameIDHammer(t *testing.T) {
	f := newFixture(t, Options{})
	const id = "0c9d8e7f-6a5b-4c3d-9e1f-123456789abc"
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for range 8 {
		wg.Go(func() {
			_, err := f.plane.CreatePolicy(ctx, f.caller, fields(t, `{"id": "`+id+`", "type": "requests", "unit": "rpm", "value": 1}`))
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				won++
			} else if status(err) != 409 {
				t.Errorf("losing create: %v, want a 409", err)
			}
		})
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("%d creates of one id succeeded, want 1", won)
	}
}
