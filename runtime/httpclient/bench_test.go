package httpclient

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"

	"github.com/valyala/fasthttp"
)

// nopConn is a net.Conn that does nothing, for parser tests that feed bytes from elsewhere.
type nopConn struct{ net.Conn }

func (nopConn) Close() error { return nil }

// BenchmarkRoundTrip is a small POST and its JSON answer on a kept-alive loopback connection, against a server
// that allocates nothing (fasthttp), so that allocs/op are the client's: net/http's Transport for comparison.
func BenchmarkRoundTrip(b *testing.B) {
	answer := bytes.Repeat([]byte("x"), 600)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("application/json")
		ctx.SetBody(answer)
	}}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Shutdown() })
	target := "http://" + ln.Addr().String() + "/v1/chat/completions"
	body := bytes.Repeat([]byte("y"), 300)
	run := func(b *testing.B, tr http.RoundTripper) {
		b.ReportAllocs()
		for b.Loop() {
			req, _ := http.NewRequest("POST", target, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer sk")
			resp, err := tr.RoundTrip(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	b.Run("httpclient", func(b *testing.B) {
		tr := New(Options{Proxy: func(*http.Request) (*url.URL, error) { return nil, nil }})
		defer tr.Close()
		run(b, tr)
	})
	b.Run("net-http", func(b *testing.B) {
		tr := &http.Transport{MaxIdleConnsPerHost: 256}
		defer tr.CloseIdleConnections()
		run(b, tr)
	})
}
