package mcpgw

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/llmgw/gateway/storage"
)

// Opening an upstream session costs three round trips (initialize, notifications/initialized, and the DELETE
// that ends it) around the one that does the work. sessionPool keeps sessions that finished an operation
// cleanly, per server record, for the next operation on that server: a list, a read, a get, or a call whose
// caller asked for neither progress nor log messages. A call that relays notifications opens a session of its
// own, as before: its notifications must all reach the caller before its result, which only closing the
// session waits for.
//
// A session is used by one operation at a time. It is not kept after an error other than one the server
// answered, after a cancelled operation, or once the server record changed (the key holds a hash of its url,
// headers and update time). A kept session the server has since ended answers 404, which the SDK reports as
// mcp.ErrSessionMissing: the server did not run the request, so the operation is sent again on a new session,
// once.

// Bounds of the pool.
const (
	// PoolIdlePerServer bounds the idle sessions kept for one server record.
	PoolIdlePerServer = 8
	// PoolIdleTotal bounds the idle sessions kept in all.
	PoolIdleTotal = 1024
	// PoolIdleTimeout closes a session idle this long; servers end idle sessions too, on their own clocks.
	PoolIdleTimeout = 60 * time.Second
)

type sessionPool struct {
	mu     sync.Mutex
	idle   map[string][]*pooledSession // by poolKey; the most recently used last
	count  int                         // idle sessions in all
	closed bool
	stop   chan struct{}
	sweeps sync.Once // the sweeper starts with the first session kept
}

// pooledSession is an upstream session with the server record it was opened for.
type pooledSession struct {
	key        string
	session    *mcp.ClientSession
	cancelSent <-chan struct{} // connect's
	lastUsed   time.Time
	reused     bool // it served an operation before this one
}

func newSessionPool() *sessionPool {
	return &sessionPool{idle: map[string][]*pooledSession{}, stop: make(chan struct{})}
}

// poolKey names a server record: a session opened with other headers or for another url must not serve it.
func poolKey(srv *storage.MCPServer) string {
	h := sha256.New()
	h.Write([]byte(srv.URL))
	names := make([]string, 0, len(srv.Headers))
	for name := range srv.Headers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		h.Write([]byte{0})
		h.Write([]byte(name))
		h.Write([]byte{0})
		h.Write([]byte(srv.Headers[name]))
	}
	h.Write([]byte(srv.UpdatedAt.UTC().Format(time.RFC3339Nano)))
	return srv.WorkspaceID + "\x00" + srv.ID + "\x00" + hex.EncodeToString(h.Sum(nil)[:16])
}

// take returns an idle session of srv's, or nil.
func (p *sessionPool) take(srv *storage.MCPServer) *pooledSession {
	key := poolKey(srv)
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.idle[key]
	for len(list) > 0 {
		ps := list[len(list)-1]
		list = list[:len(list)-1]
		p.count--
		if time.Since(ps.lastUsed) < PoolIdleTimeout {
			p.setIdle(key, list)
			ps.reused = true
			return ps
		}
		go ps.session.Close()
	}
	p.setIdle(key, list)
	return nil
}

func (p *sessionPool) setIdle(key string, list []*pooledSession) {
	if len(list) == 0 {
		delete(p.idle, key)
		return
	}
	p.idle[key] = list
}

// put keeps a session that finished an operation cleanly, or closes it when the pool is full or closed.
func (p *sessionPool) put(ps *pooledSession) {
	ps.lastUsed = time.Now()
	p.mu.Lock()
	if p.closed || p.count >= PoolIdleTotal || len(p.idle[ps.key]) >= PoolIdlePerServer {
		p.mu.Unlock()
		go ps.session.Close()
		return
	}
	p.idle[ps.key] = append(p.idle[ps.key], ps)
	p.count++
	p.mu.Unlock()
	p.sweeps.Do(func() { go p.sweep() })
}

// sweep closes sessions idle past PoolIdleTimeout, until close.
func (p *sessionPool) sweep() {
	t := time.NewTicker(PoolIdleTimeout / 2)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		var expired []*pooledSession
		p.mu.Lock()
		for key, list := range p.idle {
			kept := list[:0]
			for _, ps := range list {
				if time.Since(ps.lastUsed) >= PoolIdleTimeout {
					expired = append(expired, ps)
					p.count--
				} else {
					kept = append(kept, ps)
				}
			}
			p.setIdle(key, kept)
		}
		p.mu.Unlock()
		for _, ps := range expired {
			ps.session.Close()
		}
	}
}

// close ends every idle session and keeps none from now on.
func (p *sessionPool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	idle := p.idle
	p.idle, p.count = map[string][]*pooledSession{}, 0
	p.mu.Unlock()
	close(p.stop)
	for _, list := range idle {
		for _, ps := range list {
			go ps.session.Close()
		}
	}
}

// withPooledSession runs one operation on a session of srv's: an idle one when the pool has it, else a new
// one. The session goes back to the pool when the operation succeeded or the server answered its error; a
// kept session the server ended (mcp.ErrSessionMissing) is replaced by a new one and the operation sent again.
func withPooledSession[T any](ctx context.Context, g *Gateway, srv *storage.MCPServer, do func(context.Context, *mcp.ClientSession) (T, error)) (T, error) {
	for {
		ps := g.pool.take(srv)
		if ps == nil {
			session, cancelSent, err := g.connect(ctx, srv, nil)
			if err != nil {
				var none T
				return none, err
			}
			ps = &pooledSession{key: poolKey(srv), session: session, cancelSent: cancelSent}
		}
		res, err := do(ctx, ps.session)
		switch {
		case err == nil || answeredError(err) != nil && ctx.Err() == nil:
			g.pool.put(ps)
			return res, err
		case ps.reused && errors.Is(err, mcp.ErrSessionMissing) && ctx.Err() == nil:
			go ps.session.Close()
			continue // the server ended the kept session without running the request
		case ctx.Err() != nil:
			// Cancelled or timed out: the SDK tells the server in the background, before the session may close.
			go func() {
				select {
				case <-ps.cancelSent:
				case <-time.After(cancelNoticeWait):
				}
				ps.session.Close()
			}()
			return res, err
		default:
			go ps.session.Close()
			return res, err
		}
	}
}
