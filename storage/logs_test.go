package storage

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// logBase is the creation time of the first entry logsAt makes.
var logBase = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// logsAt appends one entry per second from logBase, entry i with model "m<i>", status 200 or (odd i) 500, in
// workspace ws[i%len(ws)], and returns them oldest first.
func logsAt(t *testing.T, s *Store, n int, ws ...string) []*LogEntry {
	t.Helper()
	var out []*LogEntry
	for i := range n {
		status := 200
		if i%2 == 1 {
			status = 500
		}
		e := &LogEntry{TraceID: "trace-" + string(rune('a'+i)), CreatedAt: logBase.Add(time.Duration(i) * time.Second),
			WorkspaceID: ws[i%len(ws)], Endpoint: "chat/completions", Provider: "openai", Model: "m" + string(rune('0'+i)),
			Status: status, Latency: 1500 * time.Microsecond, Metadata: map[string]string{"team": []string{"red", "blue"}[i%2]}}
		out = append(out, e)
	}
	if err := s.Logs.Append(out); err != nil {
		t.Fatal(err)
	}
	return out
}

func logIDs(es []*LogEntry) []string {
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.ID
	}
	return ids
}

func newestFirst(es []*LogEntry) []string {
	ids := logIDs(es)
	slices.Reverse(ids)
	return ids
}

