package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary serve as the mock upstream or the floor proxy, as the command's own binary does.
func TestMain(m *testing.M) {
	if serveHelper() {
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func tinyOptions(scenarios string) options {
	return options{scenarios: scenarios, conns: 2, duration: 300 * time.Millisecond, warmup: 100 * time.Millisecond,
		timeout: 5 * time.Second, chunks: 5}
}

// requireGone fails unless the run started want children and every one has ended.
func requireGone(t *testing.T, pids []int, want int) {
	t.Helper()
	if len(pids) != want {
		t.Fatalf("the run started %d children, want %d", len(pids), want)
	}
	for _, pid := range pids {
		p, err := os.FindProcess(pid)
		if err != nil {
			continue // not found: gone
		}
		if err := p.Signal(syscall.Signal(0)); err == nil {
			t.Errorf("child %d still runs after the benchmark ended", pid)
			p.Kill()
		}
	}
}

// TestRunTinyLoad runs the real binary, the mock and the floor proxy under a tiny load and checks the table and
// the cleanup.
func TestRunTinyLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the gateway")
	}
	var progress bytes.Buffer
	o := tinyOptions("plain,floor") // both bring their direct baseline
	o.duration = 200 * time.Millisecond
	rep, err := run(context.Background(), o, &progress)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, progress.String())
	}
	requireGone(t, rep.pids, 3) // mock, floor proxy, gateway
	got := map[string]row{}
	for _, r := range rep.Rows {
		got[r.Scenario] = r
	}
	for _, name := range []string{"direct", "plain", "floor"} {
		r, ok := got[name]
		if !ok {
			t.Fatalf("no row %q in %+v", name, rep.Rows)
		}
		if r.RequestsPerS <= 0 || r.Requests <= 0 || r.P50US <= 0 {
			t.Errorf("%s: %d requests, %v requests/s, p50 %v µs; want them above 0", name, r.Requests, r.RequestsPerS, r.P50US)
		}
		if r.Errors != 0 {
			t.Errorf("%s: %d errors, the first: %s", name, r.Errors, r.FirstError)
		}
	}
	plain := got["plain"]
	if plain.Share == nil || *plain.Share <= 0 {
		t.Errorf("plain has no share of direct: %+v", plain)
	}
	if plain.ProcStats && (plain.GatewayCPUUS == nil || plain.RSSBeforeKB == nil || *plain.RSSBeforeKB <= 0) {
		t.Errorf("plain: /proc was read but the gateway's CPU or RSS is missing: %+v", plain)
	}
	floor := got["floor"]
	if floor.Through || floor.Proxy != "floor" || floor.Baseline != "direct" || floor.Share == nil || *floor.Share <= 0 {
		t.Errorf("floor: want a row through the floor proxy with a share of direct: %+v", floor)
	}
	if runtime.GOOS == "linux" {
		// The floor proxy's own CPU: a row that measured the gateway, or nothing, would not be positive here.
		if floor.GatewayCPUUS == nil || *floor.GatewayCPUUS <= 0 {
			t.Errorf("floor: no positive CPU per request of the floor proxy: %+v", floor)
		}
		if rep.OverFloorUS == nil || *rep.OverFloorUS != *plain.GatewayCPUUS-*floor.GatewayCPUUS {
			t.Errorf("gateway CPU over the floor: %v, want plain's less floor's", rep.OverFloorUS)
		}
	}

	var table bytes.Buffer
	if err := rep.writeTable(&table); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(table.String(), "\n")
	for _, name := range []string{"direct", "plain", "floor"} {
		found := false
		for _, l := range lines {
			if f := strings.Fields(l); len(f) > 2 && f[0] == name && f[2] != "0" {
				found = true
			}
		}
		if !found {
			t.Errorf("the table has no row %q with requests/s above 0:\n%s", name, table.String())
		}
	}
	var decoded struct {
		Rows []struct {
			Scenario     string  `json:"scenario"`
			RequestsPerS float64 `json:"requests_per_s"`
			Proxy        string  `json:"proxy"`
		} `json:"rows"`
	}
	var js bytes.Buffer
	if err := rep.writeJSON(&js); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil || len(decoded.Rows) != 3 || decoded.Rows[2].Scenario != "floor" ||
		decoded.Rows[2].Proxy != "floor" || decoded.Rows[2].RequestsPerS <= 0 {
		t.Errorf("-json output: %v\n%s", err, js.String())
	}
}

// cancelOn cancels a context shortly after the progress written to it mentions a text.
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	text   string
	after  time.Duration
	cancel context.CancelFunc
	timer  *time.Timer
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if c.timer == nil && strings.Contains(c.buf.String(), c.text) {
		c.timer = time.AfterFunc(c.after, c.cancel)
	}
	return len(p), nil
}

