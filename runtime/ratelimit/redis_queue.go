package ratelimit

import (
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgw/gateway/runtime/redisstate"
	"github.com/redis/go-redis/v9"
)

// The write queue's bounds: what it holds before it drops, how many writes one pipeline carries, and how long
// the first write of a pipeline waits for company.
const (
	writeQueueSize = 8192
	writeBatch     = 128
	writeWait      = 2 * time.Millisecond
	dropLogEvery   = 10 * time.Second
)

// errRedisDown tells a write's done that it was not sent: Redis was down.
var errRedisDown = errors.New("redis is down")

type opKind uint8

const (
	opHashAdd opKind = iota // HINCRBYFLOAT key field v: tokens into a shared counter's bucket
	opAdd                   // INCRBYFLOAT key v: a budget's spend
	opSeed                  // SET key v NX: a budget's spend as storage saved it, unless a replica wrote it first
)

// redisOp is one write of the queue. Each also sets the key's expiry to ttl.
type redisOp struct {
	kind  opKind
	key   string
	field int64 // opHashAdd
	v     float64
	ttl   time.Duration
	// done, when set, is told the key's value after an opAdd, or why it was not written; it runs on the queue's
	// goroutine.
	done func(total float64, err error)
}

// writeQueue sends writes that the request must not wait for (tokens counted after an answer, spend settled) to
// Redis in pipelines, from one goroutine, in the order they were pushed. It is bounded: a full queue drops
// the write (the caller has counted it locally) and says so in the log, never blocking a request.
type writeQueue struct {
	client  *redisstate.Client
	log     *slog.Logger
	op      string // the operation's name for redisstate.Failed
	ch      chan redisOp
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	closed  atomic.Bool
	dropped atomic.Int64
}

func newWriteQueue(client *redisstate.Client, log *slog.Logger, op string) *writeQueue {
	q := &writeQueue{client: client, log: log, op: op, ch: make(chan redisOp, writeQueueSize),
		stop: make(chan struct{}), done: make(chan struct{})}
	go q.run()
	return q
}

// push queues op and reports whether it was taken: false when the queue is full or closed.
func (q *writeQueue) push(op redisOp) bool {
	if q.closed.Load() {
		return false
	}
	select {
	case q.ch <- op:
		return true
	default:
		q.dropped.Add(1)
		return false
	}
}

func (q *writeQueue) run() {
	defer close(q.done)
	batch := make([]redisOp, 0, writeBatch)
	wait := time.NewTimer(writeWait)
	wait.Stop()
	var lastDropLog time.Time
	for {
		select {
		case <-q.stop:
			q.drain(batch)
			return
		case op := <-q.ch:
			batch = append(batch[:0], op)
		}
		wait.Reset(writeWait)
	collect:
		for len(batch) < writeBatch {
			select {
			case op := <-q.ch:
				batch = append(batch, op)
			case <-wait.C:
				break collect
			case <-q.stop:
				break collect
			}
		}
		wait.Stop()
		q.write(batch)
		if n := q.dropped.Load(); n > 0 && time.Since(lastDropLog) >= dropLogEvery {
			q.dropped.Add(-n)
			lastDropLog = time.Now()
			q.log.Warn("redis: write queue full; writes dropped, counted by this replica only", "op", q.op,
				"dropped", n)
		}
	}
}

// drain writes what is queued when the queue closes.
func (q *writeQueue) drain(batch []redisOp) {
	for {
		batch = batch[:0]
		for len(batch) < writeBatch && len(q.ch) > 0 { // the one receiver: a receive cannot block
			batch = append(batch, <-q.ch)
		}
		if len(batch) == 0 {
			return
		}
		q.write(batch)
	}
}

// write sends the batch in one pipeline; without Redis it tells each done why not.
func (q *writeQueue) write(batch []redisOp) {
	if !q.client.Available() {
		for _, op := range batch {
			if op.done != nil {
				op.done(0, errRedisDown)
			}
		}
		return
	}
	totals := make([]*redis.FloatCmd, len(batch))
	ctx, cancel := q.client.CallContext()
	defer cancel()
	_, err := q.client.Redis().Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, op := range batch {
			switch op.kind {
			case opHashAdd:
				p.HIncrByFloat(ctx, op.key, strconv.FormatInt(op.field, 10), op.v)
				p.PExpire(ctx, op.key, op.ttl)
			case opAdd:
				totals[i] = p.IncrByFloat(ctx, op.key, op.v)
				p.PExpire(ctx, op.key, op.ttl)
			case opSeed:
				p.SetNX(ctx, op.key, op.v, op.ttl)
			}
		}
		return nil
	})
	q.client.Failed(q.op, err)
	for i, op := range batch {
		if op.done == nil {
			continue
		}
		if totals[i] == nil {
			op.done(0, err)
			continue
		}
		op.done(totals[i].Result())
	}
}

// close stops the queue after writing what it holds; later pushes are refused. Safe on a nil queue.
func (q *writeQueue) close() {
	if q == nil {
		return
	}
	q.once.Do(func() {
		q.closed.Store(true)
		close(q.stop)
	})
	<-q.done
}
