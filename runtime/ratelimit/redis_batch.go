package ratelimit

import (
	"context"
	"sync"
	"time"

	"github.com/llmgw/gateway/runtime/redisstate"
	"github.com/redis/go-redis/v9"
)

// admitFlights is how many pipelines of admitScript calls a limiter has in flight at once. Redis runs the
// scripts one after the other anyway; a second flight lets one batch travel while the other runs, so that two
// concurrent requests do not wait for each other.
const admitFlights = 2

// admitBatch sends concurrent Admits' script calls to Redis together (a group commit): a caller that finds a
// flight free sends what is queued, itself included, in one pipeline; a caller that finds every flight taken
// queues and waits, and the first one queued sends the next pipeline when a flight ends. A lone request is sent
// at once, so one connection's latency does not change, while under load the write, the read and the
// scheduler's wake-ups are paid per pipeline rather than per request. The zero value is ready.
type admitBatch struct {
	mu      sync.Mutex
	queued  []*admitCall
	spare   []*admitCall // a sent batch's slice, for the next queue
	flights int
}

// admitCall is one Admit's script call and, once done, its answer.
type admitCall struct {
	keys     []string
	args     []any
	deadline time.Time // the caller waits at most the client's Timeout, queueing included
	answer   []string
	err      error
	done     chan bool    // told false when answered, true when it must send batch
	batch    []*admitCall // the calls it sends, itself among them
}

var admitCalls = sync.Pool{New: func() any {
	return &admitCall{keys: make([]string, 0, inlineHits), args: make([]any, 0, 4*inlineHits), done: make(chan bool, 1)}
}}

// newAdmitCall returns an empty call whose deadline starts now.
func newAdmitCall(client *redisstate.Client) *admitCall {
	call := admitCalls.Get().(*admitCall)
	call.keys, call.args, call.answer, call.err = call.keys[:0], call.args[:0], nil, nil
	call.deadline = time.Now().Add(client.Timeout())
	return call
}

// run returns when the call has its answer or error.
func (b *admitBatch) run(client *redisstate.Client, call *admitCall) {
	b.mu.Lock()
	b.queued = append(b.queued, call)
	var batch []*admitCall
	if b.flights == admitFlights {
		b.mu.Unlock()
		if lead := <-call.done; !lead {
			return
		}
		batch, call.batch = call.batch, nil
	} else {
		b.flights++
		batch = b.take()
		b.mu.Unlock()
	}
	send(client, batch)
	for _, c := range batch {
		if c != call {
			c.done <- false
		}
	}
	clear(batch)

	b.mu.Lock()
	b.spare = batch[:0]
	if len(b.queued) == 0 {
		b.flights--
		b.mu.Unlock()
		return
	}
	// The flight passes to the first queued, with what is queued: this caller has its answer.
	next := b.queued[0]
	next.batch = b.take()
	b.mu.Unlock()
	next.done <- true
}

// take returns the queued calls and empties the queue; b.mu is held.
func (b *admitBatch) take() []*admitCall {
	batch := b.queued
	b.queued, b.spare = b.spare, nil
	return batch
}

// send runs the batch's script calls in one pipeline (a lone call without one), bounded by the earliest
// deadline among them, which is the first queued's.
func send(client *redisstate.Client, batch []*admitCall) {
	ctx, cancel := context.WithDeadline(context.Background(), batch[0].deadline)
	defer cancel()
	rdb := client.Redis()
	if len(batch) == 1 {
		c := batch[0]
		c.answer, c.err = admitScript.Run(ctx, rdb, c.keys, c.args...).StringSlice()
		return
	}
	cmds := make([]*redis.Cmd, len(batch))
	p := rdb.Pipeline()
	for i, c := range batch {
		cmds[i] = p.EvalSha(ctx, admitScript.Hash(), c.keys, c.args...)
	}
	_, err := p.Exec(ctx)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// Redis lost its scripts (a restart, SCRIPT FLUSH): send the failed ones again with the source, which
		// Redis keeps for the next calls.
		for i, c := range batch {
			if redis.HasErrorPrefix(cmds[i].Err(), "NOSCRIPT") {
				cmds[i] = admitScript.Eval(ctx, p, c.keys, c.args...)
			}
		}
		p.Exec(ctx) // the commands carry its error
	}
	for i, c := range batch {
		c.answer, c.err = cmds[i].StringSlice()
	}
}
