package storage

import (
	"testing"
	"time"
)

// TestLogsStatsNeverCountAnotherWorkspace: an entry of ws2 whose metadata names ws1 (its JSON then holds
// "workspace_id":"ws1") is not ws1's; and other workspaces' entries count toward the scan bound, so a workspace
// with few entries among many of others still gets a bounded scan.
func TestLogsStatsNeverCountAnotherWorkspace(t *testing.T) {
	s := openTest(t, nil, nil)
	var es []*LogEntry
	for i := range 20 {
		es = append(es, &LogEntry{WorkspaceID: "ws2", CreatedAt: logBase.Add(time.Duration(i+1) * time.Second), Status: 500,
			Metadata: map[string]string{"workspace_id": "ws1"}})
	}
	es = append(es, &LogEntry{WorkspaceID: "ws1", CreatedAt: logBase, Status: 200}) // the oldest: read last
	if err := s.Logs.Append(es); err != nil {
		t.Fatal(err)
	}
	q := LogStatsQuery{WorkspaceID: "ws1", From: logBase, To: logBase.Add(time.Hour), Bucket: time.Hour}
	st, err := s.Logs.Stats(q)
	if err != nil || len(st.Buckets) != 1 || st.Buckets[0].Requests != 1 || st.Buckets[0].Errors != 0 || st.Truncated {
		t.Fatalf("ws1's stats = %+v, %v; want its one request", st, err)
	}
	q.MaxScan = 5
	if st, err := s.Logs.Stats(q); err != nil || !st.Truncated || len(st.Buckets) != 0 {
		t.Fatalf("bounded scan among another workspace's entries = %+v, %v", st, err)
	}
}

// TestLogsTimesPastTheStamps: a query naming a time the stamps cannot hold is an error, not a wrapped range.
func TestLogsTimesPastTheStamps(t *testing.T) {
	s := openTest(t, nil, nil)
	far := time.Unix(MaxLogUnix+1, 0)
	if _, err := s.Logs.Stats(LogStatsQuery{From: far, To: far.Add(time.Hour), Bucket: time.Hour}); err == nil {
		t.Error("stats past MaxLogUnix: no error")
	}
	if _, err := s.Logs.List(LogQuery{From: far}); err == nil {
		t.Error("list past MaxLogUnix: no error")
	}
	if _, err := s.Logs.List(LogQuery{To: time.Unix(-1, 0)}); err == nil {
		t.Error("list before 1970: no error")
	}
}
