package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// serveHelper runs this process as the mock upstream or the floor proxy when the environment asks for one, and
// reports whether it did; it exits on a helper's error.
func serveHelper() bool {
	var name string
	var serve func() error
	switch {
	case os.Getenv(mockEnv) != "":
		name, serve = "mock", serveMock
	case os.Getenv(floorEnv) != "":
		name, serve = "floor proxy", serveFloor
	default:
		return false
	}
	if err := serve(); err != nil {
		fmt.Fprintf(os.Stderr, "loadbench %s: %v\n", name, err)
		os.Exit(1)
	}
	return true
}

func main() {
	if serveHelper() {
		return
	}
	var o options
	flag.StringVar(&o.scenarios, "scenarios", "all", "comma-separated: all, "+strings.Join(scenarioNames, ", "))
	flag.IntVar(&o.conns, "c", 32, "connections (latency1 always uses 1)")
	flag.DurationVar(&o.duration, "d", 5*time.Second, "measured window of each row")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "warm-up before each row's window")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Second, "timeout of each request")
	flag.IntVar(&o.chunks, "chunks", 200, "chunks of the mock's streamed answer")
	flag.BoolVar(&o.useWrk, "wrk", false, "drive the load with wrk (must be on PATH) instead of the Go generator")
	flag.BoolVar(&o.asJSON, "json", false, "print the results as JSON instead of a table")
	flag.StringVar(&o.gatewayBin, "gateway", "", "a gateway binary to measure (default: build ./cmd/gateway)")
	flag.StringVar(&o.gatewayArgs, "gateway-args", "", "more flags for the gateway, space-separated (e.g. \"--redis redis://127.0.0.1:6379/0\" to measure the shared rate limit)")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary folder (gateway.log, mock.log, data) and print its path")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: go run ./cmd/loadbench [flags]\n\n"+
			"Starts a mock upstream and the gateway on 127.0.0.1, loads them and prints requests/s, latency and CPU per request.")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, o, os.Stderr)
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "loadbench: interrupted; the gateway and the mock are stopped")
		os.Exit(130)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(1)
	}
	if o.asJSON {
		err = rep.writeJSON(os.Stdout)
	} else {
		err = rep.writeTable(os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(1)
	}
}
