package plugins

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/gateway/hostapi"
)

// TestHotReloadHammer calls a plugin from 8 goroutines for about 2 s while it is swapped 5 times between two
// versions. Every call must succeed with one of the two versions' answers, and each version must have been
// seen (the old one finishing its calls, the new one taking the next).
func TestHotReloadHammer(t *testing.T) {
	v1, v2 := guest(t, "basic"), guest(t, "basic-v2")
	opts := testOptions(t)
	opts.CallTimeout = time.Second // -race slows the host side; the guests here never loop
	e := newEngine(t, opts)
	load(t, e, wsA, "p", v1)

	const goroutines = 8
	const swaps = 5
	const runFor = 2 * time.Second
	var (
		stop     atomic.Bool
		calls    atomic.Int64
		seen     [2]atomic.Int64
		failures = make(chan string, 16)
		wg       sync.WaitGroup
	)
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := &hostapi.Input{CheckID: "version"}
			for !stop.Load() {
				out, err := e.Call(context.Background(), wsA, "p", hostapi.KindCheck, in, nil)
				calls.Add(1)
				switch {
				case err != nil:
					select {
					case failures <- err.Error():
					default:
					}
				case string(out.Data) == `{"version":"v1"}`:
					seen[0].Add(1)
				case string(out.Data) == `{"version":"v2"}`:
					seen[1].Add(1)
				default:
					select {
					case failures <- "unexpected answer " + string(out.Data):
					default:
					}
				}
			}
		}()
	}

	start := time.Now()
	for i := range swaps {
		time.Sleep(runFor / (swaps + 1))
		next := v2
		if i%2 == 1 {
			next = v1
		}
		t0 := time.Now()
		load(t, e, wsA, "p", next)
		t.Logf("swap %d took %v", i+1, time.Since(t0))
	}
	time.Sleep(max(0, runFor-time.Since(start)))
	stop.Store(true)
	wg.Wait()
	close(failures)

	for f := range failures {
		t.Error(f)
	}
	st, _ := e.Stats(wsA, "p")
	t.Logf("%d calls in %v (v1 %d, v2 %d); stats %+v", calls.Load(), time.Since(start).Round(time.Millisecond), seen[0].Load(), seen[1].Load(), st)
	if seen[0].Load() == 0 || seen[1].Load() == 0 {
		t.Errorf("answers v1 %d, v2 %d: want both", seen[0].Load(), seen[1].Load())
	}
	if st.Errors != 0 || st.Calls != uint64(calls.Load()) {
		t.Errorf("stats %+v after %d calls", st, calls.Load())
	}
	if st.Instances > e.opts.MaxInstances || st.Instances == 0 {
		t.Errorf("%d instances of the current version", st.Instances)
	}
	if n := e.finalized.Load(); n != swaps {
		t.Errorf("%d retired versions closed, want %d", n, swaps)
	}
	// After the last swap (to v2), every call answers v2.
	if out := call(t, e, wsA, "p", hostapi.KindCheck, &hostapi.Input{CheckID: "version"}, nil); string(out.Data) != `{"version":"v2"}` {
		t.Errorf("after the swaps: %s", out.Data)
	}
}
