package routes

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSlowStreamsMemory opens many slow streams at once through the real server on 127.0.0.1 (a provider that
// sends an event every 100 ms), and measures the process's RSS while they are open and after they end. The
// callers and the provider are raw sockets with small buffers in this process; the same streams opened
// straight to the provider measure what they cost themselves, so that the difference is the gateway's
// (fasthttp's connection, net/http's upstream connection, the relay). It fails only on a gross regression,
// never on time.
func TestSlowStreamsMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("opens 2,000 connections; skipped with -short and -race")
	}
	const streams = 2000
	const maxKBPerStream = 80
	f := newFixture(t, Options{})
	base, _ := f.serve(t)
	up := newSlowUpstream(t)
	cfg := `{"provider":"openai","api_key":"sk","custom_host":"http://` + up.addr + `/v1"}`
	body := `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Hi"}]}`
	request := []byte("POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n" +
		HeaderAPIKey + ": " + f.plain + "\r\n" + HeaderConfig + ": " + cfg + "\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
	deadline := time.Now().Add(25 * time.Second) // every stream ends by then

	// run opens n streams to addr, samples RSS while they are all open, then ends them; it returns the
	// growth of RSS over the idle figure before, in KB a stream.
	run := func(addr string, n int) float64 {
		runtime.GC()
		idle := rssKB(t)
		var open, done sync.WaitGroup
		open.Add(n)
		done.Add(n)
		for i := 0; i < n; i++ {
			if i%100 == 99 {
				time.Sleep(10 * time.Millisecond) // the listener's backlog is not the subject
			}
			go func() {
				defer done.Done()
				if err := slowCaller(addr, request, deadline, open.Done); err != nil {
					t.Error(err)
				}
			}()
		}
		open.Wait()
		peak := 0
		for i := 0; i < 10; i++ { // a second of events on every stream: the steady state
			time.Sleep(100 * time.Millisecond)
			peak = max(peak, rssKB(t))
		}
		if n == streams && addr != up.addr {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			t.Logf("%d streams open through the gateway: Go heap in use %d KB, stacks %d KB, %d goroutines",
				n, ms.HeapInuse>>10, ms.StackInuse>>10, runtime.NumGoroutine())
		}
		up.finish()
		done.Wait()
		up.reset()
		return float64(peak-idle) / float64(n)
	}

	gateway := strings.TrimPrefix(base, "http://")
	run(gateway, 50) // warm up: pools, connections, code paths
	run(up.addr, 50)
	direct := run(up.addr, streams)
	idle := rssKB(t)
	through := run(gateway, streams)
	ended := rssKB(t)
	wait := 3 * time.Second // a short look: the reclaimer (stream.go) runs its first collection 2 s after a burst
	if d, err := time.ParseDuration(os.Getenv("STREAMS_AFTER")); err == nil {
		wait = d // a longer look by hand (STREAMS_AFTER=45s): RSS back near idle once the reclaimer's collections ran
	}
	time.Sleep(wait)
	later := rssKB(t)
	t.Logf("%d streams: RSS grows %.1f KB a stream straight to the provider, %.1f KB through the gateway: the gateway's %.1f KB a stream; "+
		"RSS %d KB before, %d KB at their end, %d KB %v later", streams, direct, through, through-direct, idle, ended, later, wait)
	if through-direct > maxKBPerStream {
		t.Errorf("an open stream costs the gateway %.1f KB of RSS, over %d KB", through-direct, maxKBPerStream)
	}
}

// slowCaller sends request on a new connection, calls opened on the first event, and reads the stream to its
// [DONE] with a small buffer.
func slowCaller(addr string, request []byte, deadline time.Time, opened func()) error {
	conn, err := net.DialTimeout("tcp", addr, time.Until(deadline))
	if err != nil {
		opened()
		return err
	}
	defer conn.Close()
	conn.SetDeadline(deadline)
	if _, err := conn.Write(request); err != nil {
		opened()
		return err
	}
	buf := make([]byte, 512)
	var tail []byte // the end of what was read, to find markers across reads
	first := true
	for {
		n, err := conn.Read(buf)
		tail = append(tail, buf[:n]...)
		if first && bytes.Contains(tail, []byte("data: ")) {
			first = false
			opened()
		}
		if bytes.Contains(tail, []byte("data: [DONE]")) {
			return nil
		}
		if err != nil {
			if first {
				opened()
			}
			return fmt.Errorf("stream ended without [DONE]: %v: %q", err, tail)
		}
		if len(tail) > 32 {
			tail = append(tail[:0], tail[len(tail)-32:]...)
		}
	}
}

// slowUpstream is an OpenAI-compatible provider on a raw listener that answers every call with a stream of
// an event every 100 ms, until finish is called; then it ends each stream with [DONE].
type slowUpstream struct {
	addr string
	mu   sync.Mutex
	end  chan struct{}
}

func newSlowUpstream(t *testing.T) *slowUpstream {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	u := &slowUpstream{addr: ln.Addr().String(), end: make(chan struct{})}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go u.serve(conn)
		}
	}()
	return u
}

func (u *slowUpstream) finish() {
	u.mu.Lock()
	close(u.end)
	u.mu.Unlock()
}

func (u *slowUpstream) reset() {
	u.mu.Lock()
	u.end = make(chan struct{})
	u.mu.Unlock()
}

func (u *slowUpstream) serve(conn net.Conn) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	u.mu.Lock()
	end := u.end
	u.mu.Unlock()
	br := bufio.NewReaderSize(conn, 1024)
	length := 0
	for { // the request's headers, then its body
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		if line == "\r\n" {
			break
		}
		if name, value, ok := strings.Cut(line, ":"); ok && strings.EqualFold(name, "Content-Length") {
			length, _ = strconv.Atoi(strings.TrimSpace(value))
		}
	}
	if _, err := io.CopyN(io.Discard, br, int64(length)); err != nil {
		return
	}
	event := func(content string) string {
		return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"` +
			content + `"},"finish_reason":null}]}` + "\n\n"
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"+event("first")); err != nil {
		return
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-end:
			io.WriteString(conn, event("last")+"data: [DONE]\n\n")
			return
		case <-tick.C:
			if _, err := io.WriteString(conn, event("word ")); err != nil {
				return
			}
		}
	}
}

// rssKB is the process's resident set size (VmRSS), in KB.
func rssKB(t *testing.T) int {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status: ", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return kb
		}
	}
	t.Skip("no VmRSS in /proc/self/status")
	return 0
}
