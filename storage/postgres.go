package storage

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	// pgQueryTimeout bounds every statement: the storage API takes no context, and a stuck database must not
	// hang a request (or a writer holding a lock) forever.
	pgQueryTimeout = 30 * time.Second
	// pgChannel is the LISTEN/NOTIFY channel of the change feed.
	pgChannel = "gateway_changes"
	// pgMaxPayload keeps a notification under PostgreSQL's 8000-byte limit; past it the feed says "all".
	pgMaxPayload = 7000
	// pgFeedAll is the payload line meaning that anything may have changed. No key can read so: keys hold '/'.
	pgFeedAll = "all"
	// pgFeedApplication and the instance ID are the application_name of the change feed's connection.
	pgFeedApplication = "gateway change feed "
	// pgMaxBackoff bounds the wait between two attempts to restore the change feed.
	pgMaxBackoff = 5 * time.Second
	// pgFeedCheck is how long the change feed may be silent before its connection is pinged. A connection that
	// died without a word (a firewall or NAT dropping it, a host gone) would otherwise go unnoticed until TCP
	// keepalive gives up, minutes later, and every cached record would be served stale meanwhile: a revoked
	// API key would go on authenticating. The ping must answer within pgFeedPingTimeout.
	pgFeedCheck       = 5 * time.Second
	pgFeedPingTimeout = 5 * time.Second
	// pgLockConns bounds the connections that cross-process locks hold. They come from a pool of their own so
	// that lock holders never take the connections their writes need.
	pgLockConns = 8
)

// feedTables are the tables whose records replicas keep in memory: a write to one is announced on the change
// feed so that the others drop their copies.
var feedTables = map[string]struct{}{
	tableWorkspace: {}, tableAPIKey: {}, tableProvider: {}, tableConfig: {}, tablePrompt: {}, tableGuardrail: {},
	tablePolicy: {}, tableUsageLimit: {}, tablePlugin: {}, tablePluginWasm: {}, tablePluginStage: {}, tableWSSlug: {}, tableAPIKeyID: {},
	tableMCPServer: {}, tablePluginKV: {},
}

// inFeed reports whether k is a record of a feed table.
func inFeed(k []byte) bool {
	i := bytes.IndexByte(k, '/')
	if i < 0 {
		return false
	}
	_, ok := feedTables[string(k[:i])]
	return ok
}

// rangeInFeed reports whether [lo, hi) may hold a record of a feed table (hi nil: unbounded).
func rangeInFeed(lo, hi []byte) bool {
	for t := range feedTables {
		p := []byte(t + "/")
		if bytes.Compare(lo, prefixEnd(p)) < 0 && (hi == nil || bytes.Compare(hi, p) > 0) {
			return true
		}
	}
	return false
}

// OpenPostgres connects to url, applies the schema migrations, and opens the store over it. A database that
// cannot be reached within ctx is an error naming the address (never the password). Several gateways may open
// the same database: their caches follow each other's writes through the change feed (LISTEN/NOTIFY), Mutex
// and TryLease hold across them. Options.InMemory does not apply.
func OpenPostgres(ctx context.Context, url string, opts Options) (*Store, error) {
	keys, err := newKeyring(opts.MasterKey)
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("--postgres URL: %w", redact(err, urlPassword(url)))
	}
	e := &pgEngine{
		log:       log.With("component", "postgres"),
		password:  cfg.ConnConfig.Password,
		addr:      pgAddr(cfg.ConnConfig),
		instance:  newInstanceID(),
		locks:     map[string]*pgLock{},
		done:      make(chan struct{}),
		feedCheck: cmp.Or(opts.feedCheck, pgFeedCheck),
	}
	if err := e.connect(ctx, cfg); err != nil {
		e.Close()
		return nil, err
	}
	s, err := newStore(e, keys, log, opts.now)
	if err != nil {
		e.Close()
		return nil, err
	}
	e.start(s)
	return s, nil
}

