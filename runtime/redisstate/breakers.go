package redisstate

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Breakers shares circuit-breaker state between replicas. The caller names each breaker by an id it derives
// from the target (a hash: a breaker's key holds credential-derived identity, which never goes to Redis in
// clear). Failures are counted under Key("breaker", id) only when they happen; an opening or closing is told
// to every replica on the channel Key("breakers") as "open <id> <until, Unix ms>" or "close <id>". A message
// sent while a replica is disconnected is lost to it: that replica goes on with its own count until the
// next one.
type Breakers struct {
	c          *Client
	channel    string
	badMessage atomic.Bool // a malformed message was logged: the next ones are only counted
}

// maxBreakerID bounds the ids of messages read from the channel; the gateway's are 32 hex digits.
const maxBreakerID = 64

// maxBreakerWindow caps a count's expiry: cooldowns are configurable to any length, Redis's expiries are not.
const maxBreakerWindow = 30 * 24 * time.Hour

// failScript adds a failure and starts the count's window at the first one, as a replica's own breaker does:
// INCR keeps the key's expiry, so only the INCR that created the key sets it. One script, so that a key can
// never be left without an expiry between two commands.
var failScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`)

// Breakers returns the shared breaker state over c.
func (c *Client) Breakers() *Breakers { return &Breakers{c: c, channel: c.Key("breakers")} }

// Fail counts a failure of breaker id within window (from the first failure counted) and returns the count
// of the window so far. ok is false when Redis is not available or the call failed: the caller counts alone.
func (b *Breakers) Fail(id string, window time.Duration) (count int64, ok bool) {
	if !b.c.Available() || !validBreakerID(id) {
		return 0, false
	}
	window = min(max(window, time.Millisecond), maxBreakerWindow)
	ctx, cancel := context.WithTimeout(context.Background(), b.c.Timeout())
	defer cancel()
	n, err := failScript.Run(ctx, b.c.rdb, []string{b.c.Key("breaker", id)}, window.Milliseconds()).Int64()
	if err != nil {
		b.c.Failed("breakers", err)
		return 0, false
	}
	return n, true
}

// Open tells every replica that breaker id is open until until.
func (b *Breakers) Open(id string, until time.Time) {
	b.publish(id, "open "+id+" "+strconv.FormatInt(until.UnixMilli(), 10))
}

// Close tells every replica that breaker id closed (its probe succeeded).
func (b *Breakers) Close(id string) { b.publish(id, "close "+id) }

func (b *Breakers) publish(id, msg string) {
	if !b.c.Available() || !validBreakerID(id) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.c.Timeout())
	defer cancel()
	b.c.Failed("breakers", b.c.rdb.Publish(ctx, b.channel, msg).Err())
}

// Watch calls onOpen and onClose with every message of the channel, this replica's own included, one at a
// time, until stop is called. go-redis keeps the subscription: it reconnects and subscribes again after Redis
// was lost. Malformed messages are dropped (the first is logged; each counts as an error of op "breakers").
func (b *Breakers) Watch(onOpen func(id string, until time.Time), onClose func(id string)) (stop func()) {
	ps := b.c.rdb.Subscribe(context.Background(), b.channel)
	var wg sync.WaitGroup
	wg.Go(func() {
		for m := range ps.Channel() {
			if !b.apply(m.Payload, onOpen, onClose) {
				if b.c.opts.OnError != nil {
					b.c.opts.OnError("breakers")
				}
				if b.badMessage.CompareAndSwap(false, true) {
					b.c.log.Warn("redis: malformed circuit-breaker message dropped (later ones are only counted)",
						"channel", b.channel, "bytes", len(m.Payload))
				}
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			ps.Close()
			wg.Wait()
		})
	}
}

// apply parses one message and calls its handler; false for a malformed message.
func (b *Breakers) apply(msg string, onOpen func(string, time.Time), onClose func(string)) bool {
	if len(msg) > 2*maxBreakerID {
		return false
	}
	f := strings.Fields(msg)
	switch {
	case len(f) == 3 && f[0] == "open" && validBreakerID(f[1]):
		ms, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || ms <= 0 {
			return false
		}
		onOpen(f[1], time.UnixMilli(ms))
	case len(f) == 2 && f[0] == "close" && validBreakerID(f[1]):
		onClose(f[1])
	default:
		return false
	}
	return true
}

// validBreakerID accepts lowercase hex of up to maxBreakerID digits.
func validBreakerID(id string) bool {
	if id == "" || len(id) > maxBreakerID {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
