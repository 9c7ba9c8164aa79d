package httpclient

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/netguard"
)

// countingServer is an httptest server that counts the connections it accepted.
type countingServer struct {
	*httptest.Server
	conns atomic.Int64
}

func newCountingServer(t *testing.T, h http.HandlerFunc) *countingServer {
	t.Helper()
	s := &countingServer{Server: httptest.NewUnstartedServer(h)}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func newTransport(t *testing.T, opts Options) *Transport {
	t.Helper()
	if opts.Proxy == nil {
		opts.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
	}
	tr := New(opts)
	t.Cleanup(func() { tr.Close() })
	return tr
}

func do(t *testing.T, tr http.RoundTripper, method, url string, body io.Reader) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return resp, string(b)
}

func TestContentLengthAnswersReuseTheConnection(t *testing.T) {
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		fmt.Fprintf(w, `{"method":%q,"path":%q,"query":%q,"body":%q,"ua":%q,"len":%d}`, r.Method, r.URL.Path, r.URL.RawQuery, b, r.UserAgent(), r.ContentLength)
	})
	tr := newTransport(t, Options{})
	for i := range 5 {
		resp, body := do(t, tr, "POST", srv.URL+"/v1/chat/completions?x=1", strings.NewReader(`{"i":1}`))
		want := `{"method":"POST","path":"/v1/chat/completions","query":"x=1","body":"{\"i\":1}","ua":"Go-http-client/1.1","len":7}`
		if resp.StatusCode != 200 || body != want {
			t.Fatalf("call %d: %d %s, want 200 %s", i, resp.StatusCode, body, want)
		}
		if got := resp.Header.Get("Content-Type"); got != "application/json" {
			t.Fatalf("Content-Type %q", got)
		}
		if got := resp.Header.Values("X-Multi"); len(got) != 2 || got[0] != "a" || got[1] != "b" {
			t.Fatalf("X-Multi %q", got)
		}
		if resp.ContentLength != int64(len(want)) || resp.Status != "200 OK" || resp.ProtoMinor != 1 {
			t.Fatalf("ContentLength %d Status %q Proto %q", resp.ContentLength, resp.Status, resp.Proto)
		}
	}
	if n := srv.conns.Load(); n != 1 {
		t.Fatalf("%d connections for 5 sequential calls, want 1", n)
	}
}

func TestBodiesOfEveryKindReachTheServer(t *testing.T) {
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%d %v %d", len(b), r.TransferEncoding, bytes.Count(b, []byte("x")))
	})
	tr := newTransport(t, Options{})
	big := bytes.Repeat([]byte("x"), 1<<20)
	if _, body := do(t, tr, "POST", srv.URL, bytes.NewReader(big)); body != "1048576 [] 1048576" {
		t.Fatalf("bytes.Reader body: %s", body)
	}
	// A reader of unknown length goes chunked.
	if _, body := do(t, tr, "POST", srv.URL, io.MultiReader(bytes.NewReader(big[:70000]), strings.NewReader("xx"))); body != "70002 [chunked] 70002" {
		t.Fatalf("chunked body: %s", body)
	}
	// A declared length with another kind of reader.
	req, _ := http.NewRequest("POST", srv.URL, io.NopCloser(bytes.NewReader(big[:40000])))
	req.ContentLength = 40000
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "40000 [] 40000" {
		t.Fatalf("sized reader body: %s", b)
	}
	// A body shorter than its declared length is an error, not a hang.
	req, _ = http.NewRequest("POST", srv.URL, io.NopCloser(strings.NewReader("xx")))
	req.ContentLength = 10
	if _, err := tr.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "fewer than its ContentLength") {
		t.Fatalf("short body: %v", err)
	}
}

func TestChunkedAnswerIsStreamedNotBuffered(t *testing.T) {
	next := make(chan struct{})
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		<-next
		fmt.Fprint(w, "data: two\n\n")
		fmt.Fprint(w, "data: three\n\n")
	})
	tr := newTransport(t, Options{})
	req, _ := http.NewRequest("GET", srv.URL, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ContentLength != -1 || len(resp.TransferEncoding) != 1 || resp.Header.Get("Transfer-Encoding") != "" {
		t.Fatalf("ContentLength %d TransferEncoding %v", resp.ContentLength, resp.TransferEncoding)
	}
	buf := make([]byte, 1024)
	n, err := resp.Body.Read(buf)
	if err != nil || string(buf[:n]) != "data: one\n\n" {
		t.Fatalf("first read %q %v: the first event must arrive before the server sends the next", buf[:n], err)
	}
	close(next)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != "data: two\n\ndata: three\n\n" {
		t.Fatalf("rest %q %v", rest, err)
	}
	resp.Body.Close()
	do(t, tr, "GET", srv.URL, nil) // the connection went back to the pool
	if n := srv.conns.Load(); n != 1 {
		t.Fatalf("%d connections, want 1: a stream read to its end releases its connection", n)
	}
}

