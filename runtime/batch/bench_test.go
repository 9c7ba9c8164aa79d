package batch

import (
	"context"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/gateway/storage"
)

// linesReader produces an input file of n chat lines without holding it: line i is made when it is read.
type linesReader struct {
	n, i int
	buf  []byte
}

func (r *linesReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.i == r.n {
			return 0, io.EOF
		}
		user := ""
		if r.i%100 == 42 {
			user = "fail"
		}
		r.buf = append(r.buf[:0], chatLine("l-"+strconv.Itoa(r.i), user)...)
		r.buf = append(r.buf, '\n')
		r.i++
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// runBatch runs an immediate batch of n lines to the end and returns it.
func runBatch(t testing.TB, e *env, r *Runner, n int) *storage.Batch {
	t.Helper()
	b, err := r.Create(context.Background(), e.newBatch(e.fileFrom(t, &linesReader{n: n}), WindowImmediate))
	if err != nil {
		t.Fatal(err)
	}
	b = e.wait(t, r, b.ID, final)
	if b.Status != storage.BatchCompleted || b.Counts.Total != n || b.Counts.Completed+b.Counts.Failed != n {
		t.Fatalf("batch of %d lines: %+v", n, b)
	}
	return b
}

// BenchmarkImmediateBatch measures an immediate batch end to end (validation, each line through the engine
// to a local upstream with its result synced to the store, the result files written): one op is one line.
func BenchmarkImmediateBatch(b *testing.B) {
	e := newEnv(b)
	r := e.runner(b, Options{Concurrency: 8})
	b.ReportAllocs()
	b.StopTimer()
	file := e.fileFrom(b, &linesReader{n: b.N})
	b.StartTimer()
	bt, err := r.Create(context.Background(), e.newBatch(file, WindowImmediate))
	if err != nil {
		b.Fatal(err)
	}
	bt = e.wait(b, r, bt.ID, final)
	b.StopTimer()
	if bt.Counts.Total != b.N {
		b.Fatalf("batch: %+v", bt)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// peaks samples the heap in use and the process's resident set until stop is closed.
type peaks struct {
	heap, rss atomic.Uint64
	stop      chan struct{}
	done      sync.WaitGroup
}

func samplePeaks() *peaks {
	p := &peaks{stop: make(chan struct{})}
	p.done.Go(func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > p.heap.Load() {
				p.heap.Store(ms.HeapInuse)
			}
			if rss := residentBytes(); rss > p.rss.Load() {
				p.rss.Store(rss)
			}
			select {
			case <-p.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	return p
}

func (p *peaks) end() (heap, rss uint64) {
	close(p.stop)
	p.done.Wait()
	return p.heap.Load(), p.rss.Load()
}

// residentBytes is the process's resident set (Linux), 0 when unknown.
func residentBytes() uint64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestMemoryStaysFlat runs a batch of 10,000 lines and one of 100,000 and compares the peak heap in use while
// each runs: a runner that held the input, the results or a set of custom_ids in memory would need several
// more MiB for ten times the lines. Lines are 180 bytes, results about 300: the big batch moves ~50 MiB.
func TestMemoryStaysFlat(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("runs 110,000 lines; skipped with -short and -race")
	}
	// A low GOGC keeps the heap's peaks near what is live, so that the comparison sees what the runner holds
	// rather than when the collector happened to run (at the default, peaks moved by several MiB run to run).
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	e := newEnv(t)
	r := e.runner(t, Options{Concurrency: 8})
	measure := func(n int) (heap, rss uint64, took time.Duration) {
		runtime.GC()
		p := samplePeaks()
		start := time.Now()
		runBatch(t, e, r, n)
		took = time.Since(start)
		heap, rss = p.end()
		return heap, rss, took
	}
	measure(1000) // warm up: pools, connections, pebble's caches
	smallHeap, smallRSS, smallTook := measure(10_000)
	bigHeap, bigRSS, bigTook := measure(100_000)
	t.Logf("10,000 lines: peak heap in use %.1f MiB, peak RSS %.1f MiB, %v (%.0f lines/s)",
		mib(smallHeap), mib(smallRSS), smallTook.Round(time.Millisecond), 10_000/smallTook.Seconds())
	t.Logf("100,000 lines: peak heap in use %.1f MiB, peak RSS %.1f MiB, %v (%.0f lines/s)",
		mib(bigHeap), mib(bigRSS), bigTook.Round(time.Millisecond), 100_000/bigTook.Seconds())
	if bigHeap > smallHeap+4<<20 {
		t.Errorf("peak heap grew from %.1f MiB to %.1f MiB with ten times the lines: it must stay flat", mib(smallHeap), mib(bigHeap))
	}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }
