package httpclient

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Tests of an upstream that is broken or hostile: it frames its answers badly, sends more than was asked, floods,
// or stalls. None of it may reach the next call on a connection, nor hold a connection or a goroutine.

func TestBytesAfterAnAnswerNeverBecomeTheNextAnswer(t *testing.T) {
	const smuggled = "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled"
	cases := []struct{ name, method, first string }{
		{"a body longer than its length", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" + smuggled},
		{"bytes after the last chunk", "GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n" + smuggled},
		{"a body after 204", "GET", "HTTP/1.1 204 No Content\r\n\r\n" + smuggled},
		{"a body after HEAD's answer", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n" + smuggled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			url, accepted := rawServer(t, func(c net.Conn, br *bufio.Reader) {
				for {
					if _, ok := readRequest(br); !ok {
						return
					}
					answer := "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfresh"
					if calls.Add(1) == 1 {
						answer = tc.first // one write: the extra answer arrives with the first
					}
					io.WriteString(c, answer)
				}
			})
			tr := newTransport(t, Options{})
			do(t, tr, tc.method, url, nil)
			if _, body := do(t, tr, "GET", url, nil); body != "fresh" {
				t.Fatalf("the second call got %q: bytes the server sent after the first answer were read as its answer", body)
			}
			if n := accepted.Load(); n != 2 {
				t.Fatalf("%d connections, want 2: a connection with unasked-for bytes is not reused", n)
			}
		})
	}
}

func TestAnswerSentAfterTheBodyIsNotTheNextAnswer(t *testing.T) {
	// The unasked-for answer arrives a moment after the first (a separate write), while the connection is idle in
	// its pool: well within the second after which an idle connection used to be peeked at.
	sent := make(chan struct{})
	var calls atomic.Int64
	url, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, ok := readRequest(br); !ok {
				return
			}
			if calls.Add(1) == 1 {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				time.Sleep(10 * time.Millisecond)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled")
				close(sent)
				continue
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfresh")
		}
	})
	tr := newTransport(t, Options{})
	do(t, tr, "GET", url, nil)
	<-sent
	waitFor(t, func() bool {
		var idle []*conn
		tr.mu.RLock()
		for _, p := range tr.pools {
			p.mu.Lock()
			idle = append(idle, p.idle...)
			p.mu.Unlock()
		}
		tr.mu.RUnlock()
		return len(idle) == 1 && !stillOpen(idle[0].raw)
	}, "the unasked-for answer waiting on the idle connection")
	if _, body := do(t, tr, "GET", url, nil); body != "fresh" {
		t.Fatalf("the second call got %q, the answer the server sent while the connection was idle", body)
	}
}

func TestInformationalFloodIsBounded(t *testing.T) {
	url, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, ok := readRequest(br); !ok {
			return
		}
		for {
			if _, err := io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
				return
			}
		}
	})
	tr := newTransport(t, Options{MaxHeaderBytes: 4096})
	// No deadline: the bound must be the client's own, not the caller's patience. The test's own guard is a
	// generous timeout that only a hang reaches.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	_, err := tr.RoundTrip(req)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "exceed") {
		t.Fatalf("an endless run of 100 Continue: %v, want the head's bound", err)
	}
}

func TestFramingHeadersOfTheCallerInAnyCaseAreNotSent(t *testing.T) {
	heads := make(chan string, 1)
	url, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		var head strings.Builder
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			head.WriteString(line)
			if line == "\r\n" {
				break
			}
		}
		heads <- head.String()
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	})
	tr := newTransport(t, Options{})
	req, _ := http.NewRequest("POST", url, strings.NewReader("ok"))
	// Set in the map directly, in lower case: Header.Set would have made them canonical.
	req.Header["content-length"] = []string{"40"}
	req.Header["transfer-encoding"] = []string{"chunked"}
	req.Header["host"] = []string{"other.example"}
	req.Header["connection"] = []string{"keep-alive"}
	req.Header["trailer"] = []string{"X-T"}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	head := strings.ToLower(<-heads)
	for name, want := range map[string]int{"content-length:": 1, "transfer-encoding:": 0, "host:": 1, "connection:": 0, "trailer:": 0} {
		if got := strings.Count(head, "\n"+name); got != want {
			t.Errorf("%d %q lines, want %d, in\n%s", got, name, want, head)
		}
	}
	if !strings.Contains(head, "content-length: 2\r\n") || strings.Contains(head, "other.example") {
		t.Errorf("the request's framing is not the client's own:\n%s", head)
	}
}

