// Package httpclient is the gateway's HTTP client of providers: an http.RoundTripper (Transport) that the engine
// calls for every upstream attempt, and that the management client (runtime/upstream) shares.
//
// It owns how the gateway talks HTTP to an upstream:
//   - HTTP/1.1 on the caller's goroutine. net/http's Transport hands every request to two goroutines of its
//     connection (a writer and a reader) and back through channels: at one connection that is three goroutine
//     wake-ups a call, and under load a fifth of the gateway's CPU. Here the goroutine that asks writes the
//     request, reads the answer's head and then the body, on a pooled keep-alive connection; an answer's body
//     (a stream included) is read from the connection's buffer as the caller reads it, never buffered whole, and
//     a Read returns every byte already buffered, so that a relay can tell when no further event is waiting.
//   - the dial-time address check: every connection is dialled through netguard.Policy.DialContext, so the
//     address actually connected to is the one checked (no DNS-rebinding window).
//   - TLS with the system's roots (or Options.TLSConfig's), verified, ALPN "http/1.1". A host that refuses
//     HTTP/1.1 during the handshake (no_application_protocol) is remembered and served from then on by
//     net/http's Transport with HTTP/2.
//   - HTTP_PROXY, HTTPS_PROXY and NO_PROXY (Options.Proxy): a request for which the environment names a proxy
//     goes through net/http's Transport and that proxy. The gateway dials only the proxy, which the operator
//     chose and which is not checked; the target's host is checked before the call by resolving it (a name
//     that does not resolve at the gateway is left to the proxy, which may be the only one able to resolve it).
//   - cancellation: when the request's context ends, its connection is closed, which ends a write, a wait for
//     the answer or a body read at once; the call then fails with the context's error.
//   - bounds: an answer's head, with the 1xx answers before it, is at most Options.MaxHeaderBytes; idle
//     connections are kept at most Options.MaxIdlePerHost per host and Options.IdleTimeout, and every one is
//     checked (a non-blocking peek) before reuse, so that one the server has closed is not written to. A call
//     on a reused connection that fails before any byte of the answer arrived is made once more on a new
//     connection when its body can be replayed (GetBody), as net/http does for a connection closed while idle.
//   - one answer per request: a connection with bytes after an answer (a body longer than its length, an answer
//     sent unasked while the connection was idle) is closed, never reused, so that they cannot become the next
//     call's answer; the request's framing headers (Host, Content-Length, Transfer-Encoding, Connection,
//     Trailer) are the client's own, whatever their letter case in Request.Header.
//
// It does not decompress answers (it sends no Accept-Encoding of its own), follow redirects or keep cookies;
// the engine wants none of them.
package httpclient
