package httpclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/netguard"
)

// Options configures a Transport. The zero value is the gateway's default.
type Options struct {
	// Policy checks every address dialled (netguard.Policy.DialContext). Nil: netguard's default policy.
	Policy *netguard.Policy
	// Resolver resolves host names for the dial-time check. Nil: net.DefaultResolver.
	Resolver netguard.Resolver
	// DialTimeout bounds a connection's dial. Default 10s.
	DialTimeout time.Duration
	// TLSHandshakeTimeout bounds a TLS handshake. Default 10s.
	TLSHandshakeTimeout time.Duration
	// TLSConfig is cloned for every TLS connection (RootCAs, client certificates). Nil: the system's roots.
	// Certificates are always verified unless it sets InsecureSkipVerify.
	TLSConfig *tls.Config
	// IdleTimeout is how long an idle connection is kept. Default 90s.
	IdleTimeout time.Duration
	// MaxIdlePerHost bounds the idle connections kept per scheme and host. Default 256.
	MaxIdlePerHost int
	// MaxHeaderBytes bounds an answer's status line and headers. Default 1 MiB.
	MaxHeaderBytes int
	// Proxy names the proxy of a request, as http.Transport.Proxy does. Nil: http.ProxyFromEnvironment
	// (HTTP_PROXY, HTTPS_PROXY, NO_PROXY; loopback hosts never go through a proxy).
	Proxy func(*http.Request) (*url.URL, error)
}

// Transport is the gateway's upstream http.RoundTripper (see the package doc). It is safe for concurrent use;
// Close releases its idle connections and its janitor.
type Transport struct {
	opts  Options
	dial  func(ctx context.Context, network, address string) (net.Conn, error)
	proxy func(*http.Request) (*url.URL, error)

	mu    sync.RWMutex
	pools map[poolKey]*pool

	fallbackOnce sync.Once
	h2           *http.Transport // hosts that refuse HTTP/1.1
	proxied      *http.Transport // requests the environment sends through a proxy

	sweeping *time.Timer // runs sweep while there are pools; stopped when there are none
}

var _ http.RoundTripper = (*Transport)(nil)

// poolKey names a pool: a struct of strings hashes without building a string per request.
type poolKey struct{ scheme, host string }

// New returns a Transport with opts.
func New(opts Options) *Transport {
	if opts.Policy == nil {
		opts.Policy = &netguard.Policy{}
	}
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 10 * time.Second
	}
	if opts.TLSHandshakeTimeout <= 0 {
		opts.TLSHandshakeTimeout = 10 * time.Second
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 90 * time.Second
	}
	if opts.MaxIdlePerHost <= 0 {
		opts.MaxIdlePerHost = 256
	}
	if opts.MaxHeaderBytes <= 0 {
		opts.MaxHeaderBytes = 1 << 20
	}
	proxy := opts.Proxy
	if proxy == nil {
		proxy = http.ProxyFromEnvironment
	}
	t := &Transport{
		opts:  opts,
		dial:  opts.Policy.DialContext(&net.Dialer{Timeout: opts.DialTimeout, KeepAlive: 30 * time.Second}, opts.Resolver),
		proxy: proxy,
		pools: map[poolKey]*pool{},
	}
	t.sweeping = time.AfterFunc(time.Hour, t.sweepTick)
	t.sweeping.Stop()
	return t
}

// RoundTrip makes one HTTP call. It never follows redirects; the answer's body must be read to its end or
// closed, as with net/http.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	u := req.URL
	if u == nil {
		closeBody(req)
		return nil, errors.New("httpclient: request has no URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		closeBody(req)
		return nil, fmt.Errorf("httpclient: unsupported protocol scheme %q", u.Scheme)
	}
	if u.Host == "" {
		closeBody(req)
		return nil, errors.New("httpclient: request URL has no host")
	}
	if err := validateRequest(req); err != nil {
		closeBody(req)
		return nil, err
	}
	if proxyURL, err := t.proxy(req); err != nil {
		closeBody(req)
		return nil, fmt.Errorf("httpclient: proxy from environment: %w", err)
	} else if proxyURL != nil {
		return t.viaProxy(req)
	}
	p := t.pool(poolKey{u.Scheme, u.Host})
	if p.needsH2.Load() {
		return t.fallbacks().h2.RoundTrip(req)
	}
	return t.roundTrip(p, req)
}