func TestContentLengthIsDigitsOnly(t *testing.T) {
	for _, cl := range []string{"+2", "-0", "2 2", "0x2", "2,2"} {
		url, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
			if _, ok := readRequest(br); ok {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+cl+"\r\n\r\nok")
			}
		})
		tr := newTransport(t, Options{})
		req, _ := http.NewRequest("GET", url, nil)
		resp, err := tr.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
			t.Errorf("Content-Length %q accepted", cl)
		}
	}
}

func TestChunkSizesAndExtensionsThatOverflowAreErrors(t *testing.T) {
	for name, chunks := range map[string]string{
		"size past 64 bits":   "10000000000000000\r\nx\r\n",
		"size of 2^63":        "8000000000000000\r\nx\r\n",
		"negative-looking":    "-1\r\nx\r\n",
		"endless extension":   "1;" + strings.Repeat("a", 64<<10) + "\r\nx\r\n0\r\n\r\n",
		"endless trailer":     "0\r\nX-T: " + strings.Repeat("a", 64<<10) + "\r\n\r\n",
		"many tiny trailers":  "0\r\n" + strings.Repeat("X-T: a\r\n", 10000) + "\r\n",
		"overhead of ext.":    strings.Repeat("1;aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\nx\r\n", 20000) + "0\r\n\r\n",
		"chunk longer than s": "1\r\nxy\r\n0\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			url, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
				if _, ok := readRequest(br); ok {
					io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"+chunks)
				}
			})
			tr := newTransport(t, Options{MaxHeaderBytes: 16 << 10})
			req, _ := http.NewRequest("GET", url, nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil {
				t.Fatalf("%d bytes and no error", n)
			}
		})
	}
}

