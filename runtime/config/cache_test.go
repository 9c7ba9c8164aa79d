package config

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
)

func TestPlanCache(t *testing.T) {
	tests := []struct {
		name    string
		json    string
		wantErr bool
	}{
		{"valid", `{"virtual_key": "a", "retry": {"attempts": 2}}`, false},
		{"invalid", `{"retry": {"attempts": -1}}`, true},
		{"not json", `{`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewPlanCache(4)
			p1, err1 := c.Load([]byte(tc.json))
			p2, err2 := c.Load([]byte(tc.json))
			if (err1 != nil) != tc.wantErr {
				t.Fatalf("err %v, wantErr %v", err1, tc.wantErr)
			}
			if p1 != p2 {
				t.Errorf("second Load returned another *Plan")
			}
			if err1 != err2 {
				t.Errorf("second Load returned another error value: %v / %v", err1, err2)
			}
			if tc.wantErr {
				asConfigError(t, err1)
			}
			if c.Len() != 1 {
				t.Errorf("Len = %d, want 1", c.Len())
			}
		})
	}
}

func TestPlanCacheKeyIsTheText(t *testing.T) {
	c := NewPlanCache(4)
	a, _ := c.Load([]byte(`{"virtual_key": "a"}`))
	b, _ := c.Load([]byte(`{"virtual_key":"a"}`))
	if a == b {
		t.Fatal("two texts share a Plan")
	}
	if a.Hash == b.Hash {
		t.Fatal("two texts share a hash")
	}
}

func TestPlanCacheEviction(t *testing.T) {
	tests := []struct {
		name string
		size int
	}{
		{"size 1", 1},
		{"size 3", 3},
		{"default size", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewPlanCache(tc.size)
			size := tc.size
			if size <= 0 {
				size = DefaultCacheSize
			}
			hot := []byte(`{"virtual_key": "hot"}`)
			hotPlan, _ := c.Load(hot)
			for i := range size * 3 {
				c.Load([]byte(fmt.Sprintf(`{"virtual_key": "k%d"}`, i)))
				if size > 1 {
					if p, _ := c.Load(hot); p != hotPlan { // in use: the clock keeps it
						t.Fatalf("after %d loads the hot config was evicted", i)
					}
				}
				if c.Len() > size {
					t.Fatalf("Len %d above size %d", c.Len(), size)
				}
			}
			if c.Len() != size {
				t.Errorf("Len = %d, want %d", c.Len(), size)
			}
		})
	}
}

// TestPlanCacheHammer loads a mix of repeated and new configs, valid and invalid, from many goroutines; run
// with -race. Every Load of one text sees one result.
func TestPlanCacheHammer(t *testing.T) {
	const size = 16
	c := NewPlanCache(size)
	texts := make([][]byte, 64)
	for i := range texts {
		if i%4 == 0 {
			texts[i] = []byte(fmt.Sprintf(`{"retry": {"attempts": %d.5}}`, i)) // invalid
		} else {
			texts[i] = []byte(fmt.Sprintf(`{"strategy": {"mode": "fallback"}, "targets": [{"virtual_key": "a%d"}, {"virtual_key": "b"}]}`, i))
		}
	}
	workers := 4 * runtime.GOMAXPROCS(0)
	n := 2000
	if testing.Short() {
		n = 200
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				k := (w*7 + i*13) % len(texts)
				if i%3 == 0 {
					k %= 4 // a few hot configs
				}
				p, err := c.Load(texts[k])
				if (err != nil) != (k%4 == 0) || (err == nil) == (p == nil) {
					t.Errorf("text %d: plan %v err %v", k, p, err)
					return
				}
				if p != nil && len(p.Root.Children) != 2 {
					t.Errorf("text %d: %d children", k, len(p.Root.Children))
					return
				}
				if l := c.Len(); l > size {
					t.Errorf("Len %d above size %d", l, size)
					return
				}
			}
		}()
	}
	wg.Wait()
}
