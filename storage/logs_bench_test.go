//go:build unix

package storage

import (
	"fmt"
	"syscall"
	"testing"
	"time"
)

// BenchmarkLogAppend writes request log entries the way reqlog does (batches of 256, unsynced) into a store on
// disk, and counts what storing them costs beyond the foreground: the process's CPU time per entry (flushes and
// compactions run on pebble's goroutines), and the bytes written to the WAL, flushed and compacted per entry.
// Flushes and compactions are waited for before the clock stops. Compaction work grows with the volume written,
// so compare runs of one fixed size: go test -run - -bench LogAppend -benchtime 300000x ./storage
func BenchmarkLogAppend(b *testing.B) {
	for _, bc := range []struct {
		name   string
		bodies bool
	}{{"fields", false}, {"bodies", true}} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := Open(b.TempDir(), Options{MasterKey: testMasterKey(1), Logger: quietLogger()})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			workspaces := []string{NewUUID(), NewUUID(), NewUUID(), NewUUID()}
			request := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Summarise the following paragraph in one sentence: the quick brown fox jumps over the lazy dog, again and again, until the dog finally wakes up and chases it away."}],"temperature":0.2,"max_tokens":256}`)
			response := []byte(`{"id":"chatcmpl-9x8y7z","object":"chat.completion","created":1732560000,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":"A persistent fox keeps jumping over a sleepy dog until the dog wakes and chases it off."},"finish_reason":"stop"}],"usage":{"prompt_tokens":61,"completion_tokens":19,"total_tokens":80}}`)
			const batchSize = 256 // reqlog.DefaultBatchSize
			batch := make([]*LogEntry, 0, batchSize)
			start := time.Now()
			before := s.pdb.Metrics()
			cpuBefore := processCPU(b)
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				// One entry every 50 µs, in the order the requests end: a request's entry carries its start,
				// up to 2 ms earlier than the one before it.
				created := start.Add(time.Duration(i)*50*time.Microsecond - time.Duration(i*7919%40)*50*time.Microsecond)
				e := &LogEntry{TraceID: fmt.Sprintf("%032x", i), CreatedAt: created,
					WorkspaceID: workspaces[i%len(workspaces)], Endpoint: "chat/completions", Provider: "openai",
					Model: "gpt-4o-mini", Status: 200, Latency: 812 * time.Millisecond, UpstreamLatency: 790 * time.Millisecond,
					Target: "config.targets[0]", CacheStatus: "MISS", CostUSD: 0.0000213, CostKnown: true,
					Usage:    LogUsage{InputTokens: 61, OutputTokens: 19, Known: true},
					Metadata: map[string]string{"user": "u-1234", "feature": "summaries"}}
				if bc.bodies {
					e.Request, e.Response = request, response
				}
				i++
				if batch = append(batch, e); len(batch) == batchSize {
					if err := s.Logs.Append(batch); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
			}
			if err := s.Logs.Append(batch); err != nil {
				b.Fatal(err)
			}
			if err := s.pdb.Flush(); err != nil {
				b.Fatal(err)
			}
			waitCompactions(s)
			b.StopTimer()
			cpu := processCPU(b) - cpuBefore
			after := s.pdb.Metrics()
			var compacted, flushed uint64
			for l := range after.Levels {
				compacted += after.Levels[l].TableBytesCompacted - before.Levels[l].TableBytesCompacted
				flushed += after.Levels[l].TableBytesFlushed - before.Levels[l].TableBytesFlushed
			}
			n := float64(i)
			b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/entry")
			b.ReportMetric(float64(after.WAL.BytesWritten-before.WAL.BytesWritten)/n, "wal-B/entry")
			b.ReportMetric(float64(flushed)/n, "flushed-B/entry")
			b.ReportMetric(float64(compacted)/n, "compacted-B/entry")
			b.ReportMetric(float64(after.DiskSpaceUsage())/n, "disk-B/entry")
		})
	}
}

// waitCompactions returns once pebble has had no flush or compaction running for a while.
func waitCompactions(s *Store) {
	for idle := 0; idle < 5; {
		m := s.pdb.Metrics()
		if m.Compact.NumInProgress == 0 && m.Flush.NumInProgress == 0 {
			idle++
		} else {
			idle = 0
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processCPU is the user and system CPU time the process has used, on all its threads.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLogList reads the newest page of one workspace's entries when it has one entry in every `every` of
// the log: what a workspace's list costs without an index of its own.
func BenchmarkLogList(b *testing.B) {
	for _, every := range []int{1, 4, 100} {
		b.Run(fmt.Sprintf("1in%d", every), func(b *testing.B) {
			s := openTest(b, nil, nil)
			mine, other := NewUUID(), NewUUID()
			start := time.Now()
			batch := make([]*LogEntry, 0, 256)
			for i := range 20_000 {
				ws := other
				if i%every == 0 {
					ws = mine
				}
				batch = append(batch, &LogEntry{TraceID: fmt.Sprintf("%032x", i), CreatedAt: start.Add(time.Duration(i) * time.Millisecond),
					WorkspaceID: ws, Endpoint: "chat/completions", Provider: "openai", Model: "gpt-4o-mini", Status: 200,
					Metadata: map[string]string{"user": "u-1234"}})
				if len(batch) == cap(batch) {
					if err := s.Logs.Append(batch); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				page, err := s.Logs.List(LogQuery{WorkspaceID: mine})
				if err != nil || len(page.Entries) != DefaultLogLimit {
					b.Fatalf("List = %d entries, %v", len(page.Entries), err)
				}
			}
		})
	}
}
