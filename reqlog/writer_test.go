package reqlog

import (
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/gateway/storage"
)

func openStore(t testing.TB) *storage.Store {
	t.Helper()
	master := make([]byte, storage.MasterKeySize)
	rand.Read(master)
	st, err := storage.Open("mem", storage.Options{MasterKey: master, InMemory: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// clock is a settable clock for Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func stored(t *testing.T, st *storage.Store) []*storage.LogEntry {
	t.Helper()
	page, err := st.Logs.List(storage.LogQuery{Limit: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	return page.Entries
}

func entry(i int) *Entry {
	return &Entry{WorkspaceID: "ws", TraceID: "t" + string(rune('a'+i%26)), Status: 200, Model: "m"}
}

// TestBatches shows that entries are written in batches: a full batch at once, without waiting for the window,
// and the rest once the window closes (here: at Close).
func TestBatches(t *testing.T) {
	st := openStore(t)
	var batches []int
	var mu sync.Mutex
	full := make(chan struct{}, 1)
	w := New(st.Logs, Options{BatchSize: 100, FlushWindow: time.Hour})
	w.onBatch = func(n int) {
		mu.Lock()
		batches = append(batches, n)
		mu.Unlock()
		if n == 100 {
			full <- struct{}{}
		}
	}
	for i := range 100 {
		w.Record(entry(i))
	}
	select {
	case <-full:
	case <-time.After(10 * time.Second):
		t.Fatal("no full batch written while the window was open")
	}
	// The rest is recorded once the full batch is written: recorded while the writer takes the queue, some of
	// it could join that take and be written as a third batch.
	for i := range 30 {
		w.Record(entry(100 + i))
	}
	w.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(batches) != 2 || batches[0] != 100 || batches[1] != 30 {
		t.Fatalf("batches %v, want [100 30]", batches)
	}
	if n := len(stored(t, st)); n != 130 {
		t.Fatalf("%d entries stored, want 130", n)
	}
}

// TestFlushWindow shows that entries are written without Close once the window is over.
func TestFlushWindow(t *testing.T) {
	st := openStore(t)
	written := make(chan int, 10)
	w := New(st.Logs, Options{FlushWindow: time.Millisecond})
	defer w.Close()
	w.onBatch = func(n int) { written <- n }
	w.Record(entry(0))
	select {
	case <-written:
	case <-time.After(10 * time.Second):
		t.Fatal("the entry was not written")
	}
	if es := stored(t, st); len(es) != 1 || !strings.HasPrefix(es[0].ID, storage.LogIDPrefix) {
		t.Fatalf("stored %+v", es)
	}
}

// TestDropWhenFull blocks the store's writes and fills the queue: Record returns at once and counts each
// entry it could not queue.
func TestDropWhenFull(t *testing.T) {
	st := openStore(t)
	var dropped atomic.Int64
	entered, release := make(chan struct{}), make(chan struct{})
	w := New(st.Logs, Options{QueueSize: 4, FlushWindow: time.Millisecond, OnDrop: func(n int) { dropped.Add(int64(n)) }})
	var once sync.Once
	w.onBatch = func(int) {
		once.Do(func() {
			close(entered)
			<-release // the writer is stuck: nothing leaves the queue
		})
	}
	w.Record(entry(0))
	<-entered
	done := make(chan struct{})
	go func() {
		for i := 1; i <= 7; i++ {
			w.Record(entry(i))
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Record blocked on a full queue")
	}
	if n := dropped.Load(); n != 3 {
		t.Fatalf("dropped %d, want 3", n)
	}
	close(release)
	w.Close()
	if n := len(stored(t, st)); n != 5 {
		t.Fatalf("%d entries stored, want 5 (1 + a queue of 4)", n)
	}
	w.Record(entry(9))
	if n := dropped.Load(); n != 4 {
		t.Fatalf("a Record after Close: dropped %d, want 4", n)
	}
}

// TestCloseDrains shows that Close writes everything queued, and that a second Close is harmless.
func TestCloseDrains(t *testing.T) {
	st := openStore(t)
	w := New(st.Logs, Options{FlushWindow: time.Hour, BatchSize: 7})
	for i := range 50 {
		w.Record(entry(i))
	}
	w.Close()
	w.Close()
	if n := len(stored(t, st)); n != 50 {
		t.Fatalf("%d entries stored after Close, want 50", n)
	}
}

func TestSweepRetention(t *testing.T) {
	st := openStore(t)
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	w := New(st.Logs, Options{Retention: 48 * time.Hour, Now: clk.Now, FlushWindow: time.Millisecond})
	defer w.Close()
	old := entry(0)
	w.Record(old) // CreatedAt: the clock's time
	clk.Advance(24 * time.Hour)
	young := entry(1)
	w.Record(young)
	waitStored(t, st, 2)
	clk.Advance(25 * time.Hour) // old is 49 hours old, young 25
	if err := w.Sweep(); err != nil {
		t.Fatal(err)
	}
	es := stored(t, st)
	if len(es) != 1 || es[0].TraceID != young.TraceID {
		t.Fatalf("after the sweep: %d entries (%v), want only %s", len(es), es, young.TraceID)
	}
	clk.Advance(24 * time.Hour)
	if err := w.Sweep(); err != nil {
		t.Fatal(err)
	}
	if es := stored(t, st); len(es) != 0 {
		t.Fatalf("after the second sweep: %d entries", len(es))
	}
}

func waitStored(t *testing.T, st *storage.Store, n int) {
	t.Helper()
	for range 1000 {
		if len(stored(t, st)) == n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%d entries never stored", n)
}

// TestRecordCopies shows that Record keeps a copy: the caller's entry is not changed, and what the caller does
// to it afterwards is not what is stored (routes reuses nothing, but builds the entry on its stack).
func TestRecordCopies(t *testing.T) {
	st := openStore(t)
	w := New(st.Logs, Options{FlushWindow: time.Millisecond, Bodies: true})
	e := entry(0)
	e.Request = json.RawMessage(`{"a":1}`)
	w.Record(e)
	e.Model, e.Status, e.Request = "changed", 500, json.RawMessage(`{"b":2}`)
	w.Close()
	if e.ID != "" || !e.CreatedAt.IsZero() {
		t.Fatalf("Record changed the caller's entry: ID %q, CreatedAt %v", e.ID, e.CreatedAt)
	}
	es := stored(t, st)
	if len(es) != 1 || es[0].Model != "m" || es[0].Status != 200 {
		t.Fatalf("stored %v, want the entry as recorded (model m, status 200)", es)
	}
	if err := st.Logs.GetBodies(es[0]); err != nil {
		t.Fatal(err)
	}
	if string(es[0].Request) != `{"a":1}` {
		t.Fatalf("stored request %s, want {\"a\":1}", es[0].Request)
	}
}

func TestBodies(t *testing.T) {
	tests := []struct {
		name           string
		bodies         bool
		req, resp      string
		wantReq        string
		wantResp       string
		reqCut, respCu bool
	}{
		{"off", false, `{"a":1}`, `{"b":2}`, "", "", false, false},
		{"on", true, `{"a":1}`, `{"b":2}`, `{"a":1}`, `{"b":2}`, false, false},
		{"cut", true, `{"a":"0123456789abcdef"}`, `{"b":2}`, `"{\"a\":\"0123"`, `{"b":2}`, true, false},
		{"not JSON", true, `{"a":1}`, `oops`, `{"a":1}`, `"oops"`, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t)
			w := New(st.Logs, Options{Bodies: tc.bodies, MaxBodyBytes: 10})
			e := entry(0)
			e.Request, e.Response = json.RawMessage(tc.req), json.RawMessage(tc.resp)
			w.Record(e)
			w.Close()
			es := stored(t, st)
			if len(es) != 1 {
				t.Fatalf("%d entries stored, want 1", len(es))
			}
			got := es[0]
			if err := st.Logs.GetBodies(got); err != nil {
				t.Fatal(err)
			}
			if string(got.Request) != tc.wantReq || string(got.Response) != tc.wantResp ||
				got.RequestTruncated != tc.reqCut || got.ResponseTruncated != tc.respCu {
				t.Fatalf("bodies %s %s (cut %v %v), want %s %s (cut %v %v)", got.Request, got.Response,
					got.RequestTruncated, got.ResponseTruncated, tc.wantReq, tc.wantResp, tc.reqCut, tc.respCu)
			}
		})
	}
}

// TestRecordHammer records from many goroutines while the writer writes and Close drains: every entry is
// stored or counted as dropped.
func TestRecordHammer(t *testing.T) {
	st := openStore(t)
	var dropped atomic.Int64
	w := New(st.Logs, Options{QueueSize: 64, FlushWindow: time.Millisecond, OnDrop: func(n int) { dropped.Add(int64(n)) }})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				w.Record(entry(g*1000 + i))
			}
		})
	}
	wg.Wait()
	w.Close()
	if got := int64(len(stored(t, st))) + dropped.Load(); got != 1600 {
		t.Fatalf("stored + dropped = %d, want 1600", got)
	}
}

// BenchmarkRecord measures the request path's share of logging: the entry's hand-over to the queue, which
// copies it into the queue's reused array (0 allocations).
func BenchmarkRecord(b *testing.B) {
	st := openStore(b)
	w := New(st.Logs, Options{QueueSize: 1 << 16})
	defer w.Close()
	b.ReportAllocs()
	for b.Loop() {
		e := Entry{WorkspaceID: "ws", Status: 200, Model: "m", Endpoint: "chat/completions"}
		w.Record(&e)
	}
}
