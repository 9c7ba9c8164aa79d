package httpclient

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// bufferSize is a connection's read and write buffer: a request's head and a small body go out in one write,
// and an answer's head and a small body come in with one read.
const bufferSize = 4 << 10

// maxKeptHead is the largest head buffer a connection keeps between calls: a head larger than that (up to
// Options.MaxHeaderBytes) is read into a buffer of its own, which is not kept with the idle connection.
const maxKeptHead = 16 << 10

// conn is one HTTP/1.1 connection. One call at a time uses it: the caller's goroutine writes the request and
// reads the answer; between calls it waits in its pool.
type conn struct {
	t     *Transport
	p     *pool
	nc    net.Conn // what is read and written: the TLS connection for https
	raw   net.Conn // the socket under nc
	peek  peeker   // raw's peek before reuse
	br    *bufio.Reader
	bw    *bufio.Writer
	head  []byte      // the answer's head, reused between calls
	exact exactWriter // the request body's writer, reused between calls

	closeOnce sync.Once
	aborted   atomic.Bool // the request's context ended and closed the connection
	abortFunc func()      // c.abort, bound once: registering it with context.AfterFunc then allocates no closure
	stopAbort func() bool // the current call's context.AfterFunc registration, nil when it has none

	reused      bool
	writeFailed bool // the request was not written whole: whatever the answer says, the connection is not reused
	idleSince   time.Time
}

func newConn(t *Transport, p *pool, nc, raw net.Conn) *conn {
	c := &conn{t: t, p: p, nc: nc, raw: raw, br: bufio.NewReaderSize(nc, bufferSize), bw: bufio.NewWriterSize(nc, bufferSize)}
	c.abortFunc = c.abort
	c.peek.init(raw)
	p.opened()
	return c
}

func (c *conn) abort() {
	c.aborted.Store(true)
	c.close()
}

func (c *conn) close() {
	c.closeOnce.Do(func() {
		c.nc.Close()
		c.p.closed()
	})
}

// retryableError is a failure on a reused connection before any byte of the answer arrived: the server had
// most likely closed it while it was idle, so the call may be made again on a new connection.
type retryableError struct{ err error }

func (e *retryableError) Error() string { return e.err.Error() }
func (e *retryableError) Unwrap() error { return e.err }

// roundTrip writes req and reads the answer's head. The answer's body reads from the connection; the
// connection goes back to its pool when the body has been read to its end.
func (c *conn) roundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if ctx.Done() != nil {
		c.stopAbort = context.AfterFunc(ctx, c.abortFunc)
	} else {
		c.stopAbort = nil
	}
	if err := c.writeRequest(req); err != nil {
		var lengthErr *bodyLengthError
		if !errors.As(err, &lengthErr) {
			if resp := c.earlyAnswer(req); resp != nil {
				return resp, nil
			}
		}
		return nil, c.fail(ctx, err, true)
	}
	resp, err := c.readResponse(req)
	if err != nil {
		return nil, c.fail(ctx, err, errors.Is(err, errNoAnswer))
	}
	return resp, nil
}

// earlyAnswerWait is how long a call whose request could not be written waits for the answer the server may
// have sent before it stopped reading (a 413 for a body too large, say), which is more useful than the write's
// broken pipe.
const earlyAnswerWait = 200 * time.Millisecond

// earlyAnswer reads an answer the server sent before the request was written whole, or returns nil. The
// connection is not reused after it.
func (c *conn) earlyAnswer(req *http.Request) *http.Response {
	if c.aborted.Load() || req.Context().Err() != nil {
		return nil
	}
	c.writeFailed = true
	c.nc.SetReadDeadline(time.Now().Add(earlyAnswerWait))
	resp, err := c.readResponse(req)
	c.nc.SetReadDeadline(time.Time{})
	if err != nil {
		return nil
	}
	resp.Close = true
	return resp
}

// errNoAnswer is a connection that ended before the first byte of an answer.
var errNoAnswer = errors.New("connection closed before the answer began")

// fail ends a call that failed: the connection is closed and the error says why. early is a failure before
// the answer began, which a reused connection may retry.
func (c *conn) fail(ctx context.Context, err error, early bool) error {
	c.release(false)
	if c.aborted.Load() || ctx.Err() != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
	}
	if early && c.reused {
		return &retryableError{err}
	}
	return err
}