// rawServer serves each connection with handle, on 127.0.0.1.
func rawServer(t *testing.T, handle func(c net.Conn, br *bufio.Reader)) (url string, accepted *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = new(atomic.Int64)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handle(c, bufio.NewReader(c))
			}()
		}
	}()
	return "http://" + ln.Addr().String(), accepted
}

// readRequest reads one request with its body, or returns false when the connection ended.
func readRequest(br *bufio.Reader) (*http.Request, bool) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, false
	}
	io.Copy(io.Discard, req.Body)
	return req, true
}

func TestRawAnswers(t *testing.T) {
	cases := []struct {
		name, answer, want string
		reuse              bool
	}{
		{"close-delimited HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end", "until the end", false},
		{"1xx skipped", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "ok", true},
		{"trailers", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Trailer: 1\r\n\r\n", "ok", true},
		{"connection close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", "ok", false},
		{"HTTP/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", "ok", true},
		{"lower-case names, folded value", "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-folded: a\r\n  b\r\n\r\nok", "ok", true},
		{"no reason phrase", "HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok", "ok", true},
		{"204", "HTTP/1.1 204 No Content\r\n\r\n", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url, accepted := rawServer(t, func(c net.Conn, br *bufio.Reader) {
				for {
					if _, ok := readRequest(br); !ok {
						return
					}
					io.WriteString(c, tc.answer)
					if strings.HasPrefix(tc.name, "close-delimited") {
						return // the end of the connection ends the body
					}
				}
			})
			tr := newTransport(t, Options{})
			for range 2 {
				resp, body := do(t, tr, "GET", url, nil)
				if body != tc.want || resp.StatusCode/100 != 2 {
					t.Fatalf("%d %q, want %q", resp.StatusCode, body, tc.want)
				}
				if tc.name == "lower-case names, folded value" && resp.Header.Get("X-Folded") != "a b" {
					t.Fatalf("folded header %q", resp.Header.Get("X-Folded"))
				}
			}
			want := int64(1)
			if !tc.reuse {
				want = 2
			}
			if n := accepted.Load(); n != want {
				t.Fatalf("%d connections for two calls, want %d", n, want)
			}
		})
	}
}

func TestHeadHasNoBody(t *testing.T) {
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
	})
	tr := newTransport(t, Options{})
	for range 2 {
		resp, body := do(t, tr, "HEAD", srv.URL, nil)
		if body != "" || resp.ContentLength != 100 || resp.Body != http.NoBody {
			t.Fatalf("HEAD: body %q ContentLength %d", body, resp.ContentLength)
		}
	}
	if n := srv.conns.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}

func TestMalformedAnswersAreErrors(t *testing.T) {
	cases := map[string]string{
		"status line":            "HTTP/2 200 OK\r\n\r\n",
		"status code":            "HTTP/1.1 2x0 OK\r\n\r\n",
		"header without colon":   "HTTP/1.1 200 OK\r\nNoColon\r\n\r\n",
		"space before colon":     "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
		"two lengths":            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
		"negative length":        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"unknown coding":         "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		"101":                    "HTTP/1.1 101 Switching Protocols\r\n\r\n",
		"huge head":              "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", 5000) + "\r\n\r\n",
		"ends inside the head":   "HTTP/1.1 200 OK\r\nContent-Le",
		"empty line first":       "\r\n",
		"folded first line":      "HTTP/1.1 200 OK\r\n folded\r\n\r\n",
		"body shorter than said": "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
		"broken chunks":          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n",
	}
	for name, answer := range cases {
		t.Run(name, func(t *testing.T) {
			url, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
				if _, ok := readRequest(br); ok {
					io.WriteString(c, answer)
				}
			})
			tr := newTransport(t, Options{MaxHeaderBytes: 4096})
			req, _ := http.NewRequest("GET", url, nil)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			if err == nil {
				t.Fatalf("no error for %q", answer)
			}
		})
	}
}