func TestLogsAppendAndGet(t *testing.T) {
	s := openTest(t, nil, nil)
	es := logsAt(t, s, 3, "ws1")
	for _, e := range es {
		if !ValidLogID(e.ID) || !ValidID(e.ID) {
			t.Fatalf("ID %q is not a valid log ID", e.ID)
		}
	}
	got, err := s.Logs.Get("ws1", es[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	if !got.CreatedAt.Equal(es[1].CreatedAt) || got.Model != "m1" || got.Latency != 1500*time.Microsecond || got.Status != 500 {
		t.Fatalf("Get = %+v, want %+v", got, es[1])
	}
	if _, err := s.Logs.Get("ws2", es[1].ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get from another workspace: %v, want ErrNotFound", err)
	}
	if _, err := s.Logs.Get("", es[1].ID); err != nil {
		t.Fatalf("Get from any workspace: %v", err)
	}
	for _, id := range []string{"log_nope", "file-123", es[1].ID + "0", ""} {
		if _, err := s.Logs.Get("", id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q) = %v, want ErrNotFound", id, err)
		}
	}
}

func TestLogsJSONView(t *testing.T) {
	e := &LogEntry{ID: "log_x", CreatedAt: time.Unix(1700000000, 5), WorkspaceID: "w", Status: 200,
		Latency: 1234567 * time.Nanosecond, Usage: LogUsage{InputTokens: 3, OutputTokens: 4, Known: true, Estimated: true}}
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"created_at":1700000000`, `"latency_ms":1.234`, `"usage":{"input_tokens":3,"output_tokens":4,"estimated":true}`,
		`"cost_usd":null`, `"metadata":{}`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("%s lacks %s", raw, want)
		}
	}
	if strings.Contains(string(raw), `"request"`) {
		t.Errorf("%s has a request without one", raw)
	}
	e.Usage, e.CostUSD, e.CostKnown = LogUsage{}, 0.25, true
	raw, _ = json.Marshal(e)
	if !strings.Contains(string(raw), `"usage":null`) || !strings.Contains(string(raw), `"cost_usd":0.25`) {
		t.Errorf("%s: want usage null and cost 0.25", raw)
	}
}

func TestLogsListNewestFirstAndPaged(t *testing.T) {
	s := openTest(t, nil, nil)
	es := logsAt(t, s, 7, "ws1", "ws2")
	page, err := s.Logs.List(LogQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := logIDs(page.Entries), newestFirst(es); !slices.Equal(got, want) || page.HasMore {
		t.Fatalf("List = %v (more %v), want %v", got, page.HasMore, want)
	}
	// Pages of 3 by cursor cover every entry once, in order.
	var walked []string
	after := ""
	for range 10 {
		page, err := s.Logs.List(LogQuery{Limit: 3, After: after})
		if err != nil {
			t.Fatal(err)
		}
		walked = append(walked, logIDs(page.Entries)...)
		if !page.HasMore {
			break
		}
		if page.Next != page.Entries[len(page.Entries)-1].ID {
			t.Fatalf("Next = %q, want the last entry's ID", page.Next)
		}
		after = page.Next
	}
	if want := newestFirst(es); !slices.Equal(walked, want) {
		t.Fatalf("pages walked %v, want %v", walked, want)
	}
	// A workspace's list holds only its own entries.
	page, err = s.Logs.List(LogQuery{WorkspaceID: "ws2"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := logIDs(page.Entries), []string{es[5].ID, es[3].ID, es[1].ID}; !slices.Equal(got, want) {
		t.Fatalf("ws2 = %v, want %v", got, want)
	}
	if _, err := s.Logs.List(LogQuery{After: "nope"}); err == nil {
		t.Fatal("List after a non-ID: no error")
	}
}

func TestLogsFilters(t *testing.T) {
	s := openTest(t, nil, nil)
	es := logsAt(t, s, 6, "ws1")
	sec := func(i int) time.Time { return es[i].CreatedAt }
	tests := []struct {
		name string
		q    LogQuery
		want []int // indexes into es, newest first
	}{
		{"status", LogQuery{Status: 500}, []int{5, 3, 1}},
		{"model", LogQuery{Model: "m2"}, []int{2}},
		{"trace", LogQuery{TraceID: "trace-e"}, []int{4}},
		{"provider", LogQuery{Provider: "anthropic"}, nil},
		{"metadata", LogQuery{Metadata: map[string]string{"team": "red"}}, []int{4, 2, 0}},
		{"metadata missing key", LogQuery{Metadata: map[string]string{"team": "red", "env": "prod"}}, nil},
		{"from", LogQuery{From: sec(3)}, []int{5, 4, 3}},
		{"to", LogQuery{To: sec(1)}, []int{1, 0}},
		{"from and to", LogQuery{From: sec(2), To: sec(3)}, []int{3, 2}},
		{"to before from", LogQuery{From: sec(3), To: sec(2)}, nil},
		{"from, workspace and status", LogQuery{WorkspaceID: "ws1", From: sec(2), Status: 200}, []int{4, 2}},
		{"other workspace", LogQuery{WorkspaceID: "ws9"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			page, err := s.Logs.List(tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, i := range tc.want {
				want = append(want, es[i].ID)
			}
			if got := logIDs(page.Entries); !slices.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
	}
}

// TestLogsScanBound shows that a query reads at most MaxScan entries and gives a cursor that goes on from there.
func TestLogsScanBound(t *testing.T) {
	s := openTest(t, nil, nil)
	es := logsAt(t, s, 6, "ws1")
	q := LogQuery{Model: "m0", MaxScan: 4}
	page, err := s.Logs.List(q)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 0 || !page.HasMore || page.Next != es[2].ID {
		t.Fatalf("first page = %v, more %v, next %q; want none, more, next %s", logIDs(page.Entries), page.HasMore, page.Next, es[2].ID)
	}
	q.After = page.Next
	if page, err = s.Logs.List(q); err != nil {
		t.Fatal(err)
	}
	if got := logIDs(page.Entries); !slices.Equal(got, []string{es[0].ID}) || page.HasMore {
		t.Fatalf("second page = %v, more %v; want %s alone", got, page.HasMore, es[0].ID)
	}
}

func TestLogsBodiesApart(t *testing.T) {
	s := openTest(t, nil, nil)
	e := &LogEntry{WorkspaceID: "ws1", CreatedAt: logBase, Status: 200, Request: json.RawMessage(`{"model":"m"}`),
		Response: json.RawMessage(`"cut"`), ResponseTruncated: true}
	plain := &LogEntry{WorkspaceID: "ws1", CreatedAt: logBase.Add(time.Second), Status: 200}
	if err := s.Logs.Append([]*LogEntry{e, plain}); err != nil {
		t.Fatal(err)
	}
	page, err := s.Logs.List(LogQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range page.Entries {
		if got.Request != nil || got.Response != nil {
			t.Fatalf("a listed entry has bodies: %+v", got)
		}
	}
	got, err := s.Logs.Get("ws1", e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Request != nil {
		t.Fatal("Get read the bodies")
	}
	if err := s.Logs.GetBodies(got); err != nil {
		t.Fatal(err)
	}
	if string(got.Request) != `{"model":"m"}` || string(got.Response) != `"cut"` || !got.ResponseTruncated || got.RequestTruncated {
		t.Fatalf("bodies = %s %s (truncated %v %v)", got.Request, got.Response, got.RequestTruncated, got.ResponseTruncated)
	}
	other, _ := s.Logs.Get("ws1", plain.ID)
	if err := s.Logs.GetBodies(other); err != nil || other.Request != nil || other.Response != nil {
		t.Fatalf("an entry without bodies: %v, %s %s", err, other.Request, other.Response)
	}
}

func TestLogsDeleteBefore(t *testing.T) {
	s := openTest(t, nil, nil)
	es := logsAt(t, s, 6, "ws1", "ws2", "ws3")
	es[0].Request = json.RawMessage(`{}`)
	es[0].ID = ""
	if err := s.Logs.Append(es[:1]); err != nil { // again, with a body, under a new ID
		t.Fatal(err)
	}
	if err := s.Logs.DeleteBefore(es[3].CreatedAt); err != nil {
		t.Fatal(err)
	}
	page, err := s.Logs.List(LogQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := logIDs(page.Entries), []string{es[5].ID, es[4].ID, es[3].ID}; !slices.Equal(got, want) {
		t.Fatalf("after the sweep: %v, want %v", got, want)
	}
	for i, ws := range []string{"ws1", "ws2", "ws3"} {
		page, err := s.Logs.List(LogQuery{WorkspaceID: ws})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := logIDs(page.Entries), []string{es[i+3].ID}; !slices.Equal(got, want) {
			t.Fatalf("%s after the sweep: %v, want %v", ws, got, want)
		}
	}
	if _, err := s.Logs.Get("", es[0].ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a swept entry: %v", err)
	}
	swept := &LogEntry{ID: es[0].ID}
	if err := s.Logs.GetBodies(swept); err != nil || swept.Request != nil {
		t.Fatalf("the swept entry's bodies: %s, %v; want gone", swept.Request, err)
	}
}

// TestLogsDeleteBeforeBodies shows that the sweep deletes the bodies of the entries it deletes, and only theirs.
func TestLogsDeleteBeforeBodies(t *testing.T) {
	s := openTest(t, nil, nil)
	var es []*LogEntry
	for i := range 4 {
		es = append(es, &LogEntry{WorkspaceID: "ws1", CreatedAt: logBase.Add(time.Duration(i) * time.Second), Status: 200,
			Request: json.RawMessage(`{"n":` + string(rune('0'+i)) + `}`)})
	}
	if err := s.Logs.Append(es); err != nil {
		t.Fatal(err)
	}
	if err := s.Logs.DeleteBefore(es[2].CreatedAt); err != nil {
		t.Fatal(err)
	}
	for i, e := range es {
		got := &LogEntry{ID: e.ID}
		if err := s.Logs.GetBodies(got); err != nil {
			t.Fatal(err)
		}
		if kept := got.Request != nil; kept != (i >= 2) {
			t.Fatalf("entry %d: bodies %s after the sweep, want them kept: %v", i, got.Request, i >= 2)
		}
	}
}

// TestLogsAppendWritesOneRun holds the key layout to what keeps pebble from rewriting older entries: every key
// one Append writes, bodies included, sorts in one run that no older key interrupts (an index per workspace, or
// bodies keyed apart from the entries, would interleave), so that compactions mostly move such runs down the levels.
func TestLogsAppendWritesOneRun(t *testing.T) {
	s := openTest(t, nil, nil)
	batch := func(from time.Time) []*LogEntry {
		var es []*LogEntry
		for i := range 6 {
			e := &LogEntry{WorkspaceID: []string{"ws1", "ws2", "ws3"}[i%3], CreatedAt: from.Add(time.Duration(i) * time.Millisecond), Status: 200}
			if i%2 == 0 {
				e.Request, e.Response = json.RawMessage(`{"q":1}`), json.RawMessage(`{"a":2}`)
			}
			es = append(es, e)
		}
		if err := s.Logs.Append(es); err != nil {
			t.Fatal(err)
		}
		return es
	}
	batch(logBase)
	newer := batch(logBase.Add(time.Minute))
	batch(logBase.Add(-time.Minute)) // older still, as a late batch may be
	mine := map[string]bool{}
	for _, e := range newer {
		stamp, _ := logStampOf(e.ID)
		mine[string(key(tableLog, stamp))] = true
		if e.Request != nil {
			mine[string(appendReversedLogStamp(prefix(tableLogBody), stamp))] = true
		}
	}
	var run []bool // for every stored key in order: written by the newer batch
	if err := s.scan(nil, func(k, _ []byte) error { run = append(run, mine[string(k)]); return nil }); err != nil {
		t.Fatal(err)
	}
	first := slices.Index(run, true)
	n := 0
	for first+n < len(run) && run[first+n] {
		n++
	}
	if first < 0 || n != len(mine) {
		t.Fatalf("the newer batch's %d keys sort in a run of %d (keys in order, true for the batch's: %v)", len(mine), n, run)
	}
}

func BenchmarkLogsAppend(b *testing.B) {
	s := openTest(b, nil, nil)
	batch := make([]*LogEntry, 256)
	b.ReportAllocs()
	for b.Loop() {
		for i := range batch {
			batch[i] = &LogEntry{WorkspaceID: "ws1", TraceID: "t", Status: 200, Model: "m", Metadata: map[string]string{"k": "v"}}
		}
		if err := s.Logs.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAppendLogEntryMatchesEncodingJSON: the hand encoder writes exactly what encoding/json writes of the view.
func TestAppendLogEntryMatchesEncodingJSON(t *testing.T) {
	entries := []*LogEntry{
		{},
		{ID: "log_x", TraceID: "t<&>\u2028\"\\\n\t\x01\x7f é 日本", CreatedAt: time.Unix(1795628432, 5), WorkspaceID: "w",
			Endpoint: "chat/completions", Provider: "openai", Model: "gpt-4o-mini\xff", Status: 200,
			Latency: 1757 * time.Microsecond, UpstreamLatency: 919 * time.Microsecond, Target: "config.targets[1]",
			Retries: 2, CacheStatus: "MISS", Usage: LogUsage{InputTokens: 21, OutputTokens: 3, Known: true, Estimated: true},
			CostUSD: 0.00000195, CostKnown: true, Metadata: map[string]string{"z": "1", "a": "\x00", "m": "<b>"},
			Request: json.RawMessage(`{"model":"m"}`), Response: json.RawMessage(`"cut"`), ResponseTruncated: true},
		{CostUSD: 5e-7, CostKnown: true, Usage: LogUsage{Known: true}, Latency: 3 * time.Hour, Metadata: map[string]string{}},
		{CostUSD: 1e22, CostKnown: true, RequestTruncated: true, Request: json.RawMessage(`"x"`)},
		{Detailed: true}, // route [] and hook_results null
		{Detailed: true, Route: []LogRouteStep{
			{Path: "config.targets[0]", Provider: "openai", Status: 502, Latency: 12500 * time.Microsecond, Outcome: RouteError, Error: "down <\\"},
			{Path: "config.targets[1]", Provider: "anthropic", Attempt: 1, Status: 200, Latency: time.Millisecond, Outcome: RouteOK},
		}, HookResults: json.RawMessage(`{"before_request_hooks":[{"id":"g"}],"after_request_hooks":[]}`)},
		{Route: []LogRouteStep{{Path: "config"}}, HookResults: json.RawMessage(`{}`)}, // not Detailed: left out
		{Endpoint: "/mcp", Tool: "read_file", MCPServer: "docs<&>", Status: 446},
		{Endpoint: "/mcp", MCPServer: "docs"},
	}
	for i, e := range entries {
		v := logEntryJSON{ID: e.ID, TraceID: e.TraceID, CreatedAt: e.CreatedAt.Unix(), WorkspaceID: e.WorkspaceID,
			Endpoint: e.Endpoint, Tool: e.Tool, MCPServer: e.MCPServer, Provider: e.Provider, Model: e.Model, Status: e.Status,
			LatencyMS: durationMS(e.Latency), UpstreamLatencyMS: durationMS(e.UpstreamLatency), Target: e.Target,
			Retries: e.Retries, CacheStatus: e.CacheStatus, Metadata: e.Metadata,
			Request: e.Request, RequestTruncated: e.RequestTruncated, Response: e.Response, ResponseTruncated: e.ResponseTruncated}
		if v.Metadata == nil {
			v.Metadata = map[string]string{}
		}
		if e.Usage.Known {
			v.Usage = &logUsageJSON{InputTokens: e.Usage.InputTokens, OutputTokens: e.Usage.OutputTokens, Estimated: e.Usage.Estimated}
		}
		if e.CostKnown {
			v.CostUSD = &e.CostUSD
		}
		if e.Detailed {
			route := []logRouteStepJSON{}
			for _, s := range e.Route {
				route = append(route, logRouteStepJSON{Path: s.Path, Provider: s.Provider, Attempt: s.Attempt, Status: s.Status,
					LatencyMS: durationMS(s.Latency), Outcome: s.Outcome, Error: s.Error})
			}
			hooks := e.HookResults
			v.Route, v.HookResults = &route, &hooks
		}
		var enc bytes.Buffer
		je := json.NewEncoder(&enc)
		je.SetEscapeHTML(false)
		if err := je.Encode(v); err != nil {
			t.Fatal(err)
		}
		want := bytes.TrimSuffix(enc.Bytes(), []byte("\n"))
		if got := appendLogEntry(nil, e, true); string(got) != string(want) {
			t.Errorf("entry %d:\n got %s\nwant %s", i, got, want)
		}
	}
	e := entries[5]
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() { buf = appendLogEntry(buf[:0], e, true) }); n != 0 {
		t.Errorf("appendLogEntry allocates %v times", n)
	}
}

// TestLogsWorkspaceList shows a workspace's list without an index: another workspace's entry is not listed,
// even with the workspace's ID in its metadata, and the entries skipped count towards the scan bound, with a
// cursor to go on from.
func TestLogsWorkspaceList(t *testing.T) {
	s := openTest(t, nil, nil)
	es := logsAt(t, s, 6, "ws1", "ws2", "ws2")
	es[5].ID, es[5].Metadata = "", map[string]string{"workspace_id": "ws1"} // ws2's, naming ws1
	if err := s.Logs.Append(es[5:]); err != nil {
		t.Fatal(err)
	}
	page, err := s.Logs.List(LogQuery{WorkspaceID: "ws1"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := logIDs(page.Entries), []string{es[3].ID, es[0].ID}; !slices.Equal(got, want) || page.HasMore {
		t.Fatalf("ws1 = %v (more %v), want %v", got, page.HasMore, want)
	}
	// Newest first: es[5] (again), es[5], es[4], es[3]; a bound of 3 reads none of ws1's.
	page, err = s.Logs.List(LogQuery{WorkspaceID: "ws1", MaxScan: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 0 || !page.HasMore || page.Next != es[4].ID {
		t.Fatalf("bounded page = %v, more %v, next %q; want none, more, next %s", logIDs(page.Entries), page.HasMore, page.Next, es[4].ID)
	}
	page, err = s.Logs.List(LogQuery{WorkspaceID: "ws1", MaxScan: 3, After: page.Next})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := logIDs(page.Entries), []string{es[3].ID}; !slices.Equal(got, want) || !page.HasMore {
		t.Fatalf("next bounded page = %v, more %v; want %v, more", got, page.HasMore, want)
	}
}

// TestLogsEarlierLayout reads and sweeps what earlier versions wrote: a workspace index under logws/ (dropped
// by the first sweep) and bodies under logbody/<stamp> (read by GetBodies, swept with their entries).
func TestLogsEarlierLayout(t *testing.T) {
	s := openTest(t, nil, nil)
	es := logsAt(t, s, 2, "ws1")
	for _, e := range es {
		stamp, _ := logStampOf(e.ID)
		if err := s.db.Set(key(tableLogWSLegacy, e.WorkspaceID, stamp), nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.db.Set(key(tableLogBodyLegacy, stamp), []byte(`{"request":{"old":true}}`), nil); err != nil {
			t.Fatal(err)
		}
	}
	got := &LogEntry{ID: es[1].ID}
	if err := s.Logs.GetBodies(got); err != nil || string(got.Request) != `{"old":true}` {
		t.Fatalf("bodies stored the earlier way: %s, %v", got.Request, err)
	}
	if err := s.Logs.DeleteBefore(es[1].CreatedAt); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"", `{"old":true}`} {
		got := &LogEntry{ID: es[i].ID}
		if err := s.Logs.GetBodies(got); err != nil || string(got.Request) != want {
			t.Fatalf("entry %d's earlier bodies after the sweep: %s, %v; want %q", i, got.Request, err, want)
		}
	}
	if found, err := s.Logs.anyKey(prefix(tableLogWSLegacy), prefixEnd(prefix(tableLogWSLegacy))); err != nil || found {
		t.Fatalf("the earlier index after a sweep: present %v, %v", found, err)
	}
}

// TestAppendMSMatchesFloat holds appendMS to appendJSONFloat's text of the same milliseconds.
func TestAppendMSMatchesFloat(t *testing.T) {
	ds := []time.Duration{0, time.Microsecond, 10 * time.Microsecond, 100 * time.Microsecond, 1500 * time.Microsecond,
		1010 * time.Microsecond, 999 * time.Nanosecond, -1500 * time.Microsecond, 812*time.Millisecond + 7*time.Microsecond,
		time.Hour + 1, 1e15 * time.Microsecond / 1000 * 999, math.MaxInt64, math.MinInt64}
	for i := range 10_000 {
		ds = append(ds, time.Duration(uint64(i)*0x9E3779B97F4A7C15>>(i%60)))
	}
	for _, d := range ds {
		if got, want := string(appendMS(nil, d)), string(appendJSONFloat(nil, durationMS(d))); got != want {
			t.Fatalf("appendMS(%d) = %s, want %s", d, got, want)
		}
	}
}

// TestLogsRouteStoredApart: an entry's route and hook results are stored with its detail, without bodies too,
// read back by GetBodies (and then in the JSON view), and never by a list.
func TestLogsRouteStoredApart(t *testing.T) {
	s := openTest(t, nil, nil)
	route := []LogRouteStep{
		{Path: "config.targets[0]", Provider: "openai", Outcome: RouteCircuitOpen},
		{Path: "config.targets[1]", Provider: "openai", Attempt: 2, Status: 200, Latency: 1500 * time.Microsecond, Outcome: RouteOK},
	}
	e := &LogEntry{WorkspaceID: "ws1", CreatedAt: logBase, Status: 200, Route: route,
		HookResults: json.RawMessage(`{"before_request_hooks":[],"after_request_hooks":[]}`)}
	plain := &LogEntry{WorkspaceID: "ws1", CreatedAt: logBase.Add(time.Second), Status: 200}
	if err := s.Logs.Append([]*LogEntry{e, plain}); err != nil {
		t.Fatal(err)
	}
	page, err := s.Logs.List(LogQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range page.Entries {
		if got.Route != nil || got.HookResults != nil || got.Detailed {
			t.Fatalf("a listed entry has its detail: %+v", got)
		}
		if b, _ := json.Marshal(got); bytes.Contains(b, []byte(`"route"`)) {
			t.Fatalf("a listed entry's view has a route: %s", b)
		}
	}
	got, _ := s.Logs.Get("ws1", e.ID)
	if err := s.Logs.GetBodies(got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Route, route) || string(got.HookResults) != string(e.HookResults) || got.Request != nil {
		t.Fatalf("detail = %+v %s", got.Route, got.HookResults)
	}
	view, _ := json.Marshal(got)
	var back LogEntry
	if err := json.Unmarshal(view, &back); err != nil || !slices.Equal(back.Route, route) || !back.Detailed {
		t.Fatalf("view %s read back as %+v (%v)", view, back.Route, err)
	}
	other, _ := s.Logs.Get("ws1", plain.ID)
	if err := s.Logs.GetBodies(other); err != nil {
		t.Fatal(err)
	}
	if view, _ := json.Marshal(other); !bytes.Contains(view, []byte(`"route":[],"hook_results":null}`)) {
		t.Fatalf("an entry without a route: %s", view)
	}
}

// TestLogsStatsBounds: past LogStatsSample requests a bucket's percentiles come from a sample that still
// reflects them, and a scan past MaxScan counts the newest entries and says it was truncated.
func TestLogsStatsBounds(t *testing.T) {
	s := openTest(t, nil, nil)
	const n = 3 * LogStatsSample
	es := make([]*LogEntry, n)
	for i := range es {
		es[i] = &LogEntry{WorkspaceID: "ws1", CreatedAt: logBase.Add(time.Duration(i) * time.Millisecond), Status: 200,
			Latency: time.Duration(i%100+1) * time.Millisecond}
	}
	if err := s.Logs.Append(es); err != nil {
		t.Fatal(err)
	}
	q := LogStatsQuery{WorkspaceID: "ws1", From: logBase, To: logBase.Add(time.Hour), Bucket: time.Hour}
	st, err := s.Logs.Stats(q)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Buckets) != 1 || st.Buckets[0].Requests != n || st.Truncated {
		t.Fatalf("stats = %+v", st)
	}
	if b := st.Buckets[0]; b.P50 < 45*time.Millisecond || b.P50 > 55*time.Millisecond || b.P99 < 97*time.Millisecond {
		t.Errorf("p50 %v p99 %v, want about 50 ms and 99 ms", b.P50, b.P99)
	}
	q.MaxScan = 10
	if st, err := s.Logs.Stats(q); err != nil || !st.Truncated || st.Buckets[0].Requests != 10 {
		t.Fatalf("bounded scan = %+v, %v", st, err)
	}
	if st, err := s.Logs.Stats(LogStatsQuery{WorkspaceID: "ws2", From: logBase, To: logBase.Add(time.Hour), Bucket: time.Hour}); err != nil || len(st.Buckets) != 0 {
		t.Fatalf("another workspace = %+v, %v", st, err)
	}
}

// TestLogsImpliedRouteWritesOneKey: the route most requests take (one target, called once, that answered) is
// rebuilt from the entry, so such an entry writes one key; any other route is stored apart.
func TestLogsImpliedRouteWritesOneKey(t *testing.T) {
	s := openTest(t, nil, nil)
	step := LogRouteStep{Path: "config", Provider: "openai", Status: 200, Latency: 1500 * time.Microsecond, Outcome: RouteOK}
	simple := &LogEntry{WorkspaceID: "ws1", CreatedAt: logBase, Status: 200, Provider: "openai", Target: "config",
		UpstreamLatency: 1500 * time.Microsecond, Route: []LogRouteStep{step}}
	retried := &LogEntry{WorkspaceID: "ws1", CreatedAt: logBase.Add(time.Second), Status: 200, Provider: "openai", Target: "config",
		UpstreamLatency: 3 * time.Millisecond, Route: []LogRouteStep{{Path: "config", Provider: "openai", Status: 502, Outcome: RouteError, Error: "bad gateway"},
			{Path: "config", Provider: "openai", Attempt: 1, Status: 200, Latency: 1500 * time.Microsecond, Outcome: RouteOK}}}
	if err := s.Logs.Append([]*LogEntry{simple, retried}); err != nil {
		t.Fatal(err)
	}
	it, err := s.db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	details := 0
	for it.First(); it.Valid(); it.Next() {
		if bytes.HasPrefix(it.Key(), prefix(tableLogBody)) {
			details++
		}
	}
	it.Close()
	if details != 1 {
		t.Fatalf("%d detail keys for an implied route and a retried one, want 1", details)
	}
	for _, e := range []*LogEntry{simple, retried} {
		got, _ := s.Logs.Get("ws1", e.ID)
		if err := s.Logs.GetBodies(got); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Route, e.Route) {
			t.Fatalf("route of %s = %+v, want %+v", e.ID, got.Route, e.Route)
		}
	}
}
