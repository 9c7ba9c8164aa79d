package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/jackc/pgx/v5"

	"github.com/llmgw/gateway/internal/testservices"
)

// pgSchemas maps the fs a test passes to openTest to the schema it got, so that a test reopening "the same
// folder" on PostgreSQL reopens the same schema.
var pgSchemas sync.Map // vfs.FS -> URL

// openTestPostgres is openTest on GATEWAY_TEST_STORAGE=postgres: a fresh schema per test (per fs, when given).
func openTestPostgres(t testing.TB, fs vfs.FS, clk *fakeClock) *Store {
	t.Helper()
	var u string
	if fs != nil {
		if v, ok := pgSchemas.Load(fs); ok {
			u = v.(string)
		}
	}
	if u == "" {
		u = testservices.PostgresSchemaURL(t)
		if fs != nil {
			pgSchemas.Store(fs, u)
			t.Cleanup(func() { pgSchemas.Delete(fs) })
		}
	}
	opts := Options{MasterKey: testMasterKey(1), Logger: quietLogger()}
	if clk != nil {
		opts.now = clk.Now
	}
	return openPostgresAt(t, u, opts)
}

func openPostgresAt(t testing.TB, u string, opts Options) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := OpenPostgres(ctx, u, opts)
	if err != nil {
		t.Fatalf("OpenPostgres: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openReplicas opens two stores on one fresh schema: two replicas of the gateway.
func openReplicas(t testing.TB) (a, b *Store, u string) {
	t.Helper()
	u = testservices.PostgresSchemaURL(t)
	opts := Options{MasterKey: testMasterKey(1), Logger: quietLogger()}
	return openPostgresAt(t, u, opts), openPostgresAt(t, u, opts), u
}

// eventually polls cond until it holds or a generous deadline passes; the deadline only stops a broken test.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not seen before the deadline", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPostgresReplicasShareRecords: what one replica writes the other reads at once, and an update or delete
// reaches the other's cache through the change feed.
func TestPostgresReplicasShareRecords(t *testing.T) {
	a, b, _ := openReplicas(t)
	if !a.Shared() {
		t.Fatal("a PostgreSQL store does not say it is shared")
	}
	var changes sync.Map
	b.OnChange(func(c Change) { changes.Store(c.Table+"/"+c.WorkspaceID+"/"+c.ID, true) })

	ws := newWorkspace(t, a, "shared")
	if got, err := b.Workspaces.Get(ws.ID); err != nil || got.Slug != "shared" {
		t.Fatalf("b.Workspaces.Get = %+v, %v", got, err)
	}
	put := func(key string) {
		t.Helper()
		if _, err := a.Providers.Put(&Provider{WorkspaceID: ws.ID, Slug: "openai", Provider: "openai",
			Fields: map[string]json.RawMessage{"api_key": json.RawMessage(`"` + key + `"`)}}); err != nil {
			t.Fatal(err)
		}
	}
	apiKey := func(s *Store) string {
		p, err := s.Providers.Get(ws.ID, "openai")
		if err != nil {
			return err.Error()
		}
		return string(p.Fields["api_key"])
	}
	put("sk-one")
	if got := apiKey(b); got != `"sk-one"` { // read once: now cached in b
		t.Fatalf("b reads api_key %s", got)
	}
	put("sk-two")
	eventually(t, "update seen by the other replica", func() bool { return apiKey(b) == `"sk-two"` })
	eventually(t, "change announced to b's listeners", func() bool {
		_, ok := changes.Load("provider/" + ws.ID + "/openai")
		return ok
	})

	if _, err := a.Configs.Put(ws.ID, "c1", &Config{ID: "c1", WorkspaceID: ws.ID, Config: json.RawMessage(`{"v":1}`)}); err != nil {
		t.Fatal(err)
	}
	if c, err := b.Configs.Get(ws.ID, "c1"); err != nil || string(c.Config) != `{"v":1}` {
		t.Fatalf("b.Configs.Get = %+v, %v", c, err)
	}
	if err := a.Providers.Delete(ws.ID, "openai"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Configs.Put(ws.ID, "c1", &Config{ID: "c1", WorkspaceID: ws.ID, Config: json.RawMessage(`{"v":2}`)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "delete seen by the other replica", func() bool {
		_, err := b.Providers.Get(ws.ID, "openai")
		return errors.Is(err, ErrNotFound)
	})
	eventually(t, "config update seen by the other replica", func() bool {
		c, err := b.Configs.Get(ws.ID, "c1")
		return err == nil && string(c.Config) == `{"v":2}`
	})
	// A replica ignores its own notifications: a never announces a's writes to a's listeners. b's write
	// commits after a's, so a's feed has read past a's own notification once it tells of b's.
	var mu sync.Mutex
	var heard []string
	a.OnChange(func(c Change) {
		mu.Lock()
		heard = append(heard, c.Table+"/"+c.WorkspaceID+"/"+c.ID)
		mu.Unlock()
	})
	newWorkspace(t, a, "own")
	newWorkspace(t, b, "theirs")
	eventually(t, "b's write announced to a", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(heard, "wsslug/theirs/")
	})
	mu.Lock()
	defer mu.Unlock()
	if slices.Contains(heard, "wsslug/own/") {
		t.Fatalf("a heard its own write: %v", heard)
	}
}

// TestPostgresFeedAllOnRangeDelete: a DeleteRange over cached tables, or a payload too large, says "all".
func TestPostgresFeedAllOnRangeDelete(t *testing.T) {
	a, b, _ := openReplicas(t)
	all := make(chan struct{}, 16)
	b.OnChange(func(c Change) {
		if c.All {
			all <- struct{}{}
		}
	})
	if err := a.db.DeleteRange([]byte("provider/"), []byte("provider0"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	<-all
	batch := a.db.NewBatch()
	for i := range 500 {
		batch.Set(fmt.Appendf(nil, "config/%036d/c%d", i, i), []byte("{}"), nil)
	}
	if err := batch.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	<-all
	// Tables no replica caches make no notification at all: the next one b hears is a's later write.
	if err := a.db.Set([]byte("cache/x/y"), []byte("z"), pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	got := make(chan Change, 16)
	b.OnChange(func(c Change) { got <- c })
	newWorkspace(t, a, "after")
	if c := <-got; c.Table != tableWorkspace && c.Table != tableWSSlug {
		t.Fatalf("first change after the cache write: %+v", c)
	}
}

// TestPostgresFeedReconnects: when the feed's connection is killed the engine reconnects, tells its listeners
// that anything may have changed (what was committed meanwhile went unannounced), and follows the feed again.
func TestPostgresFeedReconnects(t *testing.T) {
	a, b, u := openReplicas(t)
	all := make(chan struct{}, 16)
	b.OnChange(func(c Change) {
		if c.All {
			all <- struct{}{}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var killed int
	if err := c.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`,
		pgFeedApplication+b.db.(*pgEngine).instance).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminated %d feed connections: %v", killed, err)
	}
	<-all
	ws := newWorkspace(t, b, "later")
	if _, err := a.Workspaces.Get(ws.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Workspaces.Put(&Workspace{ID: ws.ID, Slug: "later", OrganisationID: ws.OrganisationID, Name: "renamed"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a follows b's writes after b's feed came back", func() bool {
		got, err := a.Workspaces.Get(ws.ID)
		return err == nil && got.Name == "renamed"
	})
	// And b hears a again.
	if _, err := b.Workspaces.Get(ws.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Workspaces.Put(&Workspace{ID: ws.ID, Slug: "later", OrganisationID: ws.OrganisationID, Name: "again"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b follows a's writes on its restored feed", func() bool {
		got, err := b.Workspaces.Get(ws.ID)
		return err == nil && got.Name == "again"
	})
}

// TestPostgresMutexAcrossReplicas: two replicas incrementing one stored counter under Mutex lose no update,
// and while one holds the lock the database refuses it to anyone else.
func TestPostgresMutexAcrossReplicas(t *testing.T) {
	a, b, u := openReplicas(t)
	k := []byte("meta/counter")
	const rounds = 40
	var wg sync.WaitGroup
	for _, s := range []*Store{a, b} {
		wg.Go(func() {
			m := s.Mutex("counter")
			for range rounds {
				m.Lock()
				n := 0
				if v, err := s.get(k); err == nil {
					fmt.Sscan(string(v), &n)
				}
				if err := s.db.Set(k, fmt.Append(nil, n+1), pebble.NoSync); err != nil {
					t.Error(err)
				}
				m.Unlock()
			}
		})
	}
	wg.Wait()
	if v, err := a.get(k); err != nil || string(v) != fmt.Sprint(2*rounds) {
		t.Fatalf("counter = %s, %v; want %d", v, err, 2*rounds)
	}

	m := a.Mutex("held")
	m.Lock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	id := m.(*pgLock).id
	var got bool
	if err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, id).Scan(&got); err != nil || got {
		t.Fatalf("pg_try_advisory_lock while a holds the lock = %v, %v", got, err)
	}
	m.Unlock()
	if err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, id).Scan(&got); err != nil || !got {
		t.Fatalf("pg_try_advisory_lock after Unlock = %v, %v", got, err)
	}
}

func TestPostgresLeases(t *testing.T) {
	a, b, _ := openReplicas(t)
	try := func(s *Store, owner string, ttl time.Duration) bool {
		t.Helper()
		ok, err := s.TryLease("sweeper", owner, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !try(a, "a", time.Minute) {
		t.Fatal("a could not take a free lease")
	}
	if try(b, "b", time.Minute) {
		t.Fatal("b took a lease a holds")
	}
	if !try(a, "a", time.Minute) {
		t.Fatal("a could not renew its lease")
	}
	if err := b.ReleaseLease("sweeper", "b"); err != nil { // not b's: left alone
		t.Fatal(err)
	}
	if try(b, "b", time.Minute) {
		t.Fatal("b took the lease after releasing one it did not hold")
	}
	if err := a.ReleaseLease("sweeper", "a"); err != nil {
		t.Fatal(err)
	}
	if !try(b, "b", time.Millisecond) {
		t.Fatal("b could not take a released lease")
	}
	eventually(t, "a takes b's expired lease", func() bool { return try(a, "a", time.Minute) })
	if try(b, "b", time.Minute) {
		t.Fatal("b took back a lease a renewed")
	}
}

func TestPostgresMigrations(t *testing.T) {
	u := testservices.PostgresSchemaURL(t)
	opts := Options{MasterKey: testMasterKey(1), Logger: quietLogger()}
	var wg sync.WaitGroup
	for range 3 { // replicas starting together apply v1 once
		wg.Go(func() {
			s, err := OpenPostgres(context.Background(), u, opts)
			if err != nil {
				t.Error(err)
				return
			}
			s.Close()
		})
	}
	wg.Wait()
	s := openPostgresAt(t, u, opts) // and again: nothing to do
	pool := s.db.(*pgEngine).pool
	ctx := context.Background()
	var n, v int
	if err := pool.QueryRow(ctx, `SELECT count(*), max(version) FROM gateway_schema_migrations`).Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	if n != len(pgMigrations) || v != len(pgMigrations) {
		t.Fatalf("gateway_schema_migrations holds %d rows up to version %d; want %d", n, v, len(pgMigrations))
	}
	if _, err := OpenPostgres(ctx, u, Options{MasterKey: testMasterKey(2), Logger: quietLogger()}); !errors.Is(err, ErrWrongMasterKey) {
		t.Fatalf("OpenPostgres with another master key: %v", err)
	}

	if _, err := pool.Exec(ctx, `INSERT INTO gateway_schema_migrations (version, applied_at) VALUES (99, now())`); err != nil {
		t.Fatal(err)
	}
	_, err := OpenPostgres(ctx, u, opts)
	want := fmt.Sprintf("the database schema is version 99, newer than this gateway (%d): upgrade the gateway", len(pgMigrations))
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("OpenPostgres on a newer schema: %v; want %q", err, want)
	}
}

func TestPostgresUnreachable(t *testing.T) {
	testservices.PostgresURL(t) // this test needs no server, but runs with the others
	const password = "pw-s3cret-7781"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := OpenPostgres(ctx, "postgres://gw:"+password+"@127.0.0.1:1/gw?sslmode=disable&connect_timeout=2",
		Options{MasterKey: testMasterKey(1), Logger: quietLogger()})
	if err == nil {
		s.Close()
		t.Fatal("OpenPostgres on a closed port succeeded")
	}
	if strings.Contains(err.Error(), password) || !strings.Contains(err.Error(), "127.0.0.1:1/gw") {
		t.Fatalf("error should name the address and not the password: %v", err)
	}
	_, err = OpenPostgres(ctx, "postgres://gw:"+password+"@127.0.0.1:1/gw?sslmode=bogus",
		Options{MasterKey: testMasterKey(1), Logger: quietLogger()})
	if err == nil || strings.Contains(err.Error(), password) {
		t.Fatalf("a URL pgx refuses: %v", err)
	}
}

// pebbleRef is a pebble database in memory with the same pairs, to compare the engine's answers with.
func pebbleRef(t testing.TB) pebbleEngine {
	t.Helper()
	db, err := pebble.Open("ref", &pebble.Options{FS: vfs.NewMem(), Logger: pebbleLogger{quietLogger()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return pebbleEngine{db}
}

// TestPostgresEngineMatchesPebble applies the same random batches to PostgreSQL and to pebble, then walks both
// with the same random moves across page boundaries, in both directions and with and without bounds.
func TestPostgresEngineMatchesPebble(t *testing.T) {
	s := openTestPostgres(t, nil, nil)
	pg, ref := s.db, pebbleRef(t)
	rng := rand.New(rand.NewPCG(1, 2))
	randKey := func() []byte { return fmt.Appendf(nil, "t/%04d", rng.IntN(1500)) }
	both := func(f func(e kvEngine) error) {
		t.Helper()
		if err := f(pg); err != nil {
			t.Fatal(err)
		}
		if err := f(ref); err != nil {
			t.Fatal(err)
		}
	}
	both(func(e kvEngine) error { return e.Set([]byte("t/empty"), nil, pebble.Sync) })
	for range 12 {
		type op struct {
			kind  int
			k, k2 []byte
			v     []byte
		}
		var ops []op
		for range 150 {
			o := op{kind: rng.IntN(10), k: randKey(), k2: randKey(), v: bytes.Repeat([]byte{byte(rng.IntN(256))}, rng.IntN(600))}
			if bytes.Compare(o.k2, o.k) < 0 {
				o.k, o.k2 = o.k2, o.k
			}
			ops = append(ops, o)
		}
		both(func(e kvEngine) error {
			b := e.NewIndexedBatch()
			defer b.Close()
			for _, o := range ops {
				switch {
				case o.kind < 7:
					b.Set(o.k, o.v, nil)
				case o.kind < 9:
					b.Delete(o.k, nil)
				default:
					b.DeleteRange(o.k, o.k2, nil)
				}
			}
			return b.Commit(pebble.NoSync)
		})
		// An indexed batch reads its own writes over the database's.
		bp, br := pg.NewIndexedBatch(), ref.NewIndexedBatch()
		for _, o := range ops[:40] {
			for _, b := range []kvBatch{bp, br} {
				switch {
				case o.kind < 5:
					b.Set(o.k, o.v, nil)
				case o.kind < 8:
					b.Delete(o.k, nil)
				default:
					b.DeleteRange(o.k, o.k2, nil)
				}
			}
			k := randKey()
			vp, _, errp := bp.Get(k)
			vr, _, errr := br.Get(k)
			if !bytes.Equal(vp, vr) || (errp == nil) != (errr == nil) {
				t.Fatalf("indexed batch Get(%s) = %q, %v; pebble %q, %v", k, vp, errp, vr, errr)
			}
		}
		bp.Close()
		br.Close()
	}
	tOnly := &pebble.IterOptions{LowerBound: []byte("t/"), UpperBound: []byte("t0")}
	if got, want := dumpEngine(t, pg, tOnly), dumpEngine(t, ref, tOnly); got != want {
		t.Fatalf("contents differ:\npostgres %.300s\npebble   %.300s", got, want)
	}

	if err := ref.Set(keyKeyCheck, mustGet(t, pg, keyKeyCheck), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	for _, bounds := range []*pebble.IterOptions{nil, {LowerBound: []byte("t/0100"), UpperBound: []byte("t/1200")},
		{LowerBound: []byte("t/0500")}, {UpperBound: []byte("t/0700")}} {
		ip, err := pg.NewIter(bounds)
		if err != nil {
			t.Fatal(err)
		}
		ir, _ := ref.NewIter(bounds)
		var trace []string
		for step := range 2000 {
			var vp, vr bool
			var name string
			switch n := rng.IntN(100); {
			case n < 40:
				name, vp, vr = "Next", ip.Next(), ir.Next()
			case n < 80:
				name, vp, vr = "Prev", ip.Prev(), ir.Prev()
			case n < 85:
				name, vp, vr = "First", ip.First(), ir.First()
			case n < 90:
				name, vp, vr = "Last", ip.Last(), ir.Last()
			case n < 95:
				k := randKey()
				name, vp, vr = "SeekGE "+string(k), ip.SeekGE(k), ir.SeekGE(k)
			default:
				k := randKey()
				name, vp, vr = "SeekLT "+string(k), ip.SeekLT(k), ir.SeekLT(k)
			}
			trace = append(trace, name)
			if vp != vr || vp != ip.Valid() {
				t.Fatalf("bounds %+v step %d %s: postgres valid %v, pebble %v (last moves %v)", bounds, step, name, vp, vr, trace[max(0, len(trace)-6):])
			}
			if !vp {
				continue
			}
			valp, _ := ip.ValueAndErr()
			valr, _ := ir.ValueAndErr()
			if !bytes.Equal(ip.Key(), ir.Key()) || !bytes.Equal(valp, valr) {
				t.Fatalf("bounds %+v step %d %s: postgres at %s, pebble at %s", bounds, step, name, ip.Key(), ir.Key())
			}
		}
		if err := ip.Close(); err != nil {
			t.Fatal(err)
		}
		ir.Close()
	}
}

// TestPostgresIterFullScans walks every key forward and backward: pages of several sizes follow each other.
func TestPostgresIterFullScans(t *testing.T) {
	s := openTestPostgres(t, nil, nil)
	b := s.db.NewBatch()
	var want []string
	for i := range 2000 {
		k := fmt.Sprintf("s/%05d", i)
		want = append(want, k)
		n := i % 3 * 1000
		if i%97 == 0 {
			n = 300 << 10 // pages shrink after these
		}
		b.Set([]byte(k), bytes.Repeat([]byte{'v'}, n), nil)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	it, _ := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte("s/"), UpperBound: []byte("s0")})
	var fwd, back []string
	for ok := it.First(); ok; ok = it.Next() {
		fwd = append(fwd, string(it.Key()))
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		back = append([]string{string(it.Key())}, back...)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(fwd, ",") != strings.Join(want, ",") || strings.Join(back, ",") != strings.Join(want, ",") {
		t.Fatalf("forward scan %d keys, backward %d; want %d", len(fwd), len(back), len(want))
	}
}

func mustGet(t testing.TB, e kvEngine, k []byte) []byte {
	t.Helper()
	v, closer, err := e.Get(k)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	return bytes.Clone(v)
}

func dumpEngine(t testing.TB, e kvEngine, o *pebble.IterOptions) string {
	t.Helper()
	it, err := e.NewIter(o)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for ok := it.First(); ok; ok = it.Next() {
		v, _ := it.ValueAndErr()
		fmt.Fprintf(&sb, "%s=%x;", it.Key(), v)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

func BenchmarkPostgresGet(b *testing.B) {
	s := openTestPostgres(b, nil, nil)
	k := []byte("meta/bench")
	if err := s.db.Set(k, bytes.Repeat([]byte{'x'}, 300), pebble.Sync); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, closer, err := s.db.Get(k); err != nil {
			b.Fatal(err)
		} else {
			closer.Close()
		}
	}
}

// BenchmarkPostgresDocPut is a synced Put of a DocStore record: the lock, the read of the old record, the
// write and the notification.
func BenchmarkPostgresDocPut(b *testing.B) {
	s := openTestPostgres(b, nil, nil)
	ws := newWorkspace(b, s, "bench")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := s.Configs.Put(ws.ID, "c", &Config{ID: "c", WorkspaceID: ws.ID, Config: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPostgresBatch100NoSync(b *testing.B) {
	s := openTestPostgres(b, nil, nil)
	keys := make([][]byte, 100)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "counter/ws/p/%032d", i)
	}
	v := bytes.Repeat([]byte{'c'}, 100)
	batch := s.db.NewBatch()
	b.ReportAllocs()
	for b.Loop() {
		for _, k := range keys {
			batch.Set(k, v, nil)
		}
		if err := batch.Commit(pebble.NoSync); err != nil {
			b.Fatal(err)
		}
		batch.Reset()
	}
}