// roundTrip makes the call on a pooled or new connection of p, and once more on a new connection when a reused
// one turns out to be dead before the answer began.
func (t *Transport) roundTrip(p *pool, req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	fresh := false
	for {
		if err := ctx.Err(); err != nil {
			closeBody(req)
			return nil, err
		}
		var pc *conn
		if !fresh {
			pc = p.take(time.Now())
		}
		if pc == nil {
			var err error
			if pc, err = t.connect(ctx, p); err != nil {
				closeBody(req)
				if errors.Is(err, errRefusesHTTP1) {
					p.needsH2.Store(true)
					return t.fallbacks().h2.RoundTrip(req)
				}
				return nil, err
			}
		}
		resp, err := pc.roundTrip(req)
		if err == nil {
			return resp, nil
		}
		var retry *retryableError
		if !errors.As(err, &retry) {
			return nil, err
		}
		next, rerr := rewind(req)
		if rerr != nil {
			return nil, retry.err
		}
		req, fresh = next, true
	}
}

// rewind gives a request whose body can be sent again, or an error when it cannot be replayed.
func rewind(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	if req.GetBody == nil {
		return nil, errors.New("body cannot be replayed")
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	again := *req
	again.Body = body
	return &again, nil
}

// connect dials a new connection to p's host, with TLS for https.
func (t *Transport) connect(ctx context.Context, p *pool) (*conn, error) {
	raw, err := t.dial(ctx, "tcp", p.address)
	if err != nil {
		var ge *gwerr.Error
		if errors.As(err, &ge) {
			return nil, err
		}
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: err}
	}
	nc := raw
	if p.tls != nil {
		tc := tls.Client(raw, p.tls)
		hctx, cancel := context.WithTimeout(ctx, t.opts.TLSHandshakeTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			raw.Close()
			if refusesHTTP1(err) {
				return nil, errRefusesHTTP1
			}
			return nil, err
		}
		if proto := tc.ConnectionState().NegotiatedProtocol; proto != "" && proto != "http/1.1" {
			tc.Close()
			return nil, errRefusesHTTP1
		}
		nc = tc
	}
	return newConn(t, p, nc, raw), nil
}

// errRefusesHTTP1 marks a host whose TLS handshake refused HTTP/1.1: it is served over HTTP/2 from then on.
var errRefusesHTTP1 = errors.New("httpclient: host refuses HTTP/1.1")

// refusesHTTP1 reports a handshake the server ended with the no_application_protocol alert (RFC 7301 §3.2),
// which is how a server that speaks only HTTP/2 answers a client that offers only http/1.1.
func refusesHTTP1(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "remote error" && strings.Contains(op.Err.Error(), "no application protocol")
}

