package storage

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeRemote is a CacheRemote in memory that records what it is asked; failing makes every call fail.
type fakeRemote struct {
	mu      sync.Mutex
	values  map[string][]byte
	ttls    map[string]time.Duration
	gets    int
	failing bool
}

var errRemoteDown = errors.New("remote down")

func newFakeRemote() *fakeRemote {
	return &fakeRemote{values: map[string][]byte{}, ttls: map[string]time.Duration{}}
}

func (r *fakeRemote) Get(key string) ([]byte, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gets++
	if r.failing {
		return nil, false, errRemoteDown
	}
	v, ok := r.values[key]
	return v, ok, nil
}

func (r *fakeRemote) Set(key string, value []byte, ttl time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failing {
		return errRemoteDown
	}
	r.values[key], r.ttls[key] = append([]byte(nil), value...), ttl
	return nil
}

func (r *fakeRemote) Delete(key string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failing {
		return errRemoteDown
	}
	delete(r.values, key)
	return nil
}

func (r *fakeRemote) getCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gets
}

// TestCacheRemoteSharesAnswers: two stores (two replicas) over one remote: an answer one puts is a hit on the
// other, under the engine's key and with the answer's remaining life as TTL; the engine itself holds no answer;
// a delete on one is a miss on the other once its hot copy is not kept.
func TestCacheRemoteSharesAnswers(t *testing.T) {
	clk := newFakeClock()
	remote := newFakeRemote()
	a, b := openTest(t, nil, clk), openTest(t, nil, clk)
	a.Cache.UseRemote(remote, 0)
	b.Cache.UseRemote(remote, 0)
	ws := NewUUID()
	k := testCacheKey("shared")
	now := clk.Now()
	body := strings.Repeat(`{"content":"shared answer"}`, 50)
	if err := a.Cache.Put(ws, k, &CachedAnswer{Status: 200, ContentType: "application/json", Body: []byte(body), CreatedAt: now, ExpiresAt: now.Add(90 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	key := string(cacheKey(ws, &k))
	if got := remote.ttls[key]; got != 90*time.Second {
		t.Fatalf("TTL %v under %q, want 90s", got, key)
	}
	got, ok, err := b.Cache.Get(ws, k, now)
	if err != nil || !ok {
		t.Fatalf("replica B: %v, %v", ok, err)
	}
	if string(got.Body) != body || got.Status != 200 || !got.ExpiresAt.Equal(now.Add(90*time.Second)) || !got.CreatedAt.Equal(now) {
		t.Fatalf("replica B read %d %q expires %v", got.Status, got.Body, got.ExpiresAt)
	}
	if n := countPrefix(t, a, "cache/"); n != 0 {
		t.Fatalf("%d answers in the engine beside the remote", n)
	}
	// Expiry is read from the value too: the remote's TTL is its own clock.
	if _, ok, _ := b.Cache.Get(ws, k, now.Add(90*time.Second)); ok {
		t.Fatal("an expired answer read as a hit")
	}
	if err := a.Cache.Delete(ws, k); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := b.Cache.Get(ws, k, now); ok {
		t.Fatal("an answer deleted on replica A is a hit on replica B")
	}
}

// TestCacheRemoteHotLife: without a hot life every hit asks the remote; with one, a replica serves its copy
// until the life passes, and then sees what another replica wrote meanwhile.
func TestCacheRemoteHotLife(t *testing.T) {
	clk := newFakeClock()
	remote := newFakeRemote()
	a, b := openTest(t, nil, clk), openTest(t, nil, clk)
	a.Cache.UseRemote(remote, 0)
	ws := NewUUID()
	k := testCacheKey("hot")
	now := clk.Now()
	put := func(s *Store, body string) {
		t.Helper()
		if err := s.Cache.Put(ws, k, &CachedAnswer{Status: 200, Body: []byte(body), ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	read := func(s *Store) string {
		t.Helper()
		got, ok, err := s.Cache.Get(ws, k, now)
		if err != nil || !ok {
			t.Fatalf("Get: %v, %v", ok, err)
		}
		return string(got.Body)
	}
	put(a, "one")
	before := remote.getCount()
	read(a)
	read(a)
	if n := remote.getCount() - before; n != 2 {
		t.Fatalf("hot life 0: %d remote reads for 2 hits, want 2", n)
	}

	b.Cache.UseRemote(remote, time.Hour)
	if got := read(b); got != "one" {
		t.Fatalf("B read %q", got)
	}
	before = remote.getCount()
	put(a, "two") // a force-refresh on replica A
	if got := read(b); got != "one" {
		t.Fatalf("within its hot life, B read %q, want its copy", got)
	}
	if n := remote.getCount() - before; n != 0 {
		t.Fatalf("a hot hit asked the remote %d times", n)
	}
	b.Cache.hot.mu.Lock()
	for _, el := range b.Cache.hot.entries {
		el.Value.(*hotEntry).kept = time.Now().Add(-time.Hour) // its life has passed
	}
	b.Cache.hot.mu.Unlock()
	if got := read(b); got != "two" {
		t.Fatalf("after its hot life, B read %q, want A's new answer", got)
	}
}

// TestCacheRemoteFailing: a failing remote is a miss on Get (an error the caller logs) and a dropped Put, and
// leaves no copy in memory that would hide the failure.
func TestCacheRemoteFailing(t *testing.T) {
	clk := newFakeClock()
	remote := newFakeRemote()
	s := openTest(t, nil, clk)
	s.Cache.UseRemote(remote, time.Hour)
	ws := NewUUID()
	k := testCacheKey("failing")
	now := clk.Now()
	remote.failing = true
	if err := s.Cache.Put(ws, k, &CachedAnswer{Status: 200, Body: []byte("x"), ExpiresAt: now.Add(time.Hour)}); !errors.Is(err, errRemoteDown) {
		t.Fatalf("Put = %v, want the remote's error", err)
	}
	if _, ok, err := s.Cache.Get(ws, k, now); ok || !errors.Is(err, errRemoteDown) {
		t.Fatalf("Get = %v, %v; want a miss with the remote's error", ok, err)
	}
	remote.failing = false
	if _, ok, err := s.Cache.Get(ws, k, now); ok || err != nil {
		t.Fatalf("Get after recovery = %v, %v; want a plain miss (the failed Put kept nothing)", ok, err)
	}
	// An answer with less than a millisecond to live is not sent.
	if err := s.Cache.Put(ws, k, &CachedAnswer{Status: 200, Body: []byte("x"), ExpiresAt: now.Add(time.Microsecond)}); err != nil {
		t.Fatal(err)
	}
	if len(remote.values) != 0 {
		t.Fatal("an answer about to expire was sent to the remote")
	}
}
