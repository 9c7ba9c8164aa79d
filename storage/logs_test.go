package storage

import (
	"bytes"
	"encoding/json"
	"errors"
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
	stamp, _ := logStampOf(es[0].ID)
	if _, err := s.get(key(tableLogBody, stamp)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the swept entry's bodies: %v, want gone", err)
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
	}
	for i, e := range entries {
		v := logEntryJSON{ID: e.ID, TraceID: e.TraceID, CreatedAt: e.CreatedAt.Unix(), WorkspaceID: e.WorkspaceID,
			Endpoint: e.Endpoint, Provider: e.Provider, Model: e.Model, Status: e.Status,
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
	e := entries[1]
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() { buf = appendLogEntry(buf[:0], e, true) }); n != 0 {
		t.Errorf("appendLogEntry allocates %v times", n)
	}
}