// pool finds or makes the pool of a scheme and host.
func (t *Transport) pool(k poolKey) *pool {
	t.mu.RLock()
	p := t.pools[k]
	t.mu.RUnlock()
	if p != nil {
		return p
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if p = t.pools[k]; p == nil {
		p = newPool(k, t.opts.TLSConfig)
		if len(t.pools) == 0 {
			t.sweeping.Reset(sweepEvery)
		}
		t.pools[k] = p
	}
	return p
}

// fallbacks builds, once, the net/http transports for HTTP/2-only hosts and for proxied requests.
func (t *Transport) fallbacks() *Transport {
	t.fallbackOnce.Do(func() {
		var tlsConfig *tls.Config
		if t.opts.TLSConfig != nil {
			tlsConfig = t.opts.TLSConfig.Clone()
		}
		t.h2 = &http.Transport{
			Proxy:               nil, // only requests the environment does not proxy come here
			DialContext:         t.dial,
			TLSClientConfig:     tlsConfig,
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: t.opts.MaxIdlePerHost,
			IdleConnTimeout:     t.opts.IdleTimeout,
			TLSHandshakeTimeout: t.opts.TLSHandshakeTimeout,
		}
		// The proxy is the operator's choice: it is dialled without the policy, which checks the target instead
		// (viaProxy).
		dialer := &net.Dialer{Timeout: t.opts.DialTimeout, KeepAlive: 30 * time.Second}
		t.proxied = &http.Transport{
			Proxy:               t.proxy,
			DialContext:         dialer.DialContext,
			TLSClientConfig:     tlsConfig,
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: t.opts.MaxIdlePerHost,
			IdleConnTimeout:     t.opts.IdleTimeout,
			TLSHandshakeTimeout: t.opts.TLSHandshakeTimeout,
		}
	})
	return t
}

// viaProxy checks the target's host against the policy and sends the request through the environment's proxy.
func (t *Transport) viaProxy(req *http.Request) (*http.Response, error) {
	target := req.URL.Scheme + "://" + req.URL.Host
	if err := t.opts.Policy.CheckURL(req.Context(), t.opts.Resolver, target); err != nil {
		var ge *gwerr.Error
		if !errors.As(err, &ge) || ge.Code != netguard.CodeHostUnresolvable {
			closeBody(req)
			return nil, err
		}
		// Unresolvable here: behind a proxy the gateway may have no DNS for outside names; the proxy resolves it.
	}
	return t.fallbacks().proxied.RoundTrip(req)
}

// CloseIdleConnections closes every idle connection, its own and its fallbacks'.
func (t *Transport) CloseIdleConnections() {
	t.mu.RLock()
	pools := make([]*pool, 0, len(t.pools))
	for _, p := range t.pools {
		pools = append(pools, p)
	}
	t.mu.RUnlock()
	for _, p := range pools {
		p.closeIdle(func(*conn) bool { return true })
	}
	if t.h2 != nil {
		t.h2.CloseIdleConnections()
		t.proxied.CloseIdleConnections()
	}
}

// Close closes the idle connections and stops sweeping. Calls in flight finish; later ones still work.
func (t *Transport) Close() error {
	t.sweeping.Stop()
	t.CloseIdleConnections()
	return nil
}

// sweepEvery is how often idle connections past Options.IdleTimeout are closed and unused pools dropped. A
// timer, not a goroutine: it runs only while there are pools, so an idle Transport costs nothing.
const sweepEvery = 15 * time.Second

func (t *Transport) sweepTick() {
	if t.sweep(time.Now()) > 0 {
		t.sweeping.Reset(sweepEvery)
	}
}

// sweep closes connections idle longer than IdleTimeout and forgets pools that have had nothing to do for as
// long, so that a gateway called with many custom hosts over time keeps no state for the ones gone.
// It returns how many pools are left.
func (t *Transport) sweep(now time.Time) int {
	cutoff := now.Add(-t.opts.IdleTimeout)
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, p := range t.pools {
		p.closeIdle(func(c *conn) bool { return c.idleSince.Before(cutoff) })
		if p.unusedSince(cutoff) {
			delete(t.pools, k)
		}
	}
	return len(t.pools)
}

// closeBody closes a request's body, as a RoundTripper must even when it fails.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// pool is the idle connections of one scheme and host, newest last.
type pool struct {
	address string      // host:port to dial
	tls     *tls.Config // nil for http
	needsH2 atomic.Bool // the host refused HTTP/1.1: net/http serves it

	mu       sync.Mutex
	idle     []*conn
	open     int // connections of this pool not yet closed, idle or in use
	lastUsed time.Time
}

func newPool(k poolKey, base *tls.Config) *pool {
	host, port, err := net.SplitHostPort(k.host)
	if err != nil { // no port
		host, port = strings.TrimSuffix(strings.TrimPrefix(k.host, "["), "]"), "80"
		if k.scheme == "https" {
			port = "443"
		}
	}
	p := &pool{address: net.JoinHostPort(host, port), lastUsed: time.Now()}
	if k.scheme == "https" {
		var cfg *tls.Config
		if base != nil {
			cfg = base.Clone()
		} else {
			cfg = &tls.Config{}
		}
		if cfg.ServerName == "" {
			cfg.ServerName = host
		}
		cfg.NextProtos = []string{"http/1.1"}
		p.tls = cfg
	}
	return p
}

// take returns the newest usable idle connection, or nil. Every idle connection is peeked at first (one
// non-blocking system call, no allocation): one its server closed, or that has bytes waiting that no request
// asked for (an answer sent after the last one, which would become the next call's), is closed instead of
// reused.
func (p *pool) take(now time.Time) *conn {
	p.mu.Lock()
	p.lastUsed = now
	for n := len(p.idle); n > 0; n = len(p.idle) {
		c := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		if now.Sub(c.idleSince) < c.t.opts.IdleTimeout && c.peek.stillOpen() {
			return c
		}
		c.close()
		p.mu.Lock()
	}
	p.mu.Unlock()
	return nil
}

// put keeps an idle connection for reuse, or closes it when the pool is full.
func (p *pool) put(c *conn, max int, now time.Time) {
	c.idleSince = now
	c.reused = true
	p.mu.Lock()
	if len(p.idle) < max {
		p.idle = append(p.idle, c)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	c.close()
}

// closeIdle closes the idle connections for which drop is true.
func (p *pool) closeIdle(drop func(*conn) bool) {
	p.mu.Lock()
	kept := p.idle[:0]
	var dropped []*conn
	for _, c := range p.idle {
		if drop(c) {
			dropped = append(dropped, c)
		} else {
			kept = append(kept, c)
		}
	}
	clear(p.idle[len(kept):])
	p.idle = kept
	p.mu.Unlock()
	for _, c := range dropped {
		c.close()
	}
}

// unusedSince reports a pool with no open connection that no call has used since cutoff.
func (p *pool) unusedSince(cutoff time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.open == 0 && p.lastUsed.Before(cutoff)
}

// opened and closed count the pool's open connections.
func (p *pool) opened() {
	p.mu.Lock()
	p.open++
	p.mu.Unlock()
}

func (p *pool) closed() {
	p.mu.Lock()
	p.open--
	p.mu.Unlock()
}
