package batch

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/internal/testservices"
	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/storage"
)

// replicas are two gateway replicas: replica a is the env's store and engine, replica b has its own over the
// same data. Each runner has its own lease owner.
type replicas struct {
	*env
	storeB  *storage.Store
	engineB Engine
}

// runnerB starts a runner of replica b.
func (p *replicas) runnerB(t testing.TB, opts Options) *Runner {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = p.log
	}
	r := New(p.storeB, p.engineB, opts)
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

// onReplicas runs test with two replicas over one embedded store (the leases are the store's, so two runners
// over it stand for two processes), and with two over one PostgreSQL database, each with its own store, when
// the test database is there.
func onReplicas(t *testing.T, test func(t *testing.T, p *replicas)) {
	t.Run("embedded", func(t *testing.T) {
		e := newEnv(t)
		test(t, &replicas{env: e, storeB: e.store, engineB: e.engine})
	})
	t.Run("postgres", func(t *testing.T) {
		u := testservices.PostgresSchemaURL(t)
		master := make([]byte, storage.MasterKeySize)
		rand.Read(master)
		open := func() *storage.Store {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			st, err := storage.OpenPostgres(ctx, u, storage.Options{MasterKey: master, Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}
		a, b := open(), open()
		e := newEnvOver(t, a, storage.NewUUID())
		test(t, &replicas{env: e, storeB: b, engineB: runtime.New(b, runtime.Options{Logger: quiet()})})
	})
}

// eventually polls cond until it holds, failing the test after a while.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not in time", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// drives reports whether r is driving the batch.
func drives(r *Runner, ws, id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[runKey(ws, id)] != nil
}

// crash stops r as a crash would: its leases stay until they expire.
func crash(r *Runner) {
	r.crashed.Store(true)
	r.Stop()
}

// stored returns the custom_ids of the batch's stored results.
func (e *env) stored(t testing.TB, id string) []string {
	t.Helper()
	var ids []string
	if err := e.store.Batches.Lines(e.ws, id, func(_ int, kind storage.LineKind, data []byte) error {
		if kind == storage.LineInvalid {
			return nil
		}
		var res result
		if err := json.Unmarshal(data, &res); err != nil {
			return err
		}
		ids = append(ids, res.CustomID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ids
}

// gatedBatch creates, through r, an immediate batch of n lines named prefix-NN and returns it with their
// custom_ids.
func (e *env) gatedBatch(t testing.TB, r *Runner, prefix string, n int) (*storage.Batch, []string) {
	t.Helper()
	var ids, lines []string
	for i := range n {
		id := fmt.Sprintf("%s-%02d", prefix, i)
		ids = append(ids, id)
		lines = append(lines, chatLine(id, ""))
	}
	b, err := r.Create(context.Background(), e.newBatch(e.file(t, strings.Join(lines, "\n")), WindowImmediate))
	if err != nil {
		t.Fatal(err)
	}
	return b, ids
}

// Two runners started together over batches neither made run each batch on one of them: every line is sent
// upstream once and has one result. Their takeover passes run all along, trying each other's leases.
func TestTwoReplicasRunEachLineOnce(t *testing.T) { onReplicas(t, testTwoReplicasRunEachLineOnce) }

func testTwoReplicasRunEachLineOnce(t *testing.T, e *replicas) {
	e.up.byID = map[string]int{}
	e.up.delay = time.Millisecond
	type made struct {
		id  string
		ids []string
	}
	var batches []made
	for i := range 6 {
		var ids, lines []string
		for j := range 40 {
			id, user := fmt.Sprintf("b%d-%02d", i, j), ""
			if j%9 == 4 {
				user = "fail"
			}
			ids = append(ids, id)
			lines = append(lines, chatLine(id, user))
		}
		b := e.newBatch(e.file(t, strings.Join(lines, "\n")), WindowImmediate)
		b.ID, b.Status, b.CreatedAt = storage.NewTimeOrderedID("batch_", time.Now()), storage.BatchValidating, time.Now().Unix()
		if err := e.store.Batches.Create(b); err != nil {
			t.Fatal(err)
		}
		batches = append(batches, made{b.ID, ids})
	}
	var runners [2]*Runner
	for i := range runners {
		st, engine := e.store, Engine(e.engine)
		if i == 1 {
			st, engine = e.storeB, e.engineB
		}
		runners[i] = New(st, engine, Options{Concurrency: 4, Running: 2, Logger: e.log, Owner: fmt.Sprintf("replica-%d", i),
			TakeoverEvery: 2 * time.Millisecond})
		t.Cleanup(runners[i].Stop)
	}
	hammer(2, func(i int) {
		if err := runners[i].Start(context.Background()); err != nil {
			t.Error(err)
		}
	})
	for _, m := range batches {
		b := e.wait(t, runners[0], m.id, final)
		if b.Status != storage.BatchCompleted || b.Counts != (storage.BatchCounts{Total: 40, Completed: 40 - 4, Failed: 4}) {
			t.Fatalf("batch %s: %+v", m.id, b)
		}
		onceEach(t, m.ids, e.results(t, b.OutputFileID), e.results(t, b.ErrorFileID))
		for _, id := range m.ids {
			if n := e.up.callsOf(id); n != 1 {
				t.Errorf("line %s was sent upstream %d times, want once", id, n)
			}
		}
	}
}

// A runner that crashes mid-batch keeps its lease until it expires; then another runner takes the batch over,
// sends none of the lines that have a result again, and ends with one result per line.
func TestTakeoverAfterACrash(t *testing.T) { onReplicas(t, testTakeoverAfterACrash) }

func testTakeoverAfterACrash(t *testing.T, e *replicas) {
	e.up.byID = map[string]int{}
	e.up.gate = make(chan struct{})
	a := e.runner(t, Options{Concurrency: 4, Owner: "replica-a", LeaseTTL: 2 * time.Second})
	b := e.runnerB(t, Options{Concurrency: 4, Owner: "replica-b", LeaseTTL: 2 * time.Second, TakeoverEvery: 5 * time.Millisecond})
	bt, ids := e.gatedBatch(t, a, "t", 60)
	for range 20 {
		e.up.gate <- struct{}{}
	}
	eventually(t, "20 results stored", func() bool { return len(e.stored(t, bt.ID)) == 20 })
	if drives(b, e.ws, bt.ID) {
		t.Fatal("replica b drives the batch while replica a holds its lease")
	}
	crash(a)
	done := e.stored(t, bt.ID)
	if len(done) != 20 {
		t.Fatalf("%d results stored after the crash, want the 20 let through", len(done))
	}
	close(e.up.gate)
	got := e.wait(t, b, bt.ID, final)
	if got.Status != storage.BatchCompleted || got.Counts != (storage.BatchCounts{Total: 60, Completed: 60}) {
		t.Fatalf("batch taken over: %+v", got)
	}
	onceEach(t, ids, e.results(t, got.OutputFileID))
	for _, id := range done {
		if n := e.up.callsOf(id); n != 1 {
			t.Errorf("line %s, done before the crash, was sent %d times", id, n)
		}
	}
}

// A runner whose lease another takes stops at its next renewal: the lines it has in flight are dropped, it
// writes nothing more, and the runner that holds the lease finishes the batch with one result per line.
func TestLostLeaseStopsTheRun(t *testing.T) { onReplicas(t, testLostLeaseStopsTheRun) }

func testLostLeaseStopsTheRun(t *testing.T, e *replicas) {
	e.up.byID = map[string]int{}
	e.up.gate = make(chan struct{})
	a := e.runner(t, Options{Concurrency: 4, Owner: "replica-a", LeaseTTL: 600 * time.Millisecond})
	bt, ids := e.gatedBatch(t, a, "l", 40)
	for range 10 {
		e.up.gate <- struct{}{}
	}
	eventually(t, "10 results stored", func() bool { return len(e.stored(t, bt.ID)) == 10 })
	// The lease passes to replica b as if replica a had missed its renewals.
	name := leaseName(e.ws, bt.ID)
	if err := e.store.ReleaseLease(name, "replica-a"); err != nil {
		t.Fatal(err)
	}
	if held, err := e.store.TryLease(name, "replica-b", time.Hour); err != nil || !held {
		t.Fatalf("lease to replica b: %v %v", held, err)
	}
	eventually(t, "replica a stops", func() bool { return !drives(a, e.ws, bt.ID) })
	// Replica b starts once the upstream has seen replica a's calls go: none of them gets an answer.
	eventually(t, "replica a's lines in flight dropped", func() bool { return e.up.waiting.Load() == 0 })
	b := e.runnerB(t, Options{Concurrency: 4, Owner: "replica-b"})
	if !drives(b, e.ws, bt.ID) {
		t.Fatal("replica b does not drive the batch whose lease it holds")
	}
	if n := len(e.stored(t, bt.ID)); n != 10 {
		t.Fatalf("%d results stored once replica a stopped, want the 10 let through", n)
	}
	if cur, _ := e.store.Batches.Get(e.ws, bt.ID); cur.Status != storage.BatchInProgress {
		t.Fatalf("replica a changed the batch after losing its lease: %+v", cur)
	}
	close(e.up.gate)
	got := e.wait(t, b, bt.ID, final)
	if got.Status != storage.BatchCompleted || got.Counts != (storage.BatchCounts{Total: 40, Completed: 40}) {
		t.Fatalf("batch: %+v", got)
	}
	onceEach(t, ids, e.results(t, got.OutputFileID))
	for _, id := range ids {
		if n := e.up.callsOf(id); n != 1 {
			t.Errorf("line %s was answered %d times, want once: replica a's lines in flight were to be dropped", id, n)
		}
	}
}

// A cancel that reaches a replica not running the batch is stored there; the replica running it sees it at its
// next renewal and stops as for a local cancel: what finished is kept, the batch ends cancelled.
func TestCancelThroughAnotherReplica(t *testing.T) { onReplicas(t, testCancelThroughAnotherReplica) }

func testCancelThroughAnotherReplica(t *testing.T, e *replicas) {
	e.up.gate = make(chan struct{})
	a := e.runner(t, Options{Concurrency: 4, Owner: "replica-a", LeaseTTL: 600 * time.Millisecond})
	b := e.runnerB(t, Options{Concurrency: 4, Owner: "replica-b"})
	bt, _ := e.gatedBatch(t, a, "c", 30)
	for range 5 {
		e.up.gate <- struct{}{}
	}
	eventually(t, "5 results stored", func() bool { return len(e.stored(t, bt.ID)) == 5 })
	got, err := b.Cancel(context.Background(), e.ws, bt.ID)
	if err != nil || got.Status != storage.BatchCancelling {
		t.Fatalf("cancel through replica b: %+v %v", got, err)
	}
	if drives(b, e.ws, bt.ID) {
		t.Fatal("replica b took the batch replica a runs")
	}
	got = e.wait(t, b, bt.ID, final)
	if got.Status != storage.BatchCancelled || got.CancelledAt == 0 || got.Counts != (storage.BatchCounts{Total: 30, Completed: 5}) {
		t.Fatalf("batch: %+v", got)
	}
	eventually(t, "replica a stops", func() bool { return !drives(a, e.ws, bt.ID) })
	eventually(t, "replica a's lines in flight dropped", func() bool { return e.up.waiting.Load() == 0 })
	if out := e.results(t, got.OutputFileID); len(out) != 5 {
		t.Fatalf("output has %d lines, want the 5 that finished", len(out))
	}
}