// release ends the current call: its context registration is dropped and the connection goes back to the pool
// (reuse, when the answer was read whole and the connection may be kept) or is closed.
func (c *conn) release(reuse bool) {
	if c.stopAbort != nil {
		if !c.stopAbort() {
			reuse = false // the context ended: abort closed (or is closing) the connection
		}
		c.stopAbort = nil
	}
	if reuse && c.br.Buffered() > 0 {
		reuse = false // bytes past the answer no request asked for: they must not become the next call's answer
	}
	if reuse {
		c.p.put(c, c.t.opts.MaxIdlePerHost, time.Now())
		return
	}
	c.close()
}

// writeRequest writes req's head and body and flushes them. It closes the request's body, as net/http does.
func (c *conn) writeRequest(req *http.Request) (err error) {
	body := req.Body
	if body == http.NoBody {
		body = nil
	}
	if body != nil {
		defer body.Close()
	}
	bw := c.bw
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	bw.WriteString(method)
	bw.WriteByte(' ')
	if req.URL.Opaque != "" {
		bw.WriteString(req.URL.RequestURI())
	} else {
		path := req.URL.EscapedPath()
		if path == "" {
			path = "/"
		}
		bw.WriteString(path)
		if req.URL.RawQuery != "" || req.URL.ForceQuery {
			bw.WriteByte('?')
			bw.WriteString(req.URL.RawQuery)
		}
	}
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(host)
	bw.WriteString("\r\n")
	if _, ok := req.Header["User-Agent"]; !ok {
		bw.WriteString("User-Agent: Go-http-client/1.1\r\n")
	}
	for name, values := range req.Header {
		if ownHeader(name) {
			continue
		}
		for _, v := range values {
			if name == "User-Agent" && v == "" {
				continue
			}
			bw.WriteString(name)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	if req.Close {
		bw.WriteString("Connection: close\r\n")
	}
	switch {
	case body == nil:
		if method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
			bw.WriteString("Content-Length: 0\r\n")
		}
		bw.WriteString("\r\n")
	case req.ContentLength > 0:
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(bw.AvailableBuffer(), req.ContentLength, 10))
		bw.WriteString("\r\n\r\n")
		if err := c.writeBody(body, req.ContentLength); err != nil {
			return err
		}
	default: // a body of unknown length
		bw.WriteString("Transfer-Encoding: chunked\r\n\r\n")
		cw := httputil.NewChunkedWriter(bw)
		if err := copyBody(cw, body, -1); err != nil {
			return err
		}
		if err := cw.Close(); err != nil {
			return err
		}
		bw.WriteString("\r\n")
	}
	return bw.Flush()
}

// ownHeader reports a header the client writes itself, in any letter case: a caller's "content-length" or
// "transfer-encoding" (a key set in the map directly, not made canonical by Header.Set) must never frame the
// request a second way.
func ownHeader(name string) bool {
	switch len(name) {
	case len("Host"):
		return strings.EqualFold(name, "Host")
	case len("Trailer"):
		return strings.EqualFold(name, "Trailer")
	case len("Connection"):
		return strings.EqualFold(name, "Connection")
	case len("Content-Length"):
		return strings.EqualFold(name, "Content-Length")
	case len("Transfer-Encoding"):
		return strings.EqualFold(name, "Transfer-Encoding")
	}
	return false
}

// writeBody writes exactly n bytes of body. A body that writes itself (bytes.Reader, and net/http's NopCloser
// of one, which is what http.NewRequest makes of it) does so in one call, which bufio passes straight to the
// socket past its buffer; c.exact refuses a byte beyond n, so that a body longer than its ContentLength can never
// write into the next request.
func (c *conn) writeBody(body io.Reader, n int64) error {
	c.exact = exactWriter{w: c.bw, left: n}
	var err error
	if wt, ok := body.(io.WriterTo); ok {
		_, err = wt.WriteTo(&c.exact)
	} else {
		err = copyBody(&c.exact, body, n)
	}
	if err != nil {
		return err
	}
	if c.exact.left != 0 {
		return &bodyLengthError{fmt.Sprintf("httpclient: request body has %d bytes, fewer than its ContentLength of %d", n-c.exact.left, n)}
	}
	return nil
}

// exactWriter passes on at most left bytes and refuses a write beyond them whole.
type exactWriter struct {
	w    *bufio.Writer
	left int64
}

var errBodyTooLong error = &bodyLengthError{"httpclient: request body is longer than its ContentLength"}

// bodyLengthError is a request body that does not match its ContentLength: the connection has part of a request
// on it and no answer to wait for.
type bodyLengthError struct{ msg string }

func (e *bodyLengthError) Error() string { return e.msg }

func (e *exactWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > e.left {
		return 0, errBodyTooLong
	}
	e.left -= int64(len(p))
	return e.w.Write(p)
}

