package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// runWrk drives the target with wrk (on PATH): one run for the warm-up, then the measured one, whose report
// gives requests/s, the latency distribution and the errors. wrk counts durations in whole seconds.
func runWrk(ctx context.Context, s loadSpec, scratch string) (loadResult, error) {
	script, err := writeWrkScript(s, scratch)
	if err != nil {
		return loadResult{}, err
	}
	threads := min(s.conns, runtime.NumCPU())
	args := func(d time.Duration, extra ...string) []string {
		return append([]string{"-t", strconv.Itoa(threads), "-c", strconv.Itoa(s.conns), "-d", wholeSeconds(d),
			"--timeout", wholeSeconds(s.timeout), "-s", script}, append(extra, s.url())...)
	}
	if s.warmup > 0 {
		if out, err := exec.CommandContext(ctx, "wrk", args(s.warmup)...).CombinedOutput(); err != nil {
			return loadResult{}, fmt.Errorf("wrk (warm-up): %v\n%s", err, out)
		}
	}
	s.onStart()
	start := time.Now()
	out, err := exec.CommandContext(ctx, "wrk", args(s.window, "--latency")...).CombinedOutput()
	elapsed := time.Since(start)
	s.onEnd()
	if err != nil {
		return loadResult{}, fmt.Errorf("wrk: %v\n%s", err, out)
	}
	res, err := parseWrk(string(out))
	res.elapsed = elapsed
	return res, err
}

func wholeSeconds(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds())))) + "s"
}

// writeWrkScript writes the Lua script that makes wrk send the target's request; the body is read from a file.
func writeWrkScript(s loadSpec, scratch string) (string, error) {
	name := strings.ReplaceAll(s.target.row, " ", "-")
	bodyPath := filepath.Join(scratch, "wrk-"+name+".json")
	if err := os.WriteFile(bodyPath, s.target.body, 0o600); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "wrk.method = \"POST\"\nlocal f = assert(io.open(%s, \"rb\"))\nwrk.body = f:read(\"*a\")\nf:close()\n", luaString(bodyPath))
	b.WriteString("wrk.headers[\"Content-Type\"] = \"application/json\"\n")
	for _, h := range s.target.headers {
		fmt.Fprintf(&b, "wrk.headers[%s] = %s\n", luaString(h[0]), luaString(h[1]))
	}
	path := filepath.Join(scratch, "wrk-"+name+".lua")
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}

// luaString quotes s as a Lua long string, which takes every byte as it is.
func luaString(s string) string {
	eq := ""
	for strings.Contains(s, "]"+eq+"]") {
		eq += "="
	}
	return "[" + eq + "[" + s + "]" + eq + "]"
}

var (
	wrkRequests  = regexp.MustCompile(`(\d+) requests in ([\d.]+)(us|ms|s|m)`)
	wrkRate      = regexp.MustCompile(`Requests/sec:\s+([\d.]+)`)
	wrkPercent   = regexp.MustCompile(`(?m)^\s+(50|99)%\s+([\d.]+)(us|ms|s|m)\s*$`)
	wrkNon2xx    = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	wrkSocketErr = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

// parseWrk reads the figures of a `wrk --latency` report.
func parseWrk(out string) (loadResult, error) {
	var res loadResult
	m := wrkRequests.FindStringSubmatch(out)
	r := wrkRate.FindStringSubmatch(out)
	if m == nil || r == nil {
		return res, fmt.Errorf("wrk's report has no request count or rate:\n%s", out)
	}
	res.requests, _ = strconv.ParseInt(m[1], 10, 64)
	res.rps, _ = strconv.ParseFloat(r[1], 64)
	for _, p := range wrkPercent.FindAllStringSubmatch(out, -1) {
		d := wrkDuration(p[2], p[3])
		if p[1] == "50" {
			res.p50 = d
		} else {
			res.p99 = d
		}
	}
	// wrk counts non-2xx answers among its requests and in its rate; here they are errors, not answers.
	if n := wrkNon2xx.FindStringSubmatch(out); n != nil {
		bad, _ := strconv.ParseInt(n[1], 10, 64)
		bad = min(bad, res.requests)
		if res.requests > 0 {
			res.rps *= float64(res.requests-bad) / float64(res.requests)
		}
		res.requests -= bad
		res.errors += bad
		res.firstError = n[0]
	}
	if n := wrkSocketErr.FindStringSubmatch(out); n != nil {
		for _, f := range n[1:] {
			v, _ := strconv.ParseInt(f, 10, 64)
			res.errors += v
		}
		if res.firstError == "" {
			res.firstError = n[0]
		}
	}
	return res, nil
}

func wrkDuration(v, unit string) time.Duration {
	f, _ := strconv.ParseFloat(v, 64)
	scale := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second, "m": time.Minute}[unit]
	return time.Duration(f * float64(scale))
}