// pgEngine is kvEngine and sharedEngine over PostgreSQL: the pairs live in gateway_kv, ordered by their bytea
// key, leases in gateway_leases; locks are advisory locks.
type pgEngine struct {
	pool     *pgxpool.Pool // reads and writes
	lockPool *pgxpool.Pool // connections that hold advisory locks
	log      *slog.Logger
	password string // to redact from errors
	addr     string // host:port/database, for errors
	// instance tells this engine's notifications from the other replicas'.
	instance string
	// channel is the change feed's LISTEN/NOTIFY channel, and schemaHash part of every lock ID: both are the
	// schema's own.
	channel    string
	schemaHash uint64
	// feedCheck is how long the feed may be silent before its connection is pinged (pgFeedCheck).
	feedCheck time.Duration

	listenConn *pgx.Conn // the change feed's connection, until the listener goroutine takes it over
	store      atomic.Pointer[Store]
	stop       context.CancelFunc
	done       chan struct{} // closed when the listener goroutine ended
	closeOnce  sync.Once

	locksMu sync.Mutex
	locks   map[string]*pgLock
}

// connect opens the pools, migrates the schema and starts listening, all within ctx and pgQueryTimeout.
func (e *pgEngine) connect(ctx context.Context, cfg *pgxpool.Config) error {
	ctx, cancel := context.WithTimeout(ctx, pgQueryTimeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return e.openErr("connect", err)
	}
	e.pool = pool
	if err := pool.Ping(ctx); err != nil {
		return e.openErr("connect", err)
	}
	if err := migrate(ctx, pool); err != nil {
		return e.openErr("migrate", err)
	}
	// Deployments in other schemas of the database have feeds and locks of their own: the channel and the lock
	// IDs carry the schema's hash, so another deployment's writes neither empty these caches nor wait on these
	// locks.
	var schema string
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return e.openErr("connect", err)
	}
	h := fnv.New64a()
	h.Write([]byte(schema))
	e.schemaHash = h.Sum64()
	e.channel = fmt.Sprintf("%s_%016x", pgChannel, e.schemaHash)
	lockCfg := cfg.Copy()
	lockCfg.MaxConns = pgLockConns
	lockCfg.MinConns = 0
	if e.lockPool, err = pgxpool.NewWithConfig(ctx, lockCfg); err != nil {
		return e.openErr("connect", err)
	}
	// Listening before the store is built means no change committed after OpenPostgres returns is missed.
	if e.listenConn, err = e.listen(ctx); err != nil {
		return e.openErr("listen", err)
	}
	return nil
}

func (e *pgEngine) openErr(step string, err error) error {
	return fmt.Errorf("postgres %s: %s: %w", e.addr, step, e.redact(err))
}

// start hands the change feed to its goroutine, which calls back into s.
func (e *pgEngine) start(s *Store) {
	e.store.Store(s)
	ctx, cancel := context.WithCancel(context.Background())
	e.stop = cancel
	go e.follow(ctx)
}

func (e *pgEngine) Close() error {
	e.closeOnce.Do(func() {
		if e.stop != nil {
			e.stop()
			<-e.done
		} else if e.listenConn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), pgQueryTimeout)
			e.listenConn.Close(ctx)
			cancel()
		}
		if e.lockPool != nil {
			e.lockPool.Close()
		}
		if e.pool != nil {
			e.pool.Close()
		}
	})
	return nil
}

func (e *pgEngine) listen(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, pgQueryTimeout)
	defer cancel()
	cfg := e.pool.Config().ConnConfig.Copy()
	// Named, so that an operator can tell the feed's long-lived session in pg_stat_activity.
	cfg.RuntimeParams["application_name"] = pgFeedApplication + e.instance
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := c.Exec(ctx, `LISTEN "`+e.channel+`"`); err != nil {
		c.Close(ctx)
		return nil, err
	}
	return c, nil
}