// TestRunInterrupted checks that an interrupted run (Ctrl-C cancels its context) stops its children.
func TestRunInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the gateway")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := tinyOptions("direct")
	o.duration = time.Minute
	// The progress line of the first row comes once both children run, right before the load starts: cancel
	// in the middle of the load.
	rep, err := run(ctx, o, &cancelOn{text: "loadbench: direct", after: 300 * time.Millisecond, cancel: cancel})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run returned %v, want context.Canceled", err)
	}
	requireGone(t, rep.pids, 2) // no floor proxy: no floor row was selected
}

func TestParseWrk(t *testing.T) {
	const out = `Running 5s test @ http://127.0.0.1:8080/v1/chat/completions
  2 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   435.12us  200.10us   5.00ms   90.00%
    Req/Sec    37.00k     2.00k   40.00k    70.00%
  Latency Distribution
     50%  400.00us
     75%  500.00us
     90%  600.00us
     99%    1.20ms
  370000 requests in 5.00s, 100.00MB read
  Non-2xx or 3xx responses: 3700
  Socket errors: connect 0, read 1, write 0, timeout 2
Requests/sec:  74000.00
Transfer/sec:     20.00MB
`
	res, err := parseWrk(out)
	if err != nil {
		t.Fatal(err)
	}
	if res.requests != 366300 || res.errors != 3703 || res.p50 != 400*time.Microsecond || res.p99 != 1200*time.Microsecond {
		t.Errorf("parsed %+v", res)
	}
	if res.rps < 73259 || res.rps > 73261 {
		t.Errorf("requests/s %v, want 74000 less the 1%% of non-2xx answers", res.rps)
	}
	if _, err := parseWrk("wrk: connection refused"); err == nil {
		t.Error("a report without figures parsed")
	}
}

func TestWantsStream(t *testing.T) {
	tests := []struct {
		body string
		want bool
	}{
		{`{"model":"m","stream":true}`, true},
		{`{"model": "m", "stream" :  true, "messages": []}`, true},
		{`{"model":"m","stream":false}`, false},
		{`{"model":"m"}`, false},
		{`{"stream"}`, false},
	}
	for _, tc := range tests {
		if got := wantsStream([]byte(tc.body)); got != tc.want {
			t.Errorf("wantsStream(%s) = %v, want %v", tc.body, got, tc.want)
		}
	}
}

func TestSelectScenarios(t *testing.T) {
	all := scenarios(3)
	tests := []struct {
		list    string
		want    string
		wantErr bool
	}{
		{list: "all", want: strings.Join(scenarioNames, ",")},
		{list: "cached", want: "direct,cached"}, // its share needs the direct baseline of the same run
		{list: "floor", want: "direct,floor"},
		{list: "latency1, stream", want: "stream,latency1"},
		{list: "plain,nope", wantErr: true},
	}
	for _, tc := range tests {
		got, err := selectScenarios(tc.list, all)
		if (err != nil) != tc.wantErr {
			t.Errorf("%q: error %v", tc.list, err)
			continue
		}
		var names []string
		for _, s := range got {
			names = append(names, s.name)
		}
		if strings.Join(names, ",") != tc.want {
			t.Errorf("%q: %v, want %s", tc.list, names, tc.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	var lat []time.Duration
	for i := 1; i <= 200; i++ {
		lat = append(lat, time.Duration(i))
	}
	if p50, p99 := percentile(lat, 50), percentile(lat, 99); p50 != 100 || p99 != 198 {
		t.Errorf("p50 %v, p99 %v; want 100 and 198", p50, p99)
	}
	if percentile(nil, 50) != 0 {
		t.Error("no latencies must give 0")
	}
}

func TestLuaString(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/a.json": "[[/tmp/a.json]]",
		"a]]b":        "[=[a]]b]=]",
	} {
		if got := luaString(in); got != want {
			t.Errorf("luaString(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestFloorUpstream(t *testing.T) {
	if got, err := floorUpstream("127.0.0.1:8080"); err != nil || got != "http://127.0.0.1:8080"+inferencePath {
		t.Errorf("floorUpstream(127.0.0.1:8080) = %q, %v", got, err)
	}
	for _, bad := range []string{"", "10.0.0.1:80", "127.0.0.1", "127.0.0.1:0", "example.com:80", "127.0.0.1:80/x"} {
		if _, err := floorUpstream(bad); err == nil || !strings.Contains(err.Error(), floorEnv) {
			t.Errorf("floorUpstream(%q): error %v, want one naming %s", bad, err, floorEnv)
		}
	}
}
