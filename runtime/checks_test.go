package runtime

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/llmgw/gateway/guardrails"
)

// TestCheckErrorCountsHammer: many goroutines count errors of the same and of new check ids at once; nothing
// is lost, and past maxCountedChecks ids the rest count under otherChecks.
func TestCheckErrorCountsHammer(t *testing.T) {
	e := New(nil, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	const workers, each = 16, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				e.countCheckError("default.webhook")
				e.countCheckError(fmt.Sprintf("p%d.c%d", w, i)) // 8000 ids: far past the bound
			}
		})
	}
	wg.Wait()
	got := e.CheckErrors()
	if got["default.webhook"] != workers*each {
		t.Errorf("default.webhook counted %d, want %d", got["default.webhook"], workers*each)
	}
	var total int64
	for _, n := range got {
		total += n
	}
	if total != 2*workers*each {
		t.Errorf("total %d, want %d", total, 2*workers*each)
	}
	if len(got) > maxCountedChecks+1 || got[otherChecks] == 0 {
		t.Errorf("%d ids counted apart (other: %d), want at most %d", len(got), got[otherChecks], maxCountedChecks+1)
	}
}

// TestCheckErroredWithoutARequest: a report from a Set run outside the engine's pipeline (no requestView) is
// still logged and counted, without a trace ID.
func TestCheckErroredWithoutARequest(t *testing.T) {
	var b strings.Builder
	var mu sync.Mutex
	e := New(nil, Options{Logger: slog.New(slog.NewTextHandler(&checkLogWriter{w: &b, mu: &mu}, nil))})
	e.checkErrored(nil, guardrails.CheckError{Stage: guardrails.StageBefore, HookID: "g", CheckID: "pii.detect", Plugin: "pii",
		Err: "boom\nstack trace line", Failed: true})
	mu.Lock()
	line := b.String()
	mu.Unlock()
	for _, want := range []string{"level=WARN", `msg="check errored"`, "check=pii.detect", "hook=g", "counted_as=fail", "error=boom"} {
		if !strings.Contains(line, want) {
			t.Errorf("log line lacks %s: %s", want, line)
		}
	}
	if strings.Contains(line, "stack trace") {
		t.Errorf("log line has more than the error's first line: %s", line)
	}
	if e.CheckErrors()["pii.detect"] != 1 {
		t.Errorf("counts %v", e.CheckErrors())
	}
}

type checkLogWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *checkLogWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestLogLine(t *testing.T) {
	long := strings.Repeat("é", 200) // 400 bytes
	tests := []struct{ name, in, want string }{
		{"short", "plugin not found", "plugin not found"},
		{"first line only", "panic: x\r\ngoroutine 1", "panic: x"},
		{"bounded on a rune", long, strings.Repeat("é", 128) + "…"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := logLine(tc.in)
			if got != tc.want || !utf8.ValidString(got) {
				t.Errorf("logLine = %q, want %q", got, tc.want)
			}
		})
	}
}