func TestBothLengthAndChunksTrustTheChunksAndDropTheConnection(t *testing.T) {
	url, accepted := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, ok := readRequest(br); !ok {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")
		}
	})
	tr := newTransport(t, Options{})
	for range 2 {
		if resp, body := do(t, tr, "GET", url, nil); body != "ok" || resp.ContentLength != -1 {
			t.Fatalf("body %q ContentLength %d", body, resp.ContentLength)
		}
	}
	if n := accepted.Load(); n != 2 {
		t.Fatalf("%d connections, want 2: an answer with both framings is not trusted with the next call", n)
	}
}

func TestInvalidRequestHeadersAreRefusedBeforeSending(t *testing.T) {
	url, accepted := rawServer(t, func(c net.Conn, br *bufio.Reader) { readRequest(br) })
	tr := newTransport(t, Options{})
	for name, set := range map[string]func(*http.Request){
		"CRLF in a value":   func(r *http.Request) { r.Header["X-A"] = []string{"a\r\nX-Injected: 1"} },
		"NUL in a value":    func(r *http.Request) { r.Header["X-A"] = []string{"a\x00"} },
		"space in a name":   func(r *http.Request) { r.Header["X A"] = []string{"a"} },
		"CRLF in the host":  func(r *http.Request) { r.Host = "a\r\nb" },
		"space in a method": func(r *http.Request) { r.Method = "GET /x" },
	} {
		req, _ := http.NewRequest("GET", url+"/", nil)
		set(req)
		if _, err := tr.RoundTrip(req); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	req, _ := http.NewRequest("GET", url+"/", nil)
	req.URL.Path = "/a b"
	req.URL.RawPath = ""
	// A path with a space is escaped by url.URL, never written raw.
	if req.URL.EscapedPath() != "/a%20b" {
		t.Fatalf("escaped path %q", req.URL.EscapedPath())
	}
	req, _ = http.NewRequest("GET", url+"/", nil)
	req.URL.RawQuery = "a b"
	if _, err := tr.RoundTrip(req); err == nil {
		t.Error("space in the query: no error")
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("%d connections made for requests refused before sending", n)
	}
}

func TestDeadIdleConnectionIsRetriedWhenTheBodyCanBeReplayed(t *testing.T) {
	// The server answers one call per connection but says nothing about closing it, and closes it when the next
	// request arrives: the peek before reuse sees it open, and the call finds it dead before the answer began
	// (as when a server closes an idle connection just as a request is sent).
	url, accepted := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, ok := readRequest(br); ok {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
		readRequest(br)
	})
	tr := newTransport(t, Options{})
	do(t, tr, "POST", url, strings.NewReader("first"))
	if _, body := do(t, tr, "POST", url, strings.NewReader("replayable")); body != "ok" {
		t.Fatalf("retried call: %q", body)
	}
	if n := accepted.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}

	// A body that cannot be replayed is not sent twice: the call fails.
	req, _ := http.NewRequest("POST", url, io.NopCloser(strings.NewReader("once")))
	req.ContentLength = 4
	if _, err := tr.RoundTrip(req); err == nil {
		t.Fatal("a call on a dead connection with a body that cannot be replayed succeeded")
	}
	if n := accepted.Load(); n != 2 {
		t.Fatalf("%d connections, want 2: the body that cannot be replayed was sent again", n)
	}
}

// waitClosedByServer waits until the server has closed the transport's one idle connection: a read on the
// socket sees the end.
func waitClosedByServer(t *testing.T, tr *Transport) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		tr.mu.RLock()
		var idle []*conn
		for _, p := range tr.pools {
			p.mu.Lock()
			idle = append(idle, p.idle...)
			p.mu.Unlock()
		}
		tr.mu.RUnlock()
		if len(idle) == 1 && !stillOpen(idle[0].raw) {
			return
		}
	}
	t.Fatal("the server did not close the idle connection")
}

func TestIdleConnectionIsPeekedAtBeforeReuse(t *testing.T) {
	url, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, ok := readRequest(br); ok {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	tr := newTransport(t, Options{})
	do(t, tr, "GET", url, nil)
	waitClosedByServer(t, tr)
	p := tr.pool(poolKey{"http", strings.TrimPrefix(url, "http://")})
	// Idle for a second or more: the dead connection is seen by the peek, closed, and not handed out.
	if c := p.take(time.Now().Add(2 * time.Second)); c != nil {
		t.Fatal("a connection the server closed was handed out")
	}
	if p.open != 0 {
		t.Fatalf("%d connections still open", p.open)
	}
}

func TestStillOpen(t *testing.T) {
	server, client := tcpPair(t)
	if !stillOpen(client) {
		t.Fatal("an open idle connection reads as closed")
	}
	server.Write([]byte("x"))
	waitFor(t, func() bool { return !stillOpen(client) }, "unexpected bytes waiting")
	server2, client2 := tcpPair(t)
	server2.Close()
	waitFor(t, func() bool { return !stillOpen(client2) }, "a connection the peer closed")
}

func tcpPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return server, client
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("not seen: %s", what)
}

