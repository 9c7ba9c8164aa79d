package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// options are the command's flags, checked by validate.
type options struct {
	scenarios  string
	conns      int
	duration   time.Duration
	warmup     time.Duration
	timeout    time.Duration
	chunks     int
	useWrk     bool
	asJSON     bool
	gatewayBin string // a built gateway; empty: build ./cmd/gateway
	keep       bool   // keep the temporary folder (logs, data) for a look afterwards
	// gatewayArgs are more flags for the gateway, such as "--redis redis://127.0.0.1:6379/0" to measure the
	// shared rate limit (the limited row) against the embedded one.
	gatewayArgs string
}

const (
	maxConns    = 4096
	maxChunks   = 100000
	maxDuration = time.Hour
)

func (o options) validate() error {
	var errs []error
	if o.conns < 1 || o.conns > maxConns {
		errs = append(errs, fmt.Errorf("-c must be 1 to %d, not %d", maxConns, o.conns))
	}
	if o.duration <= 0 || o.duration > maxDuration {
		errs = append(errs, fmt.Errorf("-d must be more than 0 and at most %v, not %v", maxDuration, o.duration))
	}
	if o.warmup < 0 || o.warmup > maxDuration {
		errs = append(errs, fmt.Errorf("-warmup must be 0 to %v, not %v", maxDuration, o.warmup))
	}
	if o.timeout <= 0 || o.timeout > 10*time.Minute {
		errs = append(errs, fmt.Errorf("-timeout must be more than 0 and at most 10m, not %v", o.timeout))
	}
	if o.chunks < 1 || o.chunks > maxChunks {
		errs = append(errs, fmt.Errorf("-chunks must be 1 to %d, not %d", maxChunks, o.chunks))
	}
	return errors.Join(errs...)
}

// run starts the mock and the gateway, measures the selected scenarios and returns the report; the children are
// stopped before it returns, whatever happens. Progress goes to progress. On an error past the options' check,
// the report holds what was measured so far and the children that were started.
func run(ctx context.Context, o options, progress io.Writer) (*report, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.useWrk {
		if _, err := exec.LookPath("wrk"); err != nil {
			return nil, errors.New("-wrk: wrk is not on PATH")
		}
	}
	selected, err := selectScenarios(o.scenarios, scenarios(o.chunks))
	if err != nil {
		return nil, err
	}
	rep := &report{Generator: "go (fasthttp, keep-alive)", GOOS: runtime.GOOS, CPUs: runtime.NumCPU(),
		Connections: o.conns, DurationS: o.duration.Seconds(), WarmupS: o.warmup.Seconds(), Chunks: o.chunks}
	if o.useWrk {
		rep.Generator = "wrk"
	}

	scratch, err := os.MkdirTemp("", "gateway-loadbench-run-")
	if err != nil {
		return rep, err
	}
	if o.keep {
		fmt.Fprintf(progress, "loadbench: keeping %s (gateway.log, mock.log, floor.log, data)\n", scratch)
	} else {
		defer os.RemoveAll(scratch)
	}

	root, rootErr := findRoot()
	bin := o.gatewayBin
	if bin == "" {
		if rootErr != nil {
			return rep, rootErr
		}
		bin = filepath.Join(scratch, "gateway")
		fmt.Fprintln(progress, "loadbench: building ./cmd/gateway")
		if err := goBuild(ctx, root, nil, "-o", bin, "./cmd/gateway"); err != nil {
			return rep, err
		}
	}
	wasmPath := ""
	for i := 0; i < len(selected); i++ {
		if selected[i].name != "guarded" {
			continue
		}
		if rootErr == nil {
			fmt.Fprintf(progress, "loadbench: building %s as a wasm plugin (kept for later runs)\n", pluginDir)
			wasmPath, err = buildPlugin(ctx, root)
		} else {
			err = rootErr
		}
		if err != nil {
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			skip := fmt.Sprintf("guarded: skipped, the wasm plugin could not be built: %v", err)
			fmt.Fprintln(progress, "loadbench: "+skip)
			rep.Skipped = append(rep.Skipped, skip)
			selected = append(selected[:i], selected[i+1:]...)
			i--
		}
	}

	mockLog, err := os.Create(filepath.Join(scratch, "mock.log"))
	if err != nil {
		return rep, err
	}
	defer mockLog.Close()
	mock, mockAddr, err := startMock(ctx, o.chunks, mockLog)
	if err != nil {
		return rep, err
	}
	rep.pids = append(rep.pids, mock.pid())
	defer mock.stop()

	var floor *child
	var floorAddr string
	if selectsFloor(selected) {
		floorLog, err := os.Create(filepath.Join(scratch, "floor.log"))
		if err != nil {
			return rep, err
		}
		defer floorLog.Close()
		if floor, floorAddr, err = startFloor(ctx, mockAddr, floorLog); err != nil {
			return rep, err
		}
		rep.pids = append(rep.pids, floor.pid())
		defer floor.stop()
	}

	bootstrap := filepath.Join(scratch, "bootstrap.json")
	if err := writeBootstrap(bootstrap, mockAddr, wasmPath); err != nil {
		return rep, err
	}
	fmt.Fprintln(progress, "loadbench: starting the gateway")
	gw, gwAddr, err := startGateway(ctx, bin, filepath.Join(scratch, "data"), bootstrap, filepath.Join(scratch, "gateway.log"),
		strings.Fields(o.gatewayArgs)...)
	if err != nil {
		return rep, err
	}
	rep.pids = append(rep.pids, gw.pid())
	defer gw.stop()

	for _, sc := range selected {
		for _, t := range sc.rows {
			addr, proxy, proxyLog := mockAddr, (*child)(nil), ""
			switch {
			case t.through:
				addr, proxy, proxyLog = gwAddr, gw, "gateway.log"
			case t.floor:
				addr, proxy, proxyLog = floorAddr, floor, "floor.log"
			}
			conns := o.conns
			if t.conns > 0 {
				conns = t.conns
			}
			r, err := measure(ctx, o, loadSpec{target: t, addr: addr, conns: conns, warmup: o.warmup, window: o.duration,
				timeout: o.timeout}, proxy, mock, scratch, progress)
			if err != nil {
				return rep, fmt.Errorf("%s: %w", t.row, err)
			}
			if proxy != nil && !proxy.running() {
				return rep, fmt.Errorf("%s: the %s exited:\n%s", t.row, proxy.name, readHead(filepath.Join(scratch, proxyLog), 4<<10))
			}
			rep.Rows = append(rep.Rows, r)
		}
	}
	rep.compare()
	gw.stop()
	if floor != nil {
		floor.stop()
	}
	mock.stop()
	return rep, nil
}

