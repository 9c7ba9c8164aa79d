package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"time"

	"github.com/llmgw/gateway/runtime/httpclient"
	"github.com/valyala/fasthttp"
)

// The floor proxy runs as a child process (this binary, with floorEnv set to the mock's address): the most
// minimal proxy that can be built from the gateway's own blocks, fasthttp's server (under fiber) and the
// gateway's upstream client, with no auth, logging or metrics. Its CPU per request is what loopback syscalls and
// the Go runtime's wake-ups cost any proxy on this machine: the floor under the gateway's own figure.
const floorEnv = "LOADBENCH_FLOOR"

// maxFloorAnswer bounds an answer the floor proxy reads whole, as the mock bounds a request.
const maxFloorAnswer = 64 << 20

// floorHandler forwards each request's body as a POST to upstream and copies the answer's status, Content-Type
// and body back.
func floorHandler(client http.RoundTripper, upstream string) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		// The RequestCtx as context keeps what a proxy must have: the call is cancelled when the server stops.
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, upstream, bytes.NewReader(ctx.PostBody()))
		if err != nil {
			ctx.Error(err.Error(), fasthttp.StatusInternalServerError)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+mockProviderKey)
		resp, err := client.RoundTrip(req)
		if err != nil {
			ctx.Error(err.Error(), fasthttp.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		buf := bufPool.Get().(*bytes.Buffer)
		defer bufPool.Put(buf)
		buf.Reset()
		if n, err := buf.ReadFrom(io.LimitReader(resp.Body, maxFloorAnswer+1)); err != nil || n > maxFloorAnswer {
			ctx.Error(fmt.Sprintf("reading the upstream's answer: %d bytes, %v", n, err), fasthttp.StatusBadGateway)
			return
		}
		ctx.SetStatusCode(resp.StatusCode)
		ctx.SetContentType(resp.Header.Get("Content-Type"))
		ctx.SetBody(buf.Bytes())
	}
}

// floorUpstream checks the mock's address floorEnv names (127.0.0.1:port, as startMock returns it) and returns
// the URL the floor proxy forwards to.
func floorUpstream(mockAddr string) (string, error) {
	ap, err := netip.ParseAddrPort(mockAddr)
	if err != nil || !ap.Addr().IsLoopback() || ap.Port() == 0 {
		return "", fmt.Errorf("%s must be a loopback address and port (127.0.0.1:port), not %q", floorEnv, mockAddr)
	}
	return "http://" + mockAddr + inferencePath, nil
}

// serveFloor runs the floor proxy on a free loopback port, prints "listening <addr>" on stdout and serves until
// its stdin closes, as serveMock does.
func serveFloor() error {
	upstream, err := floorUpstream(os.Getenv(floorEnv))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	client := httpclient.New(httpclient.Options{})
	defer client.Close()
	srv := &fasthttp.Server{
		Handler:     floorHandler(client, upstream),
		Name:        "loadbench-floor",
		ReadTimeout: time.Minute,
		IdleTimeout: time.Minute,
	}
	fmt.Printf("listening %s\n", ln.Addr())
	go func() {
		io.Copy(io.Discard, bufio.NewReader(os.Stdin))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.ShutdownWithContext(ctx)
	}()
	return srv.Serve(ln)
}