func TestCancellationEndsTheCallAndClosesTheConnection(t *testing.T) {
	serverSawEnd := make(chan struct{}, 2)
	url, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		req, ok := readRequest(br)
		if !ok {
			return
		}
		if req.URL.Path == "/stream" {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nfirst\n\r\n")
		}
		io.Copy(io.Discard, br) // until the client closes
		serverSawEnd <- struct{}{}
	})
	tr := newTransport(t, Options{})

	// Waiting for the answer's head.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/hang", nil)
	errc := make(chan error, 1)
	go func() { _, err := tr.RoundTrip(req); errc <- err }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled while waiting: %v", err)
	}
	<-serverSawEnd

	// Reading a stream's body.
	ctx, cancel = context.WithCancel(context.Background())
	req, _ = http.NewRequestWithContext(ctx, "GET", url+"/stream", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, err := resp.Body.Read(buf); err != nil || string(buf[:n]) != "first\n" {
		t.Fatalf("first read %q %v", buf[:n], err)
	}
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if _, err := resp.Body.Read(buf); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled while reading: %v", err)
	}
	resp.Body.Close()
	<-serverSawEnd
	// An attempt's timeout is a context deadline: it ends the call the same way.
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, "GET", url+"/hang", nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timed out: %v", err)
	}
}

func TestPolicyRefusesAddressesAtDialTime(t *testing.T) {
	tr := newTransport(t, Options{})
	req, _ := http.NewRequest("GET", "http://10.0.0.1:9/", nil)
	_, err := tr.RoundTrip(req)
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Code != netguard.CodeHostNotAllowed {
		t.Fatalf("private address: %v, want %s", err, netguard.CodeHostNotAllowed)
	}
	// A name is resolved by the dialer and its address checked.
	tr = newTransport(t, Options{Resolver: fixedResolver{netip.MustParseAddr("169.254.169.254")}})
	req, _ = http.NewRequest("GET", "http://rebinding.example:80/", nil)
	if _, err := tr.RoundTrip(req); !errors.As(err, &ge) || ge.Code != netguard.CodeHostNotAllowed {
		t.Fatalf("name resolving to the metadata address: %v", err)
	}
}

type fixedResolver []netip.Addr

func (r fixedResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	if len(r) == 0 {
		return nil, errors.New("no such host")
	}
	return r, nil
}

func TestTLSIsVerified(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %v", r.Proto, r.TLS != nil)
	}))
	t.Cleanup(srv.Close)
	tr := newTransport(t, Options{})
	req, _ := http.NewRequest("GET", srv.URL, nil)
	if _, err := tr.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a self-signed certificate was accepted: %v", err)
	}
	tr = newTransport(t, Options{TLSConfig: &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}})
	for range 2 {
		if _, body := do(t, tr, "GET", srv.URL, nil); body != "HTTP/1.1 true" {
			t.Fatalf("body %q", body)
		}
	}
}

func TestHostRefusingHTTP1IsServedOverHTTP2(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	// Refuse clients that do not offer h2, with the no_application_protocol alert an HTTP/2-only server sends.
	base := srv.TLS
	srv.TLS.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		for _, p := range hello.SupportedProtos {
			if p == "h2" {
				return nil, nil
			}
		}
		c := base.Clone()
		c.GetConfigForClient = nil
		c.NextProtos = []string{"h2-only"}
		return c, nil
	}
	roots := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	tr := newTransport(t, Options{TLSConfig: &tls.Config{RootCAs: roots}})
	for range 2 {
		if resp, body := do(t, tr, "GET", srv.URL, nil); body != "HTTP/2.0" || resp.ProtoMajor != 2 {
			t.Fatalf("body %q", body)
		}
	}
}