// selectsFloor reports whether a selected scenario has a row through the floor proxy, which is started only then.
func selectsFloor(selected []scenario) bool {
	for _, sc := range selected {
		for _, t := range sc.rows {
			if t.floor {
				return true
			}
		}
	}
	return false
}

// measure probes a target, then loads it and turns what the load generator and /proc saw into a row. proxy is the
// process between the load and the mock (the gateway or the floor proxy), nil for a direct row: the row's gateway
// CPU and RSS are its.
func measure(ctx context.Context, o options, s loadSpec, proxy, mock *child, scratch string, progress io.Writer) (row, error) {
	r := row{Scenario: s.target.row, Through: s.target.through, Proxy: s.target.proxy(), Connections: s.conns,
		Baseline: s.target.baseline}
	fmt.Fprintf(progress, "loadbench: %-16s %d connection(s), %v warm-up, %v measured\n", s.target.row, s.conns, s.warmup, s.window)
	if err := probe(ctx, s); err != nil {
		return r, fmt.Errorf("the first requests failed: %w", err)
	}
	sampleProxy := func() procSample {
		if proxy == nil {
			return procSample{}
		}
		return sampleProc(proxy.pid())
	}
	rssBefore := sampleProxy()
	var proxyStart, proxyEnd, mockStart, mockEnd procSample
	s.onStart = func() { proxyStart, mockStart = sampleProxy(), sampleProc(mock.pid()) }
	s.onEnd = func() { proxyEnd, mockEnd = sampleProxy(), sampleProc(mock.pid()) }
	var res loadResult
	var err error
	if o.useWrk {
		res, err = runWrk(ctx, s, scratch)
	} else {
		res, err = runGo(ctx, s)
	}
	if err != nil {
		return r, err
	}
	rssAfter := sampleProxy()
	if res.requests == 0 {
		return r, fmt.Errorf("%w (%d errors; the first: %s)", errNoAnswers, res.errors, res.firstError)
	}
	r.Requests, r.Errors, r.FirstError = res.requests, res.errors, res.firstError
	r.RequestsPerS = res.rps
	r.P50US, r.P99US = micros(res.p50), micros(res.p99)
	r.ProcStats = mockStart.ok && mockEnd.ok && (proxy == nil || proxyStart.ok && proxyEnd.ok)
	if mockStart.ok && mockEnd.ok {
		v := micros(mockEnd.cpu-mockStart.cpu) / float64(res.requests)
		r.MockCPUUS = &v
	}
	if proxy != nil {
		if proxyStart.ok && proxyEnd.ok {
			v := micros(proxyEnd.cpu-proxyStart.cpu) / float64(res.requests)
			r.GatewayCPUUS = &v
		}
		if rssBefore.ok && rssAfter.ok {
			r.RSSBeforeKB, r.RSSAfterKB = &rssBefore.rssKB, &rssAfter.rssKB
		}
	}
	return r, nil
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
