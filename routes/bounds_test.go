package routes

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/storage"
)

// blockingUpstream answers nothing until the gateway cancels the call: entered yields each call as it starts,
// cancelled each call the gateway gave up on. Calls still open when the test ends are let go.
func blockingUpstream(t *testing.T) (up *upstream, entered, cancelled chan struct{}) {
	entered, cancelled = make(chan struct{}, 64), make(chan struct{}, 64)
	stop := make(chan struct{})
	up = newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		entered <- struct{}{}
		select {
		case <-r.Context().Done(): // newUpstream has read the body: net/http now notices the connection closing
			cancelled <- struct{}{}
		case <-stop:
		}
	})
	t.Cleanup(func() { close(stop) }) // before up.Close, which waits for the calls to end
	return up, entered, cancelled
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal(what)
	}
}

// rawRequest writes an HTTP/1.1 chat completion request on conn, as a client that is not net/http would.
func rawRequest(t *testing.T, conn net.Conn, body string, headers ...string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	for i := 0; i+1 < len(headers); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", headers[i], headers[i+1])
	}
	b.WriteString("\r\n")
	b.WriteString(body)
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
}

// A caller that closes its connection while the gateway waits upstream has its upstream call cancelled, and
// nothing more is tried for it: neither the retries nor the fallback of its config.
func TestCallerGoingAwayCancelsUpstreamCalls(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{"whole answer", chatBody},
		{"stream not yet begun", `{"model":"m","stream":true,"messages":[{"role":"user","content":"Hi"}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			base, _ := f.serve(t)
			up, entered, cancelled := blockingUpstream(t)
			cfg := fmt.Sprintf(`{"strategy":{"mode":"fallback"},"retry":{"attempts":3,"on_status_codes":[408,502,503]},"targets":[`+
				`{"provider":"openai","api_key":"sk-1","custom_host":%q},{"provider":"openai","api_key":"sk-2","custom_host":%q}]}`, up.URL+"/v1", up.URL+"/v1")
			conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			rawRequest(t, conn, tc.body, HeaderAPIKey, f.plain, HeaderConfig, cfg)
			waitFor(t, entered, "the upstream was never called")
			conn.Close() // the caller goes away
			waitFor(t, cancelled, "the upstream call was not cancelled after the caller went away")
			// Shutdown returns once the request's handler has returned: every call it would make is made by then.
			if err := f.srv.Shutdown(10 * time.Second); err != nil {
				t.Fatalf("shutdown: %v", err)
			}
			if n := up.calls.Load(); n != 1 {
				t.Fatalf("the upstream was called %d times; nothing should be tried after the caller went away", n)
			}
		})
	}
}

// The watcher reads nothing of the connection: a request pipelined behind one in flight is answered, and data
// arriving is not taken for the caller going away.
func TestPipelinedRequestWhileOneIsInFlight(t *testing.T) {
	f := newFixture(t, Options{})
	base, _ := f.serve(t)
	entered, release := make(chan struct{}, 4), make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, call int64) {
		if call == 1 {
			entered <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		io.WriteString(w, chatAnswer)
	})
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	headers := []string{HeaderAPIKey, f.plain, HeaderProvider, "openai", "Authorization", "Bearer sk", HeaderCustomHost, up.URL + "/v1"}
	rawRequest(t, conn, chatBody, append(headers, HeaderTraceID, "first")...)
	waitFor(t, entered, "the upstream was never called")
	rawRequest(t, conn, chatBody, append(headers, HeaderTraceID, "second")...)
	close(release)
	br := bufio.NewReader(conn)
	for _, trace := range []string{"first", "second"} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer to %s: %v", trace, err)
		}
		a := readAnswer(t, resp)
		if a.status != 200 || string(a.body) != chatAnswer || a.header.Get(HeaderTraceID) != trace {
			t.Fatalf("answer to %s: %d %s (trace %s)", trace, a.status, a.body, a.header.Get(HeaderTraceID))
		}
	}
}

// The request deadline bounds the whole request: a hanging upstream is cancelled and the caller gets 408.
func TestRequestDeadlineAnswers408(t *testing.T) {
	f := newFixtureWith(t, Options{}, func(*storage.Store) runtime.Options {
		return runtime.Options{RequestDeadline: 100 * time.Millisecond}
	})
	up, _, cancelled := blockingUpstream(t)
	cfg := fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,"request_timeout":60000,"retry":{"attempts":5,"on_status_codes":[408]}}`, up.URL+"/v1")
	done := make(chan answer, 1)
	go func() { done <- f.chat(t, chatBody, HeaderConfig, cfg) }()
	var a answer
	select {
	case a = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("no answer: the request deadline did not end the request")
	}
	checkError(t, a, 408, "request_timeout", nil)
	waitFor(t, cancelled, "the upstream call was not cancelled at the deadline")
	if n := up.calls.Load(); n != 1 {
		t.Fatalf("upstream calls %d: nothing should be tried after the deadline", n)
	}
}