// copyBuffers are the 32 KiB buffers bodies of other kinds are copied through.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// copyBody copies src to w through a pooled buffer, at most limit bytes when limit >= 0, without calling w's
// ReadFrom: bufio.Writer's would copy through its own 4 KiB buffer, one write a 4 KiB.
func copyBody(w io.Writer, src io.Reader, limit int64) error {
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	buf := *bp
	for limit != 0 {
		chunk := buf
		if limit > 0 && int64(len(chunk)) > limit {
			chunk = chunk[:limit]
		}
		n, err := src.Read(chunk)
		if n > 0 {
			if _, werr := w.Write(chunk[:n]); werr != nil {
				return werr
			}
			if limit > 0 {
				limit -= int64(n)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// readResponse reads the answer's head (skipping 1xx answers) and sets up its body. The 1xx answers and the
// final head share Options.MaxHeaderBytes, so that an endless run of 100 Continue ends.
func (c *conn) readResponse(req *http.Request) (*http.Response, error) {
	budget := c.t.opts.MaxHeaderBytes
	for first := true; ; first = false {
		head, used, err := c.readHead(first, budget)
		if err != nil {
			return nil, err
		}
		budget -= used
		a, err := parseHead(head)
		if err != nil {
			return nil, err
		}
		resp := &a.resp
		if resp.StatusCode >= 100 && resp.StatusCode < 200 {
			if resp.StatusCode == http.StatusSwitchingProtocols {
				return nil, errors.New("httpclient: unexpected 101 Switching Protocols")
			}
			continue // 100 Continue, 103 Early Hints: the answer follows
		}
		resp.Request = req
		return resp, c.setBody(req, a)
	}
}

// readHead reads the status line and headers up to the empty line, at most limit bytes, into c.head; used is
// the bytes read, the empty line included. first marks the first head of a call, whose absence (EOF before any
// byte) is errNoAnswer.
func (c *conn) readHead(first bool, limit int) ([]byte, int, error) {
	head := c.head[:0]
	lineStart := 0
	for {
		line, err := c.br.ReadSlice('\n')
		head = append(head, line...)
		if len(head) > limit {
			return nil, 0, fmt.Errorf("httpclient: answer's headers exceed %d bytes", c.t.opts.MaxHeaderBytes)
		}
		if err == bufio.ErrBufferFull {
			continue // the same line goes on
		}
		if err != nil {
			if first && len(head) == 0 && (err == io.EOF || isReset(err)) {
				return nil, 0, errNoAnswer
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, 0, err
		}
		l := head[lineStart:]
		if len(l) <= 2 && (len(l) == 1 || l[0] == '\r') {
			if lineStart == 0 {
				return nil, 0, errors.New("httpclient: empty line where an answer's status line was expected")
			}
			c.head = nil // a large head's buffer is not kept with the idle connection; parseHead copies it anyway
			if cap(head) <= maxKeptHead {
				c.head = head
			}
			return head[:lineStart], len(head), nil
		}
		lineStart = len(head)
	}
}

// isReset reports a connection the peer reset, which a server that closed an idle connection may cause.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET)
}

// answer is an answer with its header values and its body, in one allocation.
type answer struct {
	resp   http.Response
	values [12]string // the header values, when there are at most 12
	body   body
}

// parseHead parses a status line and headers. The head is copied into one string, which every header value
// and the status text are slices of: one allocation for the text, one for the answer and one for the map.
func parseHead(raw []byte) (*answer, error) {
	s := string(raw)
	nl := strings.IndexByte(s, '\n')
	status := strings.TrimSuffix(s[:nl], "\r")
	rest := s[nl+1:]
	if len(status) < 12 || !strings.HasPrefix(status, "HTTP/1.") || status[12-4] != ' ' ||
		(len(status) > 12 && status[12] != ' ') {
		return nil, fmt.Errorf("httpclient: malformed status line %q", cut(status))
	}
	minor := status[7]
	if minor != '0' && minor != '1' {
		return nil, fmt.Errorf("httpclient: unsupported protocol %q", status[:8])
	}
	code := 0
	for _, d := range status[9:12] {
		if d < '0' || d > '9' {
			return nil, fmt.Errorf("httpclient: malformed status code in %q", cut(status))
		}
		code = code*10 + int(d-'0')
	}
	if code < 100 {
		return nil, fmt.Errorf("httpclient: malformed status code in %q", cut(status))
	}
	a := &answer{resp: http.Response{
		Status:     status[9:],
		StatusCode: code,
		Proto:      status[:8],
		ProtoMajor: 1,
		ProtoMinor: int(minor - '0'),
	}}
	lines := strings.Count(rest, "\n")
	header := make(http.Header, lines)
	values := a.values[:]
	if lines > len(values) {
		values = make([]string, lines)
	}
	var last string
	for len(rest) > 0 {
		nl := strings.IndexByte(rest, '\n')
		line := strings.TrimSuffix(rest[:nl], "\r")
		rest = rest[nl+1:]
		if line[0] == ' ' || line[0] == '\t' { // obsolete line folding: a continuation of the previous value
			if last == "" {
				return nil, fmt.Errorf("httpclient: malformed header line %q", cut(line))
			}
			vs := header[last]
			vs[len(vs)-1] += " " + strings.Trim(line, " \t")
			continue
		}
		colon := strings.IndexByte(line, ':')
		if colon <= 0 || !validToken(line[:colon]) {
			return nil, fmt.Errorf("httpclient: malformed header line %q", cut(line))
		}
		name := http.CanonicalHeaderKey(line[:colon])
		value := strings.Trim(line[colon+1:], " \t")
		if vs, ok := header[name]; ok {
			header[name] = append(vs, value)
		} else {
			values[0] = value
			header[name] = values[:1:1]
			values = values[1:]
		}
		last = name
	}
	a.resp.Header = header
	return a, nil
}

// cut shortens a line quoted in an error.
func cut(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// setBody gives resp its body as the head says: none, a length, chunks, or up to the end of the connection.
// An answer without a body releases the connection at once.
func (c *conn) setBody(req *http.Request, a *answer) error {
	resp := &a.resp
	h := resp.Header
	// HTTP/1.1 keeps a connection unless either side says close; HTTP/1.0 only when the server says keep-alive.
	keepAlive := resp.ProtoMinor == 1
	for _, v := range h["Connection"] {
		if hasToken(v, "close") {
			keepAlive = false
			resp.Close = true
			break
		}
		if hasToken(v, "keep-alive") {
			keepAlive = true
		}
	}
	if req.Close || c.writeFailed {
		keepAlive = false
	}

	chunked := false
	if te, ok := h["Transfer-Encoding"]; ok {
		if len(te) != 1 || !strings.EqualFold(te[0], "chunked") {
			return fmt.Errorf("httpclient: unsupported Transfer-Encoding %q", te)
		}
		chunked = true
		resp.TransferEncoding = []string{"chunked"}
		delete(h, "Transfer-Encoding")
		if _, both := h["Content-Length"]; both {
			delete(h, "Content-Length") // RFC 9112 §6.3: the chunks decide; such an answer is suspect, so no reuse
			keepAlive = false
		}
	}
	length := int64(-1)
	if cl, ok := h["Content-Length"]; ok && !chunked {
		for _, v := range cl {
			n, err := strconv.ParseUint(v, 10, 63) // digits only: no sign, as RFC 9110 §8.6 says
			if err != nil || (length >= 0 && int64(n) != length) {
				return fmt.Errorf("httpclient: invalid Content-Length %q", cl)
			}
			length = int64(n)
		}
	}
	resp.ContentLength = length

	noBody := req.Method == http.MethodHead || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified
	switch {
	case noBody, length == 0:
		if !noBody || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified {
			resp.ContentLength = 0
		}
		resp.Body = http.NoBody
		c.release(keepAlive)
	case chunked:
		a.body = body{c: c, chunks: httputil.NewChunkedReader(c.br), keepAlive: keepAlive, ctx: req.Context()}
		resp.Body = &a.body
	case length > 0:
		a.body = body{c: c, remaining: length, keepAlive: keepAlive, ctx: req.Context()}
		resp.Body = &a.body
	default: // delimited by the end of the connection
		resp.Close = true
		a.body = body{c: c, remaining: -1, ctx: req.Context()}
		resp.Body = &a.body
	}
	return nil
}

// hasToken reports whether a comma-separated header value holds token, case-insensitively.
func hasToken(v, token string) bool {
	for part := range strings.SplitSeq(v, ",") {
		if strings.EqualFold(strings.TrimSpace(part), token) {
			return true
		}
	}
	return false
}

// body is an answer's body, read from its connection's buffer as the caller reads. Once read to its end or
// closed it lets go of the connection, and later calls see only its final error. Close may be called while a
// Read is under way on another goroutine (as net/http allows, to end a stream): it closes the connection, which
// ends that Read, and the Read lets go of it.
type body struct {
	ctx       context.Context
	chunks    io.Reader // the chunked decoder, for chunked answers
	remaining int64     // bytes left of a Content-Length answer; -1: up to the end of the connection
	keepAlive bool

	mu      sync.Mutex
	c       *conn // nil once released
	err     error // what reads return once released
	reading bool  // a Read is under way
	closing bool  // Close was called during that Read
}

var errBodyClosed = errors.New("httpclient: read on closed response body")

func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	c := b.c
	if c == nil || len(p) == 0 {
		err := b.err
		b.mu.Unlock()
		return 0, err
	}
	b.reading = true
	b.mu.Unlock()

	n, reuse, err := b.read(c, p)

	b.mu.Lock()
	defer b.mu.Unlock()
	b.reading = false
	switch {
	case b.closing: // Close closed the connection under this Read
		b.end(false, errBodyClosed)
		return n, errBodyClosed
	case err == nil:
		return n, nil
	case err != io.EOF && c.aborted.Load():
		if cerr := b.ctx.Err(); cerr != nil {
			err = cerr // the context ended the read: say so, not "use of closed connection"
		}
	}
	b.end(reuse, err)
	if err == io.EOF && n > 0 {
		return n, nil // the next Read says io.EOF
	}
	return n, err
}

// read reads from c as the body's framing says. io.EOF is the body's whole end, after which the connection
// may be reused when reuse is true; any other error ends it too.
func (b *body) read(c *conn, p []byte) (n int, reuse bool, err error) {
	switch {
	case b.chunks != nil:
		n, err = b.chunks.Read(p)
		if err == io.EOF {
			if terr := c.readTrailer(); terr != nil {
				return n, false, terr
			}
			return n, b.keepAlive, io.EOF
		}
	case b.remaining > 0:
		if int64(len(p)) > b.remaining {
			p = p[:b.remaining]
		}
		n, err = c.br.Read(p)
		b.remaining -= int64(n)
		if b.remaining == 0 {
			return n, b.keepAlive, io.EOF
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
	default: // up to the end of the connection
		n, err = c.br.Read(p)
	}
	return n, false, err
}

// Close lets go of the connection; one whose answer was not read to its end is closed, not reused.
func (b *body) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.c == nil || b.closing:
	case b.reading:
		b.closing = true
		b.c.close() // ends the Read under way, which then lets go of the connection
	default:
		b.end(false, errBodyClosed)
	}
	return nil
}

// end releases the connection once, and keeps err for later reads. b.mu is held.
func (b *body) end(reuse bool, err error) {
	c := b.c
	b.c, b.err = nil, err
	c.release(reuse)
}

// readTrailer reads what follows the last chunk: trailer fields, which are dropped, up to the empty line.
func (c *conn) readTrailer() error {
	for size := 0; ; {
		line, err := c.br.ReadSlice('\n')
		size += len(line)
		if err == bufio.ErrBufferFull || size > c.t.opts.MaxHeaderBytes {
			return errors.New("httpclient: answer's trailer too long")
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if len(line) == 1 || (len(line) == 2 && line[0] == '\r') {
			return nil
		}
	}
}

// validateRequest refuses, before any connection is used, a request whose head would not be valid HTTP/1.1 or
// could end early and start another (a CR or LF in a header value, a space in the method or path).
func validateRequest(req *http.Request) error {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	if !validToken(method) {
		return fmt.Errorf("httpclient: invalid method %q", method)
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if host == "" || !validHeaderValue(host) || strings.ContainsAny(host, " /") {
		return fmt.Errorf("httpclient: invalid Host %q", host)
	}
	if req.URL.Opaque != "" {
		if uri := req.URL.RequestURI(); !validPath(uri) {
			return fmt.Errorf("httpclient: invalid request path %q", uri)
		}
	} else if !validPath(req.URL.EscapedPath()) || !validPath(req.URL.RawQuery) {
		return fmt.Errorf("httpclient: invalid request path %q", req.URL.EscapedPath())
	}
	for name, values := range req.Header {
		if !validToken(name) {
			return fmt.Errorf("httpclient: invalid header name %q", name)
		}
		for _, v := range values {
			if !validHeaderValue(v) {
				return fmt.Errorf("httpclient: invalid value of header %q", name)
			}
		}
	}
	return nil
}

// validToken reports an RFC 9110 token: a method or a header name.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tokenChar[s[i]] {
			return false
		}
	}
	return true
}

var tokenChar = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// validHeaderValue refuses control characters but tab, which would let a value end the header or the head.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// validPath refuses the bytes that would end a request line: spaces and control characters.
func validPath(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}