// follow applies the other replicas' notifications to the store until ctx ends. When the connection breaks it
// reconnects with backoff and then drops every cached record: what was committed meanwhile went unannounced.
func (e *pgEngine) follow(ctx context.Context) {
	defer close(e.done)
	c := e.listenConn
	e.listenConn = nil
	defer func() {
		if c != nil {
			closeCtx, cancel := context.WithTimeout(context.Background(), pgQueryTimeout)
			c.Close(closeCtx)
			cancel()
		}
	}()
	backoff := 100 * time.Millisecond
	for {
		n, err := e.waitForNotification(ctx, c)
		if err == nil {
			backoff = 100 * time.Millisecond
			if n != nil {
				e.notified(n.Payload)
			}
			continue
		}
		if ctx.Err() != nil {
			return
		}
		e.log.Warn("postgres change feed lost; reconnecting", "addr", e.addr, "err", e.redact(err))
		closeCtx, cancel := context.WithTimeout(context.Background(), pgQueryTimeout)
		c.Close(closeCtx)
		cancel()
		c = nil
		for c == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, pgMaxBackoff)
			if c, err = e.listen(ctx); err != nil {
				c = nil
				e.log.Debug("postgres change feed: reconnect failed", "addr", e.addr, "err", e.redact(err))
			}
		}
		e.log.Info("postgres change feed restored", "addr", e.addr)
		e.store.Load().remoteChangedAll()
	}
}

// waitForNotification waits for the next notification on c for at most feedCheck; when none came, it pings c
// so that a connection that died silently is an error here, within feedCheck and pgFeedPingTimeout, rather
// than a wait without end. A healthy silent feed answers nil, nil.
func (e *pgEngine) waitForNotification(ctx context.Context, c *pgx.Conn) (*pgconn.Notification, error) {
	waitCtx, cancel := context.WithTimeout(ctx, e.feedCheck)
	n, err := c.WaitForNotification(waitCtx)
	cancel()
	// A wait that only timed out leaves the connection usable (pgx's default context handling sets a read
	// deadline, it does not close the connection).
	if err == nil || ctx.Err() != nil || waitCtx.Err() == nil || c.IsClosed() {
		return n, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, pgFeedPingTimeout)
	defer cancel()
	if err := c.Ping(pingCtx); err != nil {
		return nil, fmt.Errorf("the feed's connection does not answer: %w", err)
	}
	return nil, nil
}

// notified applies one payload: this engine's instance ID is the first line, then "all" or the keys.
func (e *pgEngine) notified(payload string) {
	from, rest, _ := strings.Cut(payload, "\n")
	if from == e.instance {
		return
	}
	s := e.store.Load()
	if rest == pgFeedAll {
		s.remoteChangedAll()
		return
	}
	var keys [][]byte
	for line := range strings.SplitSeq(rest, "\n") {
		if line != "" {
			keys = append(keys, []byte(line))
		}
	}
	s.remoteChanged(keys)
}

func (e *pgEngine) Get(k []byte) ([]byte, io.Closer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), pgQueryTimeout)
	defer cancel()
	var v []byte
	err := e.pool.QueryRow(ctx, `SELECT v FROM gateway_kv WHERE k = $1`, k).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, pebble.ErrNotFound
	}
	if err != nil {
		return nil, nil, e.redact(err)
	}
	return v, noopCloser{}, nil
}

func (e *pgEngine) Set(k, v []byte, o *pebble.WriteOptions) error {
	b := pgBatch{e: e}
	b.Set(k, v, nil)
	return b.Commit(o)
}

func (e *pgEngine) Delete(k []byte, o *pebble.WriteOptions) error {
	b := pgBatch{e: e}
	b.Delete(k, nil)
	return b.Commit(o)
}

func (e *pgEngine) DeleteRange(lo, hi []byte, o *pebble.WriteOptions) error {
	b := pgBatch{e: e}
	b.DeleteRange(lo, hi, nil)
	return b.Commit(o)
}

func (e *pgEngine) NewBatch() kvBatch { return &pgBatch{e: e} }

func (e *pgEngine) NewIndexedBatch() kvBatch { return &pgBatch{e: e, index: map[string]int{}} }

// redact removes the password from err's message, in case a driver error quotes the connection string.
func (e *pgEngine) redact(err error) error { return redact(err, e.password) }

