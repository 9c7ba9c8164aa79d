package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// loadSpec is one measured run of one target.
type loadSpec struct {
	target  target
	addr    string // 127.0.0.1:port of the mock or the gateway
	conns   int
	warmup  time.Duration
	window  time.Duration
	timeout time.Duration // of each request
	// onStart and onEnd are called right at the measured window's edges (the runner samples /proc there).
	onStart, onEnd func()
}

// loadResult is what a load generator measured in the window.
type loadResult struct {
	requests   int64 // answered as expected within the window
	errors     int64 // failed, timed out or answered otherwise within the window
	firstError string
	elapsed    time.Duration
	rps        float64
	p50, p99   time.Duration
}

func (s loadSpec) url() string { return "http://" + s.addr + inferencePath }

// newClient returns a keep-alive client of one loopback address with at most conns connections.
func newClient(addr string, conns int) *fasthttp.HostClient {
	return &fasthttp.HostClient{
		Addr:                     addr,
		MaxConns:                 conns,
		MaxIdleConnDuration:      time.Minute,
		NoDefaultUserAgentHeader: true,
		ReadBufferSize:           16 << 10,
		MaxResponseBodySize:      64 << 20,
	}
}

func (s loadSpec) newRequest() *fasthttp.Request {
	req := fasthttp.AcquireRequest()
	req.SetRequestURI(s.url())
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	for _, h := range s.target.headers {
		req.Header.Set(h[0], h[1])
	}
	req.SetBodyRaw(s.target.body)
	return req
}

// answered reports whether an answer is what the load expects: a 200, and for a stream its end.
func (s loadSpec) answered(resp *fasthttp.Response) error {
	if resp.StatusCode() != fasthttp.StatusOK {
		return fmt.Errorf("status %d: %.300s", resp.StatusCode(), resp.Body())
	}
	if s.target.stream && !bytes.HasSuffix(resp.Body(), []byte("data: [DONE]\n\n")) {
		return fmt.Errorf("a stream did not end with [DONE]: ...%.200s", tail(resp.Body(), 200))
	}
	return nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// probe sends the target's request twice and checks both answers with target.probe.
func probe(ctx context.Context, s loadSpec) error {
	client := newClient(s.addr, 1)
	defer client.CloseIdleConnections()
	req := s.newRequest()
	defer fasthttp.ReleaseRequest(req)
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	for i := 0; i < 2; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		resp.Reset()
		if err := client.DoTimeout(req, resp, s.timeout); err != nil {
			return err
		}
		header := func(name string) string { return string(resp.Header.Peek(name)) }
		if err := s.target.probe(resp.StatusCode(), header, resp.Body(), i == 1); err != nil {
			return err
		}
	}
	return nil
}

const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseStop
)

// runGo drives the target with conns goroutines, each sending one request after another on its own keep-alive
// connection: warm-up first, then the measured window, whose answers alone are counted.
func runGo(ctx context.Context, s loadSpec) (loadResult, error) {
	client := newClient(s.addr, s.conns)
	defer client.CloseIdleConnections()
	var (
		phase     atomic.Int32
		wg        sync.WaitGroup
		mu        sync.Mutex
		latencies []time.Duration
		res       loadResult
	)
	for i := 0; i < s.conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := s.newRequest()
			defer fasthttp.ReleaseRequest(req)
			resp := fasthttp.AcquireResponse()
			defer fasthttp.ReleaseResponse(resp)
			lat := make([]time.Duration, 0, 1<<12)
			var errs int64
			var firstErr error
			for phase.Load() != phaseStop && ctx.Err() == nil {
				resp.Reset()
				start := time.Now()
				err := client.DoTimeout(req, resp, s.timeout)
				took := time.Since(start)
				if err == nil {
					err = s.answered(resp)
				} else {
					time.Sleep(10 * time.Millisecond) // a refused or broken connection fails at once: do not spin
				}
				if phase.Load() != phaseMeasure {
					continue
				}
				if err != nil {
					errs++
					if firstErr == nil {
						firstErr = err
					}
					continue
				}
				lat = append(lat, took)
			}
			mu.Lock()
			defer mu.Unlock()
			latencies = append(latencies, lat...)
			res.errors += errs
			if firstErr != nil && res.firstError == "" {
				res.firstError = firstErr.Error()
			}
		}()
	}
	stopAll := func() {
		phase.Store(phaseStop)
		wg.Wait()
	}
	if !sleepCtx(ctx, s.warmup) {
		stopAll()
		return res, ctx.Err()
	}
	s.onStart()
	start := time.Now()
	phase.Store(phaseMeasure)
	ok := sleepCtx(ctx, s.window)
	phase.Store(phaseStop)
	res.elapsed = time.Since(start)
	s.onEnd()
	wg.Wait()
	if !ok {
		return res, ctx.Err()
	}
	res.requests = int64(len(latencies))
	res.rps = float64(res.requests) / res.elapsed.Seconds()
	slices.Sort(latencies)
	res.p50, res.p99 = percentile(latencies, 50), percentile(latencies, 99)
	return res, nil
}

// percentile returns the nearest-rank p-th percentile of sorted latencies (0 when there are none).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// sleepCtx waits d, or less when ctx ends first; it reports whether it waited d.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

var errNoAnswers = errors.New("no request was answered as expected in the measured window")
