package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/jackc/pgx/v5"

	"github.com/llmgw/gateway/internal/testservices"
)

// TestPostgresRevokedKeyStopsOnOtherReplica: an API key deleted on one replica stops authenticating on the
// other, which had it cached; a key moved to another workspace, and a workspace deleted with its keys, too.
func TestPostgresRevokedKeyStopsOnOtherReplica(t *testing.T) {
	a, b, _ := openReplicas(t)
	ws := newWorkspace(t, a, "keys")
	other := newWorkspace(t, a, "other")
	secret, k, err := a.APIKeys.Create(ws.ID, "revoked", false)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.APIKeys.Lookup(secret); err != nil || got.ID != k.ID { // now in b's cache
		t.Fatalf("b.Lookup = %+v, %v", got, err)
	}
	if err := a.APIKeys.Delete(ws.ID, k.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a key revoked on a stops authenticating on b", func() bool {
		_, err := b.APIKeys.Lookup(secret)
		return errors.Is(err, ErrNotFound)
	})

	moved, _, err := a.APIKeys.Create(ws.ID, "moved", false)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.APIKeys.Lookup(moved); err != nil || got.WorkspaceID != ws.ID {
		t.Fatalf("b.Lookup = %+v, %v", got, err)
	}
	if _, _, err := a.APIKeys.Put(moved, &APIKey{WorkspaceID: other.ID, Name: "moved"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a key moved on a is seen in its new workspace on b", func() bool {
		got, err := b.APIKeys.Lookup(moved)
		return err == nil && got.WorkspaceID == other.ID
	})

	inWS, _, err := a.APIKeys.Create(other.ID, "goes with its workspace", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{moved, inWS} {
		if _, err := b.APIKeys.Lookup(s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Workspaces.Resolve("other"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Workspaces.Delete(other.ID, true); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a workspace deleted on a is gone on b, with its keys", func() bool {
		_, e1 := b.APIKeys.Lookup(moved)
		_, e2 := b.APIKeys.Lookup(inWS)
		_, e3 := b.Workspaces.Get(other.ID)
		_, e4 := b.Workspaces.Resolve("other")
		return errors.Is(e1, ErrNotFound) && errors.Is(e2, ErrNotFound) && errors.Is(e3, ErrNotFound) &&
			errors.Is(e4, ErrNotFound)
	})
}

// TestPostgresFailedStatementRollsBackBatch: a statement that fails in the middle of a pipelined transaction
// leaves nothing of the batch applied, and the connection it ran on does not poison the writes that follow.
func TestPostgresFailedStatementRollsBackBatch(t *testing.T) {
	s := openTestPostgres(t, nil, nil)
	e := s.db.(*pgEngine)
	ctx := context.Background()
	// A trigger refuses one key, so that the third statement of the batch fails after two succeeded.
	if _, err := e.pool.Exec(ctx, `CREATE FUNCTION refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.k = 'meta/boom'::bytea THEN RAISE EXCEPTION 'refused key'; END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER refuse_boom BEFORE INSERT OR UPDATE ON gateway_kv FOR EACH ROW EXECUTE FUNCTION refuse_boom()`); err != nil {
		t.Fatal(err)
	}
	if err := e.Set([]byte("meta/kept"), []byte("before"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	for _, o := range []*pebble.WriteOptions{pebble.Sync, pebble.NoSync} {
		b := e.NewBatch()
		b.Set([]byte("meta/a"), []byte("1"), nil)
		b.Delete([]byte("meta/kept"), nil)
		b.Set([]byte("meta/boom"), []byte("x"), nil)
		b.Delete([]byte("meta/none"), nil)
		b.Set([]byte("meta/z"), []byte("2"), nil)
		err := b.Commit(o)
		if err == nil || !strings.Contains(err.Error(), "refused key") {
			t.Fatalf("Commit of a batch with a refused key: %v", err)
		}
		if _, _, err := e.Get([]byte("meta/a")); !errors.Is(err, pebble.ErrNotFound) {
			t.Fatalf("a write before the failed statement was applied: %v", err)
		}
		if v := mustGet(t, e, []byte("meta/kept")); string(v) != "before" {
			t.Fatalf("a delete before the failed statement was applied: %q", v)
		}
	}
	// More writes than the pool has connections: none may land on a connection left in a failed transaction.
	for i := range 4 * int(e.pool.Config().MaxConns) {
		if err := e.Set(fmt.Appendf(nil, "meta/after%d", i), []byte("v"), pebble.NoSync); err != nil {
			t.Fatalf("write %d after the failed batch: %v", i, err)
		}
	}
	if got := countPrefix(t, s, "meta/after"); got != 4*int(e.pool.Config().MaxConns) {
		t.Fatalf("%d writes after the failed batch landed", got)
	}
}

// TestPostgresFeedCarriesKeysOnly: the change feed's notification names the records written, never their
// values: a provider's secret (sealed or not) does not travel on it.
func TestPostgresFeedCarriesKeysOnly(t *testing.T) {
	a, _, u := openReplicas(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, `LISTEN "`+a.db.(*pgEngine).channel+`"`); err != nil {
		t.Fatal(err)
	}
	ws := newWorkspace(t, a, "secrets")
	const secret = "sk-never-on-the-feed-1234"
	if _, err := a.Providers.Put(&Provider{WorkspaceID: ws.ID, Slug: "openai", Provider: "openai",
		Fields: map[string]json.RawMessage{"api_key": json.RawMessage(`"` + secret + `"`)}}); err != nil {
		t.Fatal(err)
	}
	stored := mustGet(t, a.db, key(tableProvider, ws.ID, "openai"))
	for {
		n, err := c.WaitForNotification(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(n.Payload, secret) || strings.Contains(n.Payload, string(stored)) {
			t.Fatalf("a notification carries a value: %q", n.Payload)
		}
		_, rest, _ := strings.Cut(n.Payload, "\n")
		for line := range strings.SplitSeq(rest, "\n") {
			if !inFeed([]byte(line)) && line != pgFeedAll {
				t.Fatalf("a notification line is not a key of a feed table: %q", line)
			}
		}
		if strings.Contains(n.Payload, string(key(tableProvider, ws.ID, "openai"))) {
			return
		}
	}
}

// freezingProxy forwards TCP connections to a PostgreSQL server. Once frozen, the change feed's connections
// opened before (told by the application_name in their start-up message) stop moving bytes without being
// closed, as behind a firewall that dropped them; every other connection, and every new one, goes on working.
type freezingProxy struct {
	ln     net.Listener
	target string
	frozen atomic.Bool
	// epoch counts freezes: a connection accepted in an earlier epoch than the current one is held.
	epoch atomic.Int64
}

func (p *freezingProxy) freeze() {
	p.epoch.Add(1)
	p.frozen.Store(true)
}

func startFreezingProxy(t *testing.T, target string) *freezingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezingProxy{ln: ln, target: target}
	var conns sync.WaitGroup
	t.Cleanup(func() {
		p.frozen.Store(false) // a test that failed frozen must not leave its connections held
		ln.Close()
		conns.Wait()
	})
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			epoch := p.epoch.Load()
			conns.Go(func() { p.serve(client, epoch) })
		}
	}()
	return p
}

func (p *freezingProxy) serve(client net.Conn, epoch int64) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	feed := atomic.Bool{}
	var wg sync.WaitGroup
	pump := func(dst, src net.Conn, first bool) {
		defer wg.Done()
		defer dst.Close()
		defer src.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if first && bytes.Contains(buf[:n], []byte(pgFeedApplication)) {
					feed.Store(true)
				}
				for feed.Load() && p.frozen.Load() && epoch < p.epoch.Load() {
					time.Sleep(10 * time.Millisecond) // hold the bytes, keep the connection open
				}
				if _, err := dst.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	wg.Add(2)
	go pump(server, client, true)
	go pump(client, server, false)
	wg.Wait()
}

// TestPostgresFeedSilentDeathDetected: a change feed whose connection stops answering without being closed is
// noticed and restored, so a key revoked on another replica meanwhile stops authenticating here; without the
// feed's ping this replica would serve its cached key until TCP keepalive gives up, minutes later.
func TestPostgresFeedSilentDeathDetected(t *testing.T) {
	u := testservices.PostgresSchemaURL(t)
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startFreezingProxy(t, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	parsed.Host = proxy.ln.Addr().String()
	opts := Options{MasterKey: testMasterKey(1), Logger: quietLogger()}
	a := openPostgresAt(t, u, opts)
	opts.feedCheck = 200 * time.Millisecond
	b := openPostgresAt(t, parsed.String(), opts)

	ws := newWorkspace(t, a, "silent")
	secret, k, err := a.APIKeys.Create(ws.ID, "revoked while the feed is silent", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.APIKeys.Lookup(secret); err != nil { // cached in b
		t.Fatal(err)
	}
	proxy.freeze()
	if err := a.APIKeys.Delete(ws.ID, k.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a key revoked on a while b's feed is silently dead stops authenticating on b", func() bool {
		_, err := b.APIKeys.Lookup(secret)
		return errors.Is(err, ErrNotFound)
	})
	proxy.frozen.Store(false)
}

// TestPostgresSchemasHaveTheirOwnFeedAndLocks: replicas of one schema share a feed channel and lock IDs;
// another schema of the database (another deployment) has its own, so its writes never empty these caches and
// its locks never wait on these.
func TestPostgresSchemasHaveTheirOwnFeedAndLocks(t *testing.T) {
	a, b, _ := openReplicas(t)
	c, _, _ := openReplicas(t)
	ea, eb, ec := a.db.(*pgEngine), b.db.(*pgEngine), c.db.(*pgEngine)
	if ea.channel != eb.channel || ea.channel == ec.channel {
		t.Fatalf("channels: same schema %q and %q, other schema %q", ea.channel, eb.channel, ec.channel)
	}
	la, lb, lc := a.Mutex("storage.write").(*pgLock), b.Mutex("storage.write").(*pgLock), c.Mutex("storage.write").(*pgLock)
	if la.id != lb.id || la.id == lc.id {
		t.Fatalf("lock IDs: same schema %d and %d, other schema %d", la.id, lb.id, lc.id)
	}
}
