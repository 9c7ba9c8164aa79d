package storage

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestAPIKeyHammer runs Lookups concurrently with Creates and Deletes (and with the cache being emptied, as a
// restart would, so that Lookups keep going to pebble) and checks that the cache never disagrees with the store:
//
//   - once Delete has returned, the key never authenticates again, not even through a Lookup that read it from
//     pebble before the Delete and put it into the cache after (the generation counter's job);
//   - live keys always authenticate, as themselves;
//   - at the end every deleted key's Lookup is ErrNotFound and every live key's Lookup works.
//
// Run it with -race. It is bounded: 8 goroutines; the deleters, creator and dropper do 200 operations each, and
// the lookers keep going (at most 4000 Lookups each) until the deleters are done.
func TestAPIKeyHammer(t *testing.T) {
	const (
		ops      = 200
		lookers  = 4
		deleters = 2
		creators = 1
		droppers = 1
		workers  = lookers + deleters + creators + droppers
		doomedN  = deleters * ops / 2 // each deleter deletes on every other operation
		// maxLookups bounds each looker; they stop earlier, once the deleters are done.
		maxLookups = 20 * ops
	)
	fs := vfs.NewMem()
	s := openTest(t, fs, nil)
	ws := newWorkspace(t, s, "hammer")

	type entry struct {
		secret string
		id     string
	}
	mk := func(n int, name string) []entry {
		out := make([]entry, n)
		for i := range out {
			sec, k, err := s.APIKeys.Create(ws.ID, fmt.Sprintf("%s-%d", name, i), i%2 == 0)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = entry{sec, k.ID}
		}
		return out
	}
	doomed := mk(doomedN, "doomed")
	survivors := mk(16, "survivor")
	// Reopen, so that the cache starts empty.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, fs, nil)

	var (
		isDeleted    sync.Map     // secret -> true, once its Delete has returned
		cursor       atomic.Int64 // index in doomed of the key being deleted now
		deletersLeft atomic.Int32
		mu           sync.Mutex
		live         = map[string]entry{}
		deleted      []entry
		errs         = make(chan error, workers*ops)
		wg           sync.WaitGroup
	)
	fail := func(format string, args ...any) {
		select {
		case errs <- fmt.Errorf(format, args...):
		default:
		}
	}
	markDeleted := func(e entry) {
		isDeleted.Store(e.secret, true)
		mu.Lock()
		deleted = append(deleted, e)
		mu.Unlock()
	}
	// lookupDoomed looks a doomed key up and checks the answer against what is known to have happened before.
	lookupDoomed := func(e entry) {
		_, wasDeleted := isDeleted.Load(e.secret)
		k, err := s.APIKeys.Lookup(e.secret)
		switch {
		case err == nil && k.ID != e.id:
			fail("Lookup of %s returned key %s", e.id, k.ID)
		case err == nil && wasDeleted:
			fail("key %s authenticates after its Delete returned", e.id)
		case err != nil && !errors.Is(err, ErrNotFound):
			fail("Lookup: %v", err)
		}
	}

	deletersLeft.Store(deleters)
	for w := range workers {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			switch {
			case w < lookers:
				// The lookers keep going while the deleters work (up to maxLookups each), so that every Delete
				// meets Lookups of its key.
				for i := 0; i < maxLookups && (i < ops || deletersLeft.Load() > 0); i++ {
					switch i % 8 {
					case 6: // a survivor: always found
						e := survivors[rng.IntN(len(survivors))]
						if k, err := s.APIKeys.Lookup(e.secret); err != nil || k.ID != e.id || k.WorkspaceID != ws.ID {
							fail("Lookup of survivor %s = %+v, %v", e.id, k, err)
						}
					case 7: // an unknown secret: never found
						if k, err := s.APIKeys.Lookup(NewAPIKeySecret()); !errors.Is(err, ErrNotFound) {
							fail("Lookup of an unknown secret = %+v, %v", k, err)
						}
					default: // a doomed key near the one being deleted now
						c := int(cursor.Load()) + rng.IntN(3) - 1
						lookupDoomed(doomed[min(max(c, 0), len(doomed)-1)])
					}
				}
			case w < lookers+deleters:
				d := w - lookers
				defer deletersLeft.Add(-1)
				for i := range ops {
					if i%2 == 1 {
						lookupDoomed(doomed[rng.IntN(len(doomed))])
						continue
					}
					idx := d + deleters*(i/2) // the deleters interleave through doomed
					e := doomed[idx]
					cursor.Store(int64(idx))
					dropAPIKeyCache(s) // cold, so that the lookers read it from pebble as it is deleted
					runtime.Gosched()
					if err := s.APIKeys.Delete(ws.ID, e.id); err != nil {
						fail("Delete %s: %v", e.id, err)
					}
					markDeleted(e)
				}
			case w < lookers+deleters+creators: // make keys, use them, delete some of them
				var own []entry
				for i := range ops {
					switch {
					case i%3 == 0 || len(own) == 0:
						sec, k, err := s.APIKeys.Create(ws.ID, fmt.Sprintf("w%d-%d", w, i), false)
						if err != nil {
							fail("Create: %v", err)
							continue
						}
						own = append(own, entry{sec, k.ID})
					case i%3 == 1:
						j := rng.IntN(len(own))
						e := own[j]
						own = append(own[:j], own[j+1:]...)
						if err := s.APIKeys.Delete(ws.ID, e.id); err != nil {
							fail("Delete own %s: %v", e.id, err)
						}
						markDeleted(e)
						if _, err := s.APIKeys.Lookup(e.secret); !errors.Is(err, ErrNotFound) {
							fail("Lookup right after Delete of %s = %v", e.id, err)
						}
					default:
						e := own[rng.IntN(len(own))]
						if k, err := s.APIKeys.Lookup(e.secret); err != nil || k.ID != e.id {
							fail("Lookup of own live key %s = %+v, %v", e.id, k, err)
						}
					}
				}
				mu.Lock()
				for _, e := range own {
					live[e.id] = e
				}
				mu.Unlock()
			default: // empty the cache now and then, as a restart would, so that Lookups go to pebble
				for i := 0; i < ops || deletersLeft.Load() > 0; i++ {
					dropAPIKeyCache(s)
					for range 4 {
						runtime.Gosched()
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, e := range survivors {
		live[e.id] = e
	}

	if len(deleted) < len(doomed) {
		t.Fatalf("only %d keys deleted, want at least %d", len(deleted), len(doomed))
	}
	for _, e := range deleted {
		if k, err := s.APIKeys.Lookup(e.secret); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleted key %s still authenticates: %+v, %v", e.id, k, err)
		}
	}
	for _, e := range live {
		if k, err := s.APIKeys.Lookup(e.secret); err != nil || k.ID != e.id {
			t.Errorf("live key %s: %+v, %v", e.id, k, err)
		}
	}
	list, err := s.APIKeys.List(ws.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(live) {
		t.Fatalf("List has %d keys, want %d live", len(list), len(live))
	}
	for _, k := range list {
		if _, ok := live[k.ID]; !ok {
			t.Errorf("List holds key %s that should be deleted", k.ID)
		}
	}
	s.APIKeys.mu.RLock()
	cached := len(s.APIKeys.cache)
	s.APIKeys.mu.RUnlock()
	if cached > len(live) {
		t.Errorf("cache holds %d keys, only %d are live", cached, len(live))
	}
}
