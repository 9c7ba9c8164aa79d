//go:build unix

package ratelimit

import (
	"syscall"
	"testing"
	"time"
)

// reportCPU adds the process's CPU time (user and system) per operation to the benchmark's figures: with Redis
// the wall time per operation is mostly Redis's and the network's, and this is what the gateway pays.
func reportCPU(b *testing.B) func() {
	start := processCPU(b)
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(processCPU(b)-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