func redact(err error, password string) error {
	if err == nil || password == "" {
		return err
	}
	msg := err.Error()
	out := strings.ReplaceAll(msg, password, "xxxxx")
	out = strings.ReplaceAll(out, url.QueryEscape(password), "xxxxx")
	out = strings.ReplaceAll(out, url.PathEscape(password), "xxxxx")
	if out == msg {
		return err
	}
	return errors.New(out)
}

// urlPassword is the password of a URL that pgx could not parse, so that it is redacted all the same.
func urlPassword(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return ""
	}
	p, _ := u.User.Password()
	return p
}

func pgAddr(c *pgx.ConnConfig) string {
	return c.Host + ":" + strconv.Itoa(int(c.Port)) + "/" + c.Database
}

func newInstanceID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// nonNil keeps a nil value a value: pebble stores it as empty.
func nonNil(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

type noopCloser struct{}

func (noopCloser) Close() error { return nil }

// noSync reports whether o lets a write be lost in a crash; nil means Sync, as in pebble.
func noSync(o *pebble.WriteOptions) bool { return o != nil && !o.Sync }

type pgOpKind uint8

const (
	pgOpSet pgOpKind = iota
	pgOpDelete
	pgOpDeleteRange
)

type pgOp struct {
	kind pgOpKind
	k, v []byte // v is the upper bound of a DeleteRange (nil: unbounded)
}

// pgBatch collects writes that Commit applies in one transaction, sent in one round trip.
type pgBatch struct {
	e     *pgEngine
	ops   []pgOp
	arena []byte // the ops' keys and values, copied: the caller may reuse its buffers
	// index maps a key to its last point op, for an indexed batch's Get; nil on a plain batch.
	index  map[string]int
	ranges []int // the DeleteRange ops, for Get
}

// keep copies p into the arena. nil stays nil (an unbounded DeleteRange); an empty value stays non-nil, as
// pgx sends nil as NULL.
func (b *pgBatch) keep(p []byte) []byte {
	if p == nil {
		return nil
	}
	if len(p) == 0 {
		return []byte{}
	}
	if len(p) > 1024 { // not worth copying again each time the arena grows
		return bytes.Clone(p)
	}
	n := len(b.arena)
	b.arena = append(b.arena, p...)
	return b.arena[n:len(b.arena):len(b.arena)]
}

func (b *pgBatch) add(op pgOp) {
	if b.index != nil {
		if op.kind == pgOpDeleteRange {
			b.ranges = append(b.ranges, len(b.ops))
		} else {
			b.index[string(op.k)] = len(b.ops)
		}
	}
	b.ops = append(b.ops, op)
}

func (b *pgBatch) Set(k, v []byte, _ *pebble.WriteOptions) error {
	b.add(pgOp{kind: pgOpSet, k: b.keep(k), v: b.keep(nonNil(v))})
	return nil
}

func (b *pgBatch) Delete(k []byte, _ *pebble.WriteOptions) error {
	b.add(pgOp{kind: pgOpDelete, k: b.keep(k)})
	return nil
}

func (b *pgBatch) DeleteRange(lo, hi []byte, _ *pebble.WriteOptions) error {
	b.add(pgOp{kind: pgOpDeleteRange, k: b.keep(lo), v: b.keep(hi)})
	return nil
}

// Get answers from the batch's own writes, the newest first, then from the database.
func (b *pgBatch) Get(k []byte) ([]byte, io.Closer, error) {
	if b.index == nil {
		return nil, nil, errors.New("storage: Get on a batch that is not indexed")
	}
	last := -1
	if i, ok := b.index[string(k)]; ok {
		last = i
	}
	for j := len(b.ranges) - 1; j >= 0 && b.ranges[j] > last; j-- {
		r := b.ops[b.ranges[j]]
		if bytes.Compare(k, r.k) >= 0 && (r.v == nil || bytes.Compare(k, r.v) < 0) {
			return nil, nil, pebble.ErrNotFound
		}
	}
	if last >= 0 {
		op := b.ops[last]
		if op.kind == pgOpDelete {
			return nil, nil, pebble.ErrNotFound
		}
		return bytes.Clone(op.v), noopCloser{}, nil
	}
	return b.e.Get(k)
}

func (b *pgBatch) Empty() bool { return len(b.ops) == 0 }

func (b *pgBatch) Reset() {
	b.ops, b.arena, b.ranges = b.ops[:0], b.arena[:0], b.ranges[:0]
	if b.index != nil {
		clear(b.index)
	}
}

func (b *pgBatch) Close() error {
	b.Reset()
	return nil
}

// Commit applies the ops in order in one transaction: consecutive ops of one kind become one statement, and
// the whole transaction, BEGIN to COMMIT, is pipelined in one round trip. The change feed's notification is
// part of it, so the other replicas hear of exactly what committed.
func (b *pgBatch) Commit(o *pebble.WriteOptions) error {
	if len(b.ops) == 0 {
		return nil
	}
	var q pgx.Batch
	q.Queue("BEGIN")
	if noSync(o) {
		q.Queue("SET LOCAL synchronous_commit = off")
	}
	feed := feedPayload{instance: b.e.instance}
	for i := 0; i < len(b.ops); {
		j := i + 1
		for j < len(b.ops) && b.ops[j].kind == b.ops[i].kind && b.ops[i].kind != pgOpDeleteRange {
			j++
		}
		run := b.ops[i:j]
		switch run[0].kind {
		case pgOpSet:
			queueSets(&q, run)
		case pgOpDelete:
			if len(run) == 1 {
				q.Queue(`DELETE FROM gateway_kv WHERE k = $1`, run[0].k)
			} else {
				keys := make([][]byte, len(run))
				for n, op := range run {
					keys[n] = op.k
				}
				q.Queue(`DELETE FROM gateway_kv WHERE k = ANY($1::bytea[])`, keys)
			}
		case pgOpDeleteRange:
			if run[0].v == nil {
				q.Queue(`DELETE FROM gateway_kv WHERE k >= $1`, run[0].k)
			} else {
				q.Queue(`DELETE FROM gateway_kv WHERE k >= $1 AND k < $2`, run[0].k, run[0].v)
			}
		}
		for _, op := range run {
			feed.add(op)
		}
		i = j
	}
	if p, ok := feed.payload(); ok {
		q.Queue(`SELECT pg_notify($1, $2)`, b.e.channel, p)
	}
	q.Queue("COMMIT")
	ctx, cancel := context.WithTimeout(context.Background(), pgQueryTimeout)
	defer cancel()
	// An error leaves the connection in a failed transaction, which the pool discards rather than reuses.
	if err := b.e.pool.SendBatch(ctx, &q).Close(); err != nil {
		return b.e.redact(err)
	}
	return nil
}

// queueSets queues a run of Sets as one upsert. A key set twice keeps its last value: one INSERT cannot
// update a row twice.
func queueSets(q *pgx.Batch, run []pgOp) {
	const upsert = ` ON CONFLICT (k) DO UPDATE SET v = excluded.v`
	if len(run) == 1 {
		q.Queue(`INSERT INTO gateway_kv (k, v) VALUES ($1, $2)`+upsert, run[0].k, run[0].v)
		return
	}
	last := make(map[string]int, len(run))
	for i, op := range run {
		last[string(op.k)] = i
	}
	keys := make([][]byte, 0, len(last))
	vals := make([][]byte, 0, len(last))
	for i, op := range run {
		if last[string(op.k)] == i {
			keys = append(keys, op.k)
			vals = append(vals, op.v)
		}
	}
	q.Queue(`INSERT INTO gateway_kv (k, v) SELECT * FROM unnest($1::bytea[], $2::bytea[])`+upsert, keys, vals)
}

// feedPayload builds a batch's change-feed notification: the keys of feed tables it writes, or "all".
type feedPayload struct {
	instance string
	buf      []byte
	all      bool
}

func (f *feedPayload) add(op pgOp) {
	if f.all {
		return
	}
	if op.kind == pgOpDeleteRange {
		f.all = rangeInFeed(op.k, op.v)
		return
	}
	if !inFeed(op.k) {
		return
	}
	if len(f.buf)+1+len(op.k) > pgMaxPayload-len(f.instance)-1 {
		f.all = true
		return
	}
	f.buf = append(f.buf, '\n')
	f.buf = append(f.buf, op.k...)
}

func (f *feedPayload) payload() (string, bool) {
	switch {
	case f.all:
		return f.instance + "\n" + pgFeedAll, true
	case len(f.buf) > 0:
		return f.instance + string(f.buf), true
	}
	return "", false
}

// lock returns the cross-process lock on name: one per name in this process, so that a local mutex orders
// this process's holders before they queue on the database.
func (e *pgEngine) lock(name string) sync.Locker {
	e.locksMu.Lock()
	defer e.locksMu.Unlock()
	l, ok := e.locks[name]
	if !ok {
		h := fnv.New64a()
		h.Write([]byte(name))
		l = &pgLock{e: e, name: name, id: int64(h.Sum64() ^ e.schemaHash)}
		e.locks[name] = l
	}
	return l
}

// pgLock is a local mutex and, while it is held, a session advisory lock on a connection of the lock pool.
type pgLock struct {
	mu   sync.Mutex
	e    *pgEngine
	name string
	id   int64
	conn *pgxpool.Conn // holds the advisory lock; nil when PostgreSQL failed. Guarded by mu.
}

// Lock takes the local mutex, then the advisory lock. When PostgreSQL fails it logs and goes on with the local
// mutex alone: the write that follows fails on its own if the database is gone, and a lock must never hang.
func (l *pgLock) Lock() {
	l.mu.Lock()
	ctx, cancel := context.WithTimeout(context.Background(), pgQueryTimeout)
	defer cancel()
	c, err := l.e.lockPool.Acquire(ctx)
	if err == nil {
		if _, err = c.Exec(ctx, `SELECT pg_advisory_lock($1)`, l.id); err != nil {
			// A cancelled wait may have left the session in any state: drop it, which frees what it holds.
			c.Conn().Close(ctx)
			c.Release()
		}
	}
	if err != nil {
		l.e.log.Error("postgres lock failed; holding it in this process only", "lock", l.name, "err", l.e.redact(err))
		return
	}
	l.conn = c
}

func (l *pgLock) Unlock() {
	if c := l.conn; c != nil {
		l.conn = nil
		ctx, cancel := context.WithTimeout(context.Background(), pgQueryTimeout)
		var held bool
		if err := c.QueryRow(ctx, `SELECT pg_advisory_unlock($1)`, l.id).Scan(&held); err != nil || !held {
			// Ending the session is what frees the lock then.
			l.e.log.Error("postgres unlock failed; closing its connection", "lock", l.name, "err", l.e.redact(err))
			c.Conn().Close(ctx)
		}
		c.Release()
		cancel()
	}
	l.mu.Unlock()
}

func (e *pgEngine) tryLease(name, owner string, ttl time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), pgQueryTimeout)
	defer cancel()
	// The database's clock decides expiry, so replicas whose clocks disagree still agree on who holds a lease.
	var got string
	err := e.pool.QueryRow(ctx, `INSERT INTO gateway_leases (name, owner, expires_at)
		VALUES ($1, $2, now() + make_interval(secs => $3))
		ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
		WHERE gateway_leases.owner = excluded.owner OR gateway_leases.expires_at < now()
		RETURNING owner`, name, owner, ttl.Seconds()).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("storage: lease %s: %w", name, e.redact(err))
	}
	return true, nil
}

func (e *pgEngine) releaseLease(name, owner string) error {
	ctx, cancel := context.WithTimeout(context.Background(), pgQueryTimeout)
	defer cancel()
	if _, err := e.pool.Exec(ctx, `DELETE FROM gateway_leases WHERE name = $1 AND owner = $2`, name, owner); err != nil {
		return fmt.Errorf("storage: release lease %s: %w", name, e.redact(err))
	}
	return nil
}