// When Shutdown's grace period ends, the requests still running are cancelled: their upstream calls stop, the
// callers get 503, and Shutdown returns with nothing left running.
func TestShutdownCancelsRequestsInFlight(t *testing.T) {
	f := newFixture(t, Options{})
	base, served := f.serve(t)
	up, entered, cancelled := blockingUpstream(t)
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(chatBody))
	for k, v := range map[string]string{HeaderAPIKey: f.plain, "Content-Type": "application/json", HeaderProvider: "openai",
		"Authorization": "Bearer sk", HeaderCustomHost: up.URL + "/v1"} {
		req.Header.Set(k, v)
	}
	result := make(chan answer, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			result <- answer{status: -1, body: []byte(err.Error())}
			return
		}
		result <- readAnswer(t, resp)
	}()
	waitFor(t, entered, "the upstream was never called")
	if err := f.srv.Shutdown(50 * time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with a request in flight = %v, want the grace period's deadline", err)
	}
	waitFor(t, cancelled, "the upstream call was not cancelled when the grace period ended")
	select {
	case a := <-result:
		checkError(t, a, 503, "unavailable", nil)
	case <-time.After(10 * time.Second):
		t.Fatal("the caller got no answer")
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// Hammer: requests begin and end on many connections while their peers hang up and the tracker is shut down.
func TestInflightHammer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var f inflight
	f.init(slog.New(slog.NewTextHandler(io.Discard, nil)))
	const workers, rounds = 8, 200
	var wg sync.WaitGroup
	var goneSeen sync.Map
	var pairing sync.Mutex // so that each worker accepts the connection it dialled
	pair := func() (client, server net.Conn, err error) {
		pairing.Lock()
		defer pairing.Unlock()
		if client, err = net.Dial("tcp", ln.Addr().String()); err != nil {
			return nil, nil, err
		}
		if server, err = ln.Accept(); err != nil {
			client.Close()
			return nil, nil, err
		}
		return client, server, nil
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				client, server, err := pair()
				if err != nil {
					t.Error(err)
					return
				}
				tr := f.begin(context.Background(), server)
				if i%2 == 0 {
					client.Close()
					select { // the watcher must see it; a bounded wait, not a timing assertion
					case <-tr.ctx.Done():
						goneSeen.Store(tr.id, context.Cause(tr.ctx))
					case <-time.After(10 * time.Second):
						t.Errorf("request %d: the peer's close was not noticed", tr.id)
					}
				}
				f.unwatch(&tr)
				f.end(tr)
				server.Close()
				f.closed(server) // as fasthttp's ConnState reports it
				if i%2 == 1 {
					client.Close()
				}
			}
		}()
	}
	wg.Wait()
	goneSeen.Range(func(k, v any) bool {
		if v != errCallerGone {
			t.Errorf("request %v ended with %v, want errCallerGone", k, v)
		}
		return true
	})
	if n := f.cancelAll(errShuttingDown); n != 0 {
		t.Fatalf("%d requests left after every one ended", n)
	}
	left := 0
	f.watcher.conns.Range(func(any, any) bool { left++; return true })
	f.watcher.byID.Range(func(any, any) bool { left++; return true })
	if left != 0 {
		t.Errorf("%d registrations of closed connections kept", left)
	}
	f.stopWatching()
	if tr := f.begin(context.Background(), nil); !errors.Is(context.Cause(tr.ctx), errShuttingDown) {
		t.Fatalf("a request after shutdown began with %v", context.Cause(tr.ctx))
	}
}

// A connection is registered once and serves many requests: the peer's close is noticed during whichever request
// is current, and a request that ended before is not cancelled by it.
func TestWatchKeepAliveConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	var f inflight
	f.init(slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer f.stopWatching()
	var first tracked
	for i := 0; i < 3; i++ {
		tr := f.begin(context.Background(), server)
		if tr.wc == nil {
			t.Fatal("the connection is not watched")
		}
		if i == 0 {
			first = tr
		} else if tr.wc != first.wc {
			t.Fatal("the connection was registered again for a later request")
		}
		f.unwatch(&tr)
		f.end(tr)
	}
	current := f.begin(context.Background(), server)
	client.Close()
	select { // a bounded wait, not a timing assertion
	case <-current.ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the peer's close was not noticed during the connection's fourth request")
	}
	if cause := context.Cause(current.ctx); cause != errCallerGone {
		t.Fatalf("cause %v, want errCallerGone", cause)
	}
	f.unwatch(&current)
	f.end(current)
	// A request that begins after the peer has gone is cancelled at once.
	late := f.begin(context.Background(), server)
	if context.Cause(late.ctx) != errCallerGone {
		t.Fatalf("a request on a connection whose peer had gone: cause %v", context.Cause(late.ctx))
	}
	f.unwatch(&late)
	f.end(late)
	f.closed(server)
}