func TestProxyFromOptions(t *testing.T) {
	var proxied atomic.Value
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Store(r.URL.String()) // a forward proxy receives the absolute URL
		fmt.Fprint(w, "via proxy")
	}))
	t.Cleanup(proxy.Close)
	proxyURL, _ := url.Parse(proxy.URL)
	tr := New(Options{Proxy: http.ProxyURL(proxyURL), Resolver: fixedResolver{}})
	t.Cleanup(func() { tr.Close() })
	// A name the gateway cannot resolve is the proxy's to resolve.
	if _, body := do(t, tr, "GET", "http://api.example.com/v1/models", nil); body != "via proxy" || proxied.Load() != "http://api.example.com/v1/models" {
		t.Fatalf("body %q, proxy saw %v", body, proxied.Load())
	}
	// An address the policy refuses never reaches the proxy.
	proxied.Store("")
	req, _ := http.NewRequest("GET", "http://169.254.169.254/latest/meta-data", nil)
	_, err := tr.RoundTrip(req)
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Code != netguard.CodeHostNotAllowed || proxied.Load() != "" {
		t.Fatalf("metadata address through the proxy: %v, proxy saw %v", err, proxied.Load())
	}
}

func TestConcurrentCalls(t *testing.T) {
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	})
	tr := newTransport(t, Options{MaxIdlePerHost: 4})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				want := fmt.Sprintf("%d-%d", g, i)
				req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(want))
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != want {
					t.Errorf("got %q want %q", b, want)
				}
			}
		}()
	}
	wg.Wait()
	p := tr.pool(poolKey{"http", strings.TrimPrefix(srv.URL, "http://")})
	p.mu.Lock()
	idle := len(p.idle)
	p.mu.Unlock()
	if idle > 4 {
		t.Fatalf("%d idle connections kept, more than MaxIdlePerHost", idle)
	}
}

func TestSweepClosesIdleConnectionsAndForgetsPools(t *testing.T) {
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {})
	tr := newTransport(t, Options{IdleTimeout: time.Minute})
	do(t, tr, "GET", srv.URL, nil)
	if left := tr.sweep(time.Now()); left != 1 {
		t.Fatalf("%d pools after a sweep of fresh connections, want 1", left)
	}
	if left := tr.sweep(time.Now().Add(2 * time.Minute)); left != 0 {
		t.Fatalf("%d pools after a sweep past the idle timeout, want 0", left)
	}
	waitFor(t, func() bool { return srv.Config.ConnState != nil && countIdle(tr) == 0 }, "idle connections closed")
}

func countIdle(tr *Transport) int {
	tr.mu.RLock()
	defer tr.mu.RUnlock()
	n := 0
	for _, p := range tr.pools {
		p.mu.Lock()
		n += len(p.idle)
		p.mu.Unlock()
	}
	return n
}

func TestClosingAnUnreadBodyDropsTheConnection(t *testing.T) {
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("x"), 100000))
	})
	tr := newTransport(t, Options{})
	req, _ := http.NewRequest("GET", srv.URL, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := resp.Body.Read(make([]byte, 1)); err == nil {
		t.Fatal("read after close succeeded")
	}
	do(t, tr, "GET", srv.URL, nil)
	if n := srv.conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2: a body closed unread must not leave its bytes to the next call", n)
	}
}

func TestAnswerSentBeforeTheBodyWasReadIsReturned(t *testing.T) {
	url, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 9\r\nConnection: close\r\n\r\ntoo large")
		c.(*net.TCPConn).CloseWrite()
		io.Copy(io.Discard, io.LimitReader(c, 1<<20)) // read a little, then stop reading: the client's write stalls
		time.Sleep(300 * time.Millisecond)
	})
	tr := newTransport(t, Options{})
	req, _ := http.NewRequest("POST", url, bytes.NewReader(make([]byte, 64<<20)))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("the server's early answer was lost: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 413 || string(b) != "too large" {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
}

func TestBodyLongerThanItsContentLengthIsRefused(t *testing.T) {
	url, accepted := rawServer(t, func(c net.Conn, br *bufio.Reader) { readRequest(br) })
	tr := newTransport(t, Options{})
	// net/http's NewRequest wraps a bytes.Reader in a NopCloser that writes itself: it must not write past 5.
	req, _ := http.NewRequest("POST", url, bytes.NewReader([]byte("hello, and a smuggled request")))
	req.ContentLength = 5
	if _, err := tr.RoundTrip(req); !errors.Is(err, errBodyTooLong) {
		t.Fatalf("a body longer than its ContentLength: %v", err)
	}
	_ = accepted
}
