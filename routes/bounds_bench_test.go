package routes

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// BenchmarkChatCompletionOverTCP is BenchmarkChatCompletionGateway over a real loopback connection (one
// keep-alive connection, requests one after another), so that what the gateway does per connection (watching
// it for the caller going away) is part of the figure; the in-memory benchmarks have no socket to watch.
func BenchmarkChatCompletionOverTCP(b *testing.B) { benchOverTCP(b, true) }

// BenchmarkChatCompletionOverTCPUnwatched is BenchmarkChatCompletionOverTCP without the connection watcher:
// the difference is what watching costs.
func BenchmarkChatCompletionOverTCPUnwatched(b *testing.B) { benchOverTCP(b, false) }

func benchOverTCP(b *testing.B, watch bool) {
	f := newFixture(b, Options{})
	f.srv.inflight.noWatch = !watch
	up := benchUpstream(b)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go f.srv.Serve(ln)
	b.Cleanup(func() { f.srv.Shutdown(time.Second) })
	client := &fasthttp.HostClient{Addr: ln.Addr().String(), MaxConns: 1}
	cfg := `{"strategy":{"mode":"fallback"},"targets":[{"provider":"openai","api_key":"sk","custom_host":"` + up.URL + `/v1"}]}`
	body := []byte(chatBody)
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req.Reset()
		resp.Reset()
		req.Header.SetMethod("POST")
		req.SetRequestURI("http://" + client.Addr + "/v1/chat/completions")
		req.Header.SetContentType("application/json")
		req.Header.Set(HeaderAPIKey, f.plain)
		req.Header.Set(HeaderConfig, cfg)
		req.SetBody(body)
		if err := client.Do(req, resp); err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode() != 200 {
			b.Fatalf("status %d: %s", resp.StatusCode(), resp.Body())
		}
	}
}

// BenchmarkInflightWatch is what tracking costs one request on a real connection: its context, its entry, and
// the epoll_ctl calls that watch and unwatch the connection.
func BenchmarkInflightWatch(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	conn, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	var f inflight
	f.init(slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer f.stopWatching()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := f.begin(context.Background(), conn)
		if t.wc == nil {
			b.Fatal("the connection is not watched")
		}
		f.unwatch(&t)
		f.end(t)
	}
}