func TestSlowUpstreamIsBoundedByTheCallersDeadline(t *testing.T) {
	url, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, ok := readRequest(br); !ok {
			return
		}
		for _, b := range []byte("HTTP/1.1 200 OK\r\nX-Slow: " + strings.Repeat("a", 10000)) {
			if _, err := c.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
	tr := newTransport(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a head trickling in a byte at a time: %v, want the deadline", err)
	}
	waitFor(t, func() bool { return openConns(tr) == 0 }, "the trickling connection closed")
}

func TestCloseDuringReadEndsTheReadAndReleasesOnce(t *testing.T) {
	url, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, ok := readRequest(br); !ok {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nfirst\n\r\n")
		io.Copy(io.Discard, br) // then nothing more, until the client closes
	})
	tr := newTransport(t, Options{})
	for range 20 {
		// No context: closing the body is the only way to end the read, as with net/http.
		req, _ := http.NewRequest("GET", url, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		if n, err := resp.Body.Read(buf); err != nil || string(buf[:n]) != "first\n" {
			t.Fatalf("first read %q %v", buf[:n], err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := resp.Body.Read(buf)
			done <- err
		}()
		time.Sleep(time.Millisecond)
		resp.Body.Close()
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("a read ended by Close returned no error")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not end a read in progress")
		}
		resp.Body.Close()
		if _, err := resp.Body.Read(buf); err == nil {
			t.Fatal("a read after Close succeeded")
		}
	}
	if n := openConns(tr); n != 0 {
		t.Fatalf("%d connections open after every body was closed", n)
	}
}

// openConns counts the transport's connections not yet closed, idle or in use.
func openConns(tr *Transport) int {
	tr.mu.RLock()
	defer tr.mu.RUnlock()
	n := 0
	for _, p := range tr.pools {
		p.mu.Lock()
		n += p.open
		p.mu.Unlock()
	}
	return n
}

func TestCancellationsAroundTheEndOfTheBodyLeakNothingAndPoolNothingClosed(t *testing.T) {
	var serverOpen atomic.Int64
	url, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		serverOpen.Add(1)
		defer serverOpen.Add(-1)
		for {
			if _, ok := readRequest(br); !ok {
				return
			}
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\nhello, world"); err != nil {
				return
			}
		}
	})
	tr := newTransport(t, Options{MaxIdlePerHost: 8})
	goroutines := runtime.NumGoroutine()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 100 {
				ctx, cancel := context.WithCancel(context.Background())
				req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
				// Cancel at some moment from before the call to after its body's end.
				stop := time.AfterFunc(time.Duration(rng.IntN(300))*time.Microsecond, cancel)
				resp, err := tr.RoundTrip(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					if rng.IntN(2) == 0 {
						cancel()
					}
					resp.Body.Close()
				}
				stop.Stop()
				cancel()
			}
		}()
	}
	wg.Wait()
	tr.mu.RLock()
	for _, p := range tr.pools {
		p.mu.Lock()
		for _, c := range p.idle {
			if c.aborted.Load() || !stillOpen(c.raw) {
				t.Error("a closed connection was kept for reuse")
			}
		}
		p.mu.Unlock()
	}
	tr.mu.RUnlock()
	if _, body := do(t, tr, "GET", url, nil); body != "hello, world" {
		t.Fatalf("after the cancellations: %q", body)
	}
	tr.CloseIdleConnections()
	if n := openConns(tr); n != 0 {
		t.Fatalf("%d connections still open after the idle ones were closed", n)
	}
	waitFor(t, func() bool { return serverOpen.Load() == 0 }, "every connection closed at the server")
	waitFor(t, func() bool { return runtime.NumGoroutine() <= goroutines }, "no goroutine left behind")
}

func TestALargeHeadIsNotKeptWithTheIdleConnection(t *testing.T) {
	url, _ := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, ok := readRequest(br); !ok {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Big: "+strings.Repeat("a", 512<<10)+"\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	tr := newTransport(t, Options{})
	do(t, tr, "GET", url, nil)
	tr.mu.RLock()
	defer tr.mu.RUnlock()
	for _, p := range tr.pools {
		for _, c := range p.idle {
			if cap(c.head) > maxKeptHead {
				t.Fatalf("an idle connection keeps a head buffer of %d bytes", cap(c.head))
			}
		}
	}
}

func TestTLSConnectionsAreReusedThroughThePeek(t *testing.T) {
	// The peek before reuse looks at the socket under TLS: records the server sends after its handshake (TLS 1.3
	// session tickets) must have been consumed with the answer, not read as unasked-for bytes.
	srv := &countingServer{Server: httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))}
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			srv.conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	tr := newTransport(t, Options{TLSConfig: &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}})
	for range 3 {
		if _, body := do(t, tr, "GET", srv.URL, nil); body != "ok" {
			t.Fatalf("body %q", body)
		}
	}
	if n := srv.conns.Load(); n != 1 {
		t.Fatalf("%d TLS connections for 3 sequential calls, want 1", n)
	}
}

func TestIdleConnectionTheServerHalfClosedIsNotReused(t *testing.T) {
	// The server ends its side (FIN) but keeps reading: a request written there would be read and never
	// answered. The peek sees the end, and even a body that cannot be replayed goes on a new connection.
	url, accepted := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, ok := readRequest(br); ok {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			c.(*net.TCPConn).CloseWrite()
			io.Copy(io.Discard, br)
		}
	})
	tr := newTransport(t, Options{})
	do(t, tr, "GET", url, nil)
	waitClosedByServer(t, tr)
	req, _ := http.NewRequest("POST", url, io.NopCloser(strings.NewReader("once")))
	req.ContentLength = 4
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("a call after the server half-closed the idle connection: %v", err)
	}
	resp.Body.Close()
	if n := accepted.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}
