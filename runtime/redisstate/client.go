package redisstate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Options configure Open. The zero value is usable.
type Options struct {
	// Prefix starts every key the gateway writes, so that one Redis can serve several gateways (or tests).
	// Default "gw:".
	Prefix string
	// Logger receives the transitions (Redis lost, Redis back). Default slog.Default().
	Logger *slog.Logger
	// OnState is told each transition: true when Redis answers again, false when it is lost.
	OnState func(up bool)
	// OnError is told each failed call, with the operation's name.
	OnError func(op string)
	// Timeout bounds each call (dial, read, write, waiting for a pooled connection). Default 250 ms: a
	// rate-limit check waits at most this long before the request falls back to local counting.
	Timeout time.Duration
	// ProbeEvery is how often a down Redis is pinged. Default 1 s.
	ProbeEvery time.Duration
}

// Client is the replicas' shared Redis. Safe for concurrent use.
type Client struct {
	rdb    *redis.Client
	prefix string
	log    *slog.Logger
	opts   Options
	addr   string // host:port, for log lines (the URL may hold a password)

	up      atomic.Bool
	probing atomic.Bool

	nextErrorLog atomic.Int64 // Unix ns before which a command's failure is only counted
	unlogged     atomic.Int64 // failures counted since the last line
	closed       chan struct{}
	once         sync.Once
	wg           sync.WaitGroup
}

// Open parses url (redis://, rediss:// or unix://) and connects. A URL that does not parse is an error; a
// Redis that does not answer is not: the gateway starts, logs that Redis is down and uses it once it answers.
func Open(url string, opts Options) (*Client, error) {
	o, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("--redis: %s", redactURLError(err, url))
	}
	if opts.Prefix == "" {
		opts.Prefix = "gw:"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 250 * time.Millisecond
	}
	if opts.ProbeEvery <= 0 {
		opts.ProbeEvery = time.Second
	}
	// go-redis's own messages (a reconnecting subscription's failed dials, every second while Redis is down)
	// go to the gateway's log at debug level: the transitions above already say what matters, once.
	redis.SetLogger(debugLogger{opts.Logger})
	o.DialTimeout = opts.Timeout
	o.ReadTimeout = opts.Timeout
	o.WriteTimeout = opts.Timeout
	o.PoolTimeout = opts.Timeout
	o.MaxRetries = -1 // fail fast: the caller falls back, a retry would only double the wait
	o.ContextTimeoutEnabled = true
	c := &Client{rdb: redis.NewClient(o), prefix: opts.Prefix, log: opts.Logger, opts: opts, addr: o.Addr,
		closed: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 4*opts.Timeout)
	defer cancel()
	if err := c.rdb.Ping(ctx).Err(); err != nil {
		c.log.Warn("redis: not reachable at start; serving with local state until it answers", "addr", c.addr,
			"err", err)
		c.report(false)
		c.startProbe()
	} else {
		c.up.Store(true)
		c.report(true)
	}
	return c, nil
}

// redactURLError keeps a password out of a parse error.
func redactURLError(err error, url string) string {
	msg := err.Error()
	if i := strings.LastIndex(url, "@"); i > 0 {
		msg = strings.ReplaceAll(msg, url[:i], "redis://…")
	}
	return msg
}

// Redis is the go-redis client. Calls through it report their outcome with Failed.
func (c *Client) Redis() *redis.Client { return c.rdb }

// Key is the prefix followed by parts joined with ':'.
func (c *Client) Key(parts ...string) string {
	n := len(c.prefix)
	for _, p := range parts {
		n += len(p) + 1
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(c.prefix)
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(p)
	}
	return b.String()
}

// Available reports whether Redis is believed reachable. False: use the local fallback without calling.
func (c *Client) Available() bool { return c != nil && c.up.Load() }

// Timeout is the bound of one call; callers derive their contexts from it.
func (c *Client) Timeout() time.Duration { return c.opts.Timeout }

// CallContext bounds one call, all of it, by Timeout. The client's own timeouts bound each step alone: without
// a deadline a call that first waits for a pooled connection (the pool held by calls to a Redis that stopped
// answering) and then reads pays Timeout twice.
func (c *Client) CallContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), c.opts.Timeout)
}

// Failed reports the outcome of a call: a connection-level error (timeout, refused, closed, pool exhausted)
// marks Redis down until the probe gets an answer; redis.Nil and errors Redis itself answered (a script's
// error) do not. It returns whether err was such a connection-level failure.
func (c *Client) Failed(op string, err error) bool {
	if err == nil || errors.Is(err, redis.Nil) {
		return false
	}
	if c.opts.OnError != nil {
		c.opts.OnError(op)
	}
	var re redis.Error
	if errors.As(err, &re) && !unusable(re) {
		// Such an error can come back on every call (Redis out of memory, a key of another type): one line
		// per interval, with how many it stands for.
		if next := c.nextErrorLog.Load(); time.Now().UnixNano() >= next &&
			c.nextErrorLog.CompareAndSwap(next, time.Now().Add(errorLogEvery).UnixNano()) {
			c.log.Error("redis: command failed", "op", op, "err", err, "failed_since_last_line",
				c.unlogged.Swap(0)+1)
		} else {
			c.unlogged.Add(1)
		}
		return false
	}
	if c.up.CompareAndSwap(true, false) {
		c.log.Error("redis: lost; falling back to local state (limits counted per replica, cache misses)",
			"addr", c.addr, "op", op, "err", err)
		c.report(false)
	}
	c.startProbe()
	return true
}

// errorLogEvery bounds the lines of errors Redis answers (Failed), which may come back on every call.
const errorLogEvery = 10 * time.Second

// unusable tells the errors Redis answers that no other call would get past: it is loading its data, a
// read-only replica, or does not take the gateway's credentials (a password changed under it). They count as
// Redis lost, so that the probe, not every request, finds out when that has passed.
func unusable(err redis.Error) bool {
	msg := err.Error()
	for _, p := range [...]string{"LOADING", "READONLY", "NOAUTH", "WRONGPASS", "MASTERDOWN"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

func (c *Client) report(up bool) {
	if c.opts.OnState != nil {
		c.opts.OnState(up)
	}
}

// startProbe pings Redis every ProbeEvery until it answers; one probe runs at a time.
func (c *Client) startProbe() {
	if !c.probing.CompareAndSwap(false, true) {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := time.NewTicker(c.opts.ProbeEvery)
		defer t.Stop()
		for {
			select {
			case <-c.closed:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 4*c.opts.Timeout)
			err := c.rdb.Ping(ctx).Err()
			cancel()
			if err == nil {
				// Before up: a call that fails as soon as up is set must be able to start the next probe.
				c.probing.Store(false)
				if c.up.CompareAndSwap(false, true) {
					c.log.Info("redis: reachable again; shared state restored", "addr", c.addr)
					c.report(true)
				}
				return
			}
		}
	}()
}

// Close stops the probe and closes the connections. Safe on a nil Client.
func (c *Client) Close() error {
	if c == nil {
		return nil
	}
	c.once.Do(func() { close(c.closed) })
	c.wg.Wait()
	return c.rdb.Close()
}

// debugLogger hands go-redis's messages to slog at debug level.
type debugLogger struct{ log *slog.Logger }

func (l debugLogger) Printf(ctx context.Context, format string, v ...any) {
	if l.log.Enabled(ctx, slog.LevelDebug) {
		l.log.Debug(fmt.Sprintf(format, v...), "component", "redis")
	}
}
