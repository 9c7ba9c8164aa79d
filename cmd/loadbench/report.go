package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// row is one measured target. Pointers are null in JSON where a figure does not apply (a direct row has no
// gateway CPU) or could not be read (no /proc). The gateway CPU and RSS figures are the proxy's: the floor
// proxy's on the floor row.
type row struct {
	Scenario     string   `json:"scenario"`
	Through      bool     `json:"through_gateway"`
	Proxy        string   `json:"proxy,omitempty"` // "gateway" or "floor"; empty for a direct row
	Connections  int      `json:"connections"`
	Requests     int64    `json:"requests"`
	Errors       int64    `json:"errors"`
	FirstError   string   `json:"first_error,omitempty"`
	RequestsPerS float64  `json:"requests_per_s"`
	P50US        float64  `json:"p50_us"`
	P99US        float64  `json:"p99_us"`
	GatewayCPUUS *float64 `json:"gateway_cpu_us_per_request"`
	MockCPUUS    *float64 `json:"mock_cpu_us_per_request"`
	Baseline     string   `json:"baseline,omitempty"`
	Share        *float64 `json:"share_of_direct"`
	RSSBeforeKB  *int64   `json:"gateway_rss_before_kb"`
	RSSAfterKB   *int64   `json:"gateway_rss_after_kb"`
	ProcStats    bool     `json:"-"` // /proc was read (Linux)
}

// report is the whole run.
type report struct {
	Generator   string   `json:"generator"`
	GOOS        string   `json:"goos"`
	CPUs        int      `json:"cpus"`
	Connections int      `json:"connections"`
	DurationS   float64  `json:"duration_s"`
	WarmupS     float64  `json:"warmup_s"`
	Chunks      int      `json:"stream_chunks"`
	Rows        []row    `json:"rows"`
	P50AddedUS  *float64 `json:"p50_added_at_1_connection_us"`
	// OverFloorUS is the gateway's CPU per request on the plain row less the floor proxy's on the floor row.
	OverFloorUS *float64 `json:"gateway_cpu_over_floor_us"`
	Skipped     []string `json:"skipped,omitempty"`
	pids        []int    // the children this run started
}

// compare fills each proxied row's share of its direct baseline, the p50 the gateway adds at one connection and
// the gateway's CPU per request over the floor proxy's.
func (r *report) compare() {
	byName := map[string]*row{}
	for i := range r.Rows {
		byName[r.Rows[i].Scenario] = &r.Rows[i]
	}
	for i := range r.Rows {
		x := &r.Rows[i]
		if base := byName[x.Baseline]; base != nil && base.RequestsPerS > 0 {
			v := x.RequestsPerS / base.RequestsPerS
			x.Share = &v
		}
	}
	if through, direct := byName["latency1"], byName["latency1 direct"]; through != nil && direct != nil {
		v := through.P50US - direct.P50US
		r.P50AddedUS = &v
	}
	if plain, floor := byName["plain"], byName["floor"]; plain != nil && floor != nil && plain.GatewayCPUUS != nil && floor.GatewayCPUUS != nil {
		v := *plain.GatewayCPUUS - *floor.GatewayCPUUS
		r.OverFloorUS = &v
	}
}

func (r *report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeTable prints the figures as one aligned table, with what it measured above and notes below.
func (r *report) writeTable(w io.Writer) error {
	fmt.Fprintf(w, "load: %s, %d connections (latency1: 1), %gs measured after %gs warm-up; %s, %d CPUs; streams of %d chunks\n\n",
		r.Generator, r.Connections, r.DurationS, r.WarmupS, r.GOOS, r.CPUs, r.Chunks)
	// Numbers align right; the scenario names, padded here, read from the left.
	width := len("scenario")
	for _, x := range r.Rows {
		width = max(width, len(x.Scenario))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\t", width, "scenario")
	fmt.Fprintln(tw, "conns\trequests/s\tp50\tp99\tgateway CPU/req\tmock CPU/req\tshare of direct\tgateway RSS before → after\terrors\t")
	for _, x := range r.Rows {
		cpu, rss := "—", "—"
		if x.Proxy != "" {
			cpu, rss = "n/a", "n/a"
			if x.GatewayCPUUS != nil {
				cpu = fmtMicros(*x.GatewayCPUUS)
			}
			if x.RSSBeforeKB != nil {
				rss = fmt.Sprintf("%.1f → %.1f MB", float64(*x.RSSBeforeKB)/1024, float64(*x.RSSAfterKB)/1024)
			}
		}
		mockCPU := "n/a"
		if x.MockCPUUS != nil {
			mockCPU = fmtMicros(*x.MockCPUUS)
		}
		share := "1"
		if x.Proxy != "" {
			share = "—"
			if x.Share != nil {
				share = strconv.FormatFloat(*x.Share, 'f', 2, 64)
			}
		}
		fmt.Fprintf(tw, "%-*s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", width, x.Scenario, x.Connections, fmtRate(x.RequestsPerS),
			fmtMicros(x.P50US), fmtMicros(x.P99US), cpu, mockCPU, share, rss, x.Errors)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var notes []string
	if r.P50AddedUS != nil {
		notes = append(notes, fmt.Sprintf("p50 the gateway adds at 1 connection: %+.0f µs", *r.P50AddedUS))
	}
	if r.OverFloorUS != nil {
		notes = append(notes, fmt.Sprintf("gateway CPU per request over the floor: %+.1f µs", *r.OverFloorUS))
	}
	for _, x := range r.Rows {
		if x.Proxy == "floor" {
			notes = append(notes, "floor: plain's request through a minimal proxy (a fasthttp server and the gateway's upstream client, "+
				"nothing else); its gateway CPU/req and RSS are that proxy's.")
		}
	}
	for _, x := range r.Rows {
		if x.FirstError != "" {
			notes = append(notes, fmt.Sprintf("%s: %d errors, the first: %s", x.Scenario, x.Errors, x.FirstError))
		}
	}
	notes = append(notes, r.Skipped...)
	notes = append(notes, "CPU per request is the process's utime+stime over the measured window divided by the requests answered; "+
		"compare ratios of one run, absolute figures move from run to run on a shared machine.")
	fmt.Fprintln(w)
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	return nil
}

func fmtRate(v float64) string {
	s := strconv.FormatFloat(v, 'f', 0, 64)
	// Thousands separated by commas, as the tables write them.
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func fmtMicros(us float64) string {
	switch {
	case us >= 1000:
		return strconv.FormatFloat(us/1000, 'f', 2, 64) + " ms"
	case us >= 100:
		return strconv.FormatFloat(us, 'f', 0, 64) + " µs"
	default:
		return strconv.FormatFloat(us, 'f', 1, 64) + " µs"
	}
}
