package batch

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// A 1,000-line immediate batch with refused lines and lines the upstream fails: every good line runs once,
// results land in the right file with the right custom_id, and the counts and errors are exact.
func TestThousandLineBatch(t *testing.T) {
	e := newEnv(t)
	r := e.runner(t, Options{Concurrency: 8})
	lines := make([]string, 1000)
	var good, failing []string
	for i := range lines {
		id, user := fmt.Sprintf("req-%04d", i), ""
		if i%10 == 3 {
			user = "fail"
		}
		lines[i] = chatLine(id, user)
	}
	bad := map[int]string{ // index → line
		10: chatLine("req-0000", ""),
		20: strings.Replace(chatLine("req-0020", ""), `"POST"`, `"GET"`, 1),
		30: strings.Replace(chatLine("req-0030", ""), `"url":"/v1/chat/completions"`, `"url":"/v1/embeddings"`, 1),
		40: `{"custom_id":"req-0040","method":"POST","url":"/v1/chat/completions","body":"hello"}`,
		50: `{nope`,
		60: `{"method":"POST","url":"/v1/chat/completions","body":{}}`,
		70: `{"custom_id":"req-0070","method":"POST","url":"/v1/chat/completions","body":{"model":"m"},"extra":1}`,
		80: `{"custom_id":"req-0080","method":"POST","url":"/v1/chat/completions","body":{"model":"m","stream":true}}`,
	}
	for i := range lines {
		if l, ok := bad[i]; ok {
			lines[i] = l
			continue
		}
		id := fmt.Sprintf("req-%04d", i)
		if i%10 == 3 {
			failing = append(failing, id)
		} else {
			good = append(good, id)
		}
	}
	content := strings.Join(lines, "\n") + "\n\n  \r\n" // blank lines are skipped, not refused
	b, err := r.Create(context.Background(), e.newBatch(e.file(t, content), WindowImmediate))
	if err != nil {
		t.Fatal(err)
	}
	if b.Status != storage.BatchValidating || !strings.HasPrefix(b.ID, "batch_") || b.ExpiresAt != 0 {
		t.Fatalf("new batch: %+v", b)
	}
	b = e.wait(t, r, b.ID, final)

	total := 1000 - len(bad)
	if b.Status != storage.BatchCompleted || b.Counts != (storage.BatchCounts{Total: total, Completed: len(good), Failed: len(failing)}) {
		t.Fatalf("final batch: status %s counts %+v, want completed %d/%d/%d", b.Status, b.Counts, total, len(good), len(failing))
	}
	if b.InProgressAt == 0 || b.FinalizingAt == 0 || b.CompletedAt == 0 || b.FailedAt != 0 || b.CancelledAt != 0 {
		t.Errorf("timestamps: %+v", b)
	}
	if got := e.up.calls.Load(); got != int64(total) {
		t.Errorf("upstream got %d calls, want one per good line (%d)", got, total)
	}
	wantErrors := []storage.BatchError{
		{Code: codeDuplicateID, Param: "custom_id", Line: 11},
		{Code: gwerr.CodeInvalidRequest, Param: "method", Line: 21},
		{Code: gwerr.CodeInvalidRequest, Param: "url", Line: 31},
		{Code: gwerr.CodeInvalidRequest, Param: "body", Line: 41},
		{Code: gwerr.CodeInvalidJSON, Line: 51},
		{Code: gwerr.CodeInvalidRequest, Param: "custom_id", Line: 61},
		{Code: gwerr.CodeInvalidRequest, Param: "extra", Line: 71},
		{Code: gwerr.CodeInvalidRequest, Param: "body.stream", Line: 81},
	}
	if len(b.Errors) != len(wantErrors) {
		t.Fatalf("errors: %+v", b.Errors)
	}
	for i, w := range wantErrors {
		g := b.Errors[i]
		if g.Code != w.Code || g.Param != w.Param || g.Line != w.Line || g.Message == "" {
			t.Errorf("errors[%d] = %+v, want %+v", i, g, w)
		}
	}
	if !strings.Contains(b.Errors[0].Message, "line 1") {
		t.Errorf("the duplicate's message does not name the first line: %s", b.Errors[0].Message)
	}

	if b.OutputFileID != OutputFileID(b.ID) || b.ErrorFileID != ErrorFileID(b.ID) {
		t.Fatalf("file ids %s %s", b.OutputFileID, b.ErrorFileID)
	}
	out, errs := e.results(t, b.OutputFileID), e.results(t, b.ErrorFileID)
	onceEach(t, append(append([]string{}, good...), failing...), out, errs)
	if len(out) != len(good) || len(errs) != len(failing) {
		t.Fatalf("output has %d lines, errors %d; want %d and %d", len(out), len(errs), len(good), len(failing))
	}
	ids := map[string]bool{}
	for i, res := range out {
		if res.Response == nil || res.Response.StatusCode != 200 || res.Response.RequestID != "req-up" || res.Error != nil ||
			!strings.HasPrefix(res.ID, "batch_req_") || ids[res.ID] {
			t.Fatalf("output line %d: %+v", i, res)
		}
		ids[res.ID] = true
		var body struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
			Tenant string `json:"tenant"`
		}
		if err := json.Unmarshal(res.Response.Body, &body); err != nil || len(body.Choices) != 1 {
			t.Fatalf("output body %s: %v", res.Response.Body, err)
		}
		if body.Choices[0].Message.Content != res.CustomID || body.Tenant != "acme" {
			t.Fatalf("output line of %s holds the answer to %q (tenant %q)", res.CustomID, body.Choices[0].Message.Content, body.Tenant)
		}
		if i > 0 && out[i-1].CustomID >= res.CustomID {
			t.Fatalf("output not in line order: %s after %s", res.CustomID, out[i-1].CustomID)
		}
	}
	for _, res := range errs {
		if res.Response == nil || res.Response.StatusCode != 500 || !strings.Contains(string(res.Response.Body), "upstream failure") || res.Error != nil {
			t.Fatalf("error line: %+v", res)
		}
	}
	f, err := e.store.Files.Get(e.ws, b.OutputFileID)
	if err != nil || f.Purpose != "batch_output" || f.Filename != b.ID+"_output.jsonl" {
		t.Fatalf("output file: %+v %v", f, err)
	}
	if open, _ := e.store.Batches.Unfinished(); len(open) != 0 {
		t.Fatalf("a completed batch is still listed as unfinished: %+v", open)
	}
}

// Each endpoint runs its own kind of line, and a line the engine refuses (no provider answered) lands in the
// error file with error set and no response.
func TestEmbeddingsAndGatewayErrors(t *testing.T) {
	e := newEnv(t)
	r := e.runner(t, Options{})
	in := `{"custom_id":"a","method":"POST","url":"/v1/embeddings","body":{"model":"e","input":"hello"}}` + "\n" +
		`{"custom_id":"b","method":"POST","url":"/v1/embeddings","body":{"model":"e","input":"x"}}`
	nb := e.newBatch(e.file(t, in), WindowImmediate)
	nb.Endpoint = "/v1/embeddings"
	// Line b goes through a config whose target names a stored provider that does not exist: a gateway error.
	nb.Request.Config = `{"strategy":{"mode":"conditional","conditions":[{"query":{"params.input":"x"},"then":"gone"}],"default":"up"},` +
		`"targets":[{"name":"up","virtual_key":"up"},{"name":"gone","virtual_key":"missing"}]}`
	b, err := r.Create(context.Background(), nb)
	if err != nil {
		t.Fatal(err)
	}
	b = e.wait(t, r, b.ID, final)
	if b.Status != storage.BatchCompleted || b.Counts != (storage.BatchCounts{Total: 2, Completed: 1, Failed: 1}) {
		t.Fatalf("batch: %+v", b)
	}
	out, errs := e.results(t, b.OutputFileID), e.results(t, b.ErrorFileID)
	if len(out) != 1 || out[0].CustomID != "a" || !strings.Contains(string(out[0].Response.Body), `"echo":"hello"`) {
		t.Fatalf("output: %+v", out)
	}
	if len(errs) != 1 || errs[0].CustomID != "b" || errs[0].Response != nil || errs[0].Error == nil || errs[0].Error.Code == "" || errs[0].Error.Message == "" {
		t.Fatalf("errors: %+v", errs)
	}
}

// Batches whose input has no good line fail, with the reason, and write no file.
func TestBatchesThatFail(t *testing.T) {
	e := newEnv(t)
	r := e.runner(t, Options{MaxLineBytes: 300})
	long := chatLine("long", strings.Repeat("x", 400))
	tests := []struct {
		name    string
		content string
		delete  bool
		want    []storage.BatchError
	}{
		{"empty file", "\n\n", false, []storage.BatchError{{Code: codeEmptyFile, Param: "input_file_id"}}},
		{"every line refused", `{"custom_id":"a","method":"PUT","url":"/v1/chat/completions","body":{}}` + "\n" + long + "\n" + `[]`, false,
			[]storage.BatchError{{Code: gwerr.CodeInvalidRequest, Param: "method", Line: 1}, {Code: codeLineTooLong, Line: 2},
				{Code: gwerr.CodeInvalidJSON, Line: 3}}},
		{"input file deleted", chatLine("a", ""), true, []storage.BatchError{{Code: codeInputMissing, Param: "input_file_id"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := e.file(t, tc.content)
			if tc.delete {
				if err := e.store.Files.Delete(e.ws, file); err != nil {
					t.Fatal(err)
				}
			}
			b, err := r.Create(context.Background(), e.newBatch(file, WindowImmediate))
			if err != nil {
				t.Fatal(err)
			}
			b = e.wait(t, r, b.ID, final)
			if b.Status != storage.BatchFailed || b.FailedAt == 0 || b.OutputFileID != "" || b.ErrorFileID != "" || b.Counts.Total != 0 {
				t.Fatalf("batch: %+v", b)
			}
			if len(b.Errors) != len(tc.want) {
				t.Fatalf("errors %+v, want %+v", b.Errors, tc.want)
			}
			for i, w := range tc.want {
				if g := b.Errors[i]; g.Code != w.Code || g.Param != w.Param || g.Line != w.Line {
					t.Errorf("errors[%d] = %+v, want %+v", i, g, w)
				}
			}
		})
	}
	if n := e.up.calls.Load(); n != 0 {
		t.Fatalf("failed batches made %d upstream calls", n)
	}
}

// Cancel drops the lines in flight, keeps what finished, and ends cancelled; a finished batch cannot be
// cancelled again.
func TestCancel(t *testing.T) {
	e := newEnv(t)
	e.up.gate = make(chan struct{})
	r := e.runner(t, Options{Concurrency: 4})
	var lines []string
	for i := range 50 {
		lines = append(lines, chatLine(fmt.Sprintf("c-%02d", i), ""))
	}
	b, err := r.Create(context.Background(), e.newBatch(e.file(t, strings.Join(lines, "\n")), WindowImmediate))
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		e.up.gate <- struct{}{}
	}
	e.wait(t, r, b.ID, func(b *storage.Batch) bool { return b.Counts.Completed == 10 })
	// Readers and cancels race with the run: the race detector watches.
	var cancelled int
	errs := make([]error, 8)
	hammer(8, func(i int) {
		if i%2 == 0 {
			_, errs[i] = r.Cancel(context.Background(), e.ws, b.ID)
			return
		}
		cur, err := e.store.Batches.Get(e.ws, b.ID)
		if err == nil {
			r.View(context.Background(), cur, true)
		}
	})
	for i, err := range errs {
		var ge *gwerr.Error
		switch {
		case err == nil:
			if i%2 == 0 {
				cancelled++
			}
		case errors.As(err, &ge) && ge.Status == http.StatusConflict: // the batch was cancelled already
		default:
			t.Fatalf("cancel: %v", err)
		}
	}
	if cancelled == 0 {
		t.Fatal("no cancel succeeded")
	}
	b = e.wait(t, r, b.ID, final)
	if b.Status != storage.BatchCancelled || b.CancellingAt == 0 || b.CancelledAt == 0 || b.CompletedAt != 0 {
		t.Fatalf("batch: %+v", b)
	}
	if b.Counts != (storage.BatchCounts{Total: 50, Completed: 10, Failed: 0}) {
		t.Fatalf("counts %+v", b.Counts)
	}
	out := e.results(t, b.OutputFileID)
	if len(out) != 10 || b.ErrorFileID != "" {
		t.Fatalf("output has %d lines (error file %q), want the 10 that finished", len(out), b.ErrorFileID)
	}
	_, err = r.Cancel(context.Background(), e.ws, b.ID)
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Status != http.StatusConflict {
		t.Fatalf("cancel of a cancelled batch: %v", err)
	}
	if _, err := r.Cancel(context.Background(), e.ws, "batch_nope"); !errors.As(err, &ge) || ge.Status != http.StatusNotFound {
		t.Fatalf("cancel of an unknown batch: %v", err)
	}
}

// A runner stopped mid-batch leaves it in_progress with its finished lines stored, and releases its lease: a
// new runner over the same store takes the batch at once (the lease would last an hour) and finishes it, and
// every line has exactly one result.
func TestResumeAfterStop(t *testing.T) {
	e := newEnv(t)
	e.up.delay = 5 * time.Millisecond
	e.up.byID = map[string]int{}
	r1 := New(e.store, e.engine, Options{Concurrency: 8, Logger: e.log, LeaseTTL: time.Hour})
	if err := r1.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var ids, lines []string
	for i := range 300 {
		id, user := fmt.Sprintf("r-%03d", i), ""
		if i%7 == 0 {
			user = "fail"
		}
		ids = append(ids, id)
		lines = append(lines, chatLine(id, user))
	}
	b, err := r1.Create(context.Background(), e.newBatch(e.file(t, strings.Join(lines, "\n")), WindowImmediate))
	if err != nil {
		t.Fatal(err)
	}
	e.wait(t, r1, b.ID, func(b *storage.Batch) bool { return b.Counts.Completed+b.Counts.Failed >= 60 })
	r1.Stop()
	var done []string // custom_ids with a stored result
	if err := e.store.Batches.Lines(e.ws, b.ID, func(_ int, _ storage.LineKind, data []byte) error {
		var res result
		if err := json.Unmarshal(data, &res); err != nil {
			return err
		}
		done = append(done, res.CustomID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mid, _ := e.store.Batches.Get(e.ws, b.ID)
	if mid.Status != storage.BatchInProgress || len(done) < 60 || len(done) >= 300 {
		t.Fatalf("after the stop: status %s, %d results stored", mid.Status, len(done))
	}
	before := map[string]int{}
	for _, id := range done {
		before[id] = e.up.callsOf(id)
	}

	r2 := e.runner(t, Options{Concurrency: 8})
	b = e.wait(t, r2, b.ID, final)
	if b.Status != storage.BatchCompleted || b.Counts != (storage.BatchCounts{Total: 300, Completed: 300 - 43, Failed: 43}) {
		t.Fatalf("resumed batch: %+v", b)
	}
	onceEach(t, ids, e.results(t, b.OutputFileID), e.results(t, b.ErrorFileID))
	// The second runner ran only the lines without a result.
	for _, id := range done {
		if n := e.up.callsOf(id); n != before[id] {
			t.Errorf("line %s, done before the stop, was sent again by the resumed runner", id)
		}
	}
}

// A batch whose finalizing a crash cut short (its files written, its state not) is finalized again at start:
// the files are replaced, not doubled.
func TestFinalizeAgainAfterACrash(t *testing.T) {
	e := newEnv(t)
	b := e.newBatch(e.file(t, chatLine("a", "")+"\n"+chatLine("b", "")), WindowImmediate)
	b.ID, b.Status, b.CreatedAt, b.InProgressAt, b.FinalizingAt = "batch_crashed", storage.BatchFinalizing, 1, 2, 3
	b.Counts.Total = 2
	if err := e.store.Batches.Create(b); err != nil {
		t.Fatal(err)
	}
	for i, line := range []string{`{"id":"x1","custom_id":"a","response":{"status_code":200,"request_id":"r","body":{}},"error":null}`,
		`{"id":"x2","custom_id":"b","response":{"status_code":200,"request_id":"r","body":{}},"error":null}`} {
		if _, err := e.store.Batches.PutLine(e.ws, b.ID, i+1, storage.LineSucceeded, []byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	// What the first attempt wrote: a whole file, with a line too many, under the output's ID.
	w, _ := e.store.Files.Create(e.ws, storage.File{ID: OutputFileID(b.ID), Filename: "x", Purpose: "batch_output"}, 0)
	w.Write([]byte("garbage\ngarbage\ngarbage\n"))
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	r := e.runner(t, Options{})
	got := e.wait(t, r, b.ID, final)
	if got.Status != storage.BatchCompleted || got.Counts != (storage.BatchCounts{Total: 2, Completed: 2}) || got.OutputFileID != OutputFileID(b.ID) {
		t.Fatalf("batch: %+v", got)
	}
	onceEach(t, []string{"a", "b"}, e.results(t, got.OutputFileID))
	files, _, _ := e.store.Files.List(e.ws, storage.FileList{Purpose: "batch_output"})
	if len(files) != 1 {
		t.Fatalf("%d output files, want 1", len(files))
	}
	if e.up.calls.Load() != 0 {
		t.Fatal("finalizing again ran lines")
	}
}

// A gateway-managed 24h batch runs paced (a quarter of the concurrency) and expires at the end of its window
// with what finished in its files.
func TestManaged24hBatchExpires(t *testing.T) {
	e := newEnv(t)
	e.up.gate = make(chan struct{})
	// The batch is made 24 h minus a moment ago, by the runner's clock.
	r := e.runner(t, Options{Concurrency: 8, Now: func() time.Time { return time.Now().Add(-window + 3*time.Second) }})
	var lines []string
	for i := range 20 {
		lines = append(lines, chatLine(fmt.Sprintf("x-%02d", i), ""))
	}
	b, err := r.Create(context.Background(), e.newBatch(e.file(t, strings.Join(lines, "\n")), Window24h))
	if err != nil {
		t.Fatal(err)
	}
	if b.ExpiresAt != b.CreatedAt+24*3600 || b.Upstream != nil {
		t.Fatalf("a 24h batch without an upstream client: %+v", b)
	}
	e.up.gate <- struct{}{}
	e.up.gate <- struct{}{}
	e.up.gate <- struct{}{}
	e.wait(t, r, b.ID, func(b *storage.Batch) bool { return b.Counts.Completed == 3 })
	if n := e.up.calls.Load(); n > 5 {
		t.Fatalf("%d calls made: a 24h batch runs at most 2 lines at once here", n)
	}
	b = e.wait(t, r, b.ID, final)
	if b.Status != storage.BatchExpired || b.ExpiredAt == 0 || b.Counts.Completed != 3 {
		t.Fatalf("batch: %+v", b)
	}
	out := e.results(t, b.OutputFileID)
	var finished []string // two lines run at once: which three finished depends on who took the gate first
	for _, res := range out {
		finished = append(finished, res.CustomID)
	}
	if len(finished) != 3 {
		t.Fatalf("output holds %v, want the 3 lines that finished", finished)
	}
	onceEach(t, finished, out)
}

func TestLineReader(t *testing.T) {
	in := "a\r\nbb\n" + strings.Repeat("x", 100) + "\n\nccc" // a long line, a blank one, a last one without newline
	// The smallest buffer bufio allows: the long line comes in several reads, none of it kept.
	lr := &lineReader{r: bufio.NewReaderSize(strings.NewReader(in), 16), max: 10}
	var got []string
	for {
		data, n, long, err := lr.next()
		if err != nil {
			break
		}
		got = append(got, fmt.Sprintf("%d:%q:%v", n, data, long))
	}
	want := `[1:"a":false 2:"bb":false 3:"":true 4:"":false 5:"ccc":false]`
	if fmt.Sprint(got) != want {
		t.Fatalf("lines = %v, want %s", got, want)
	}
}

// A workspace may have Options.Queued batches running or waiting; more are refused with 429 until one is
// done. Another workspace is not held back.
func TestQueuedBatchesAreBounded(t *testing.T) {
	e := newEnv(t)
	e.up.gate = make(chan struct{})
	r := e.runner(t, Options{Queued: 2, Running: 1})
	file := e.file(t, chatLine("a", ""))
	var ids []string
	for range 2 {
		b, err := r.Create(context.Background(), e.newBatch(file, WindowImmediate))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, b.ID)
	}
	_, err := r.Create(context.Background(), e.newBatch(file, WindowImmediate))
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Status != http.StatusTooManyRequests || ge.Code != gwerr.CodeRateLimited {
		t.Fatalf("a third batch: %v, want 429", err)
	}
	other := newEnvOver(t, e.store, storage.NewUUID())
	ob := other.newBatch(other.file(t, chatLine("a", "")), WindowImmediate)
	if _, err := r.Create(context.Background(), ob); err != nil {
		t.Fatalf("another workspace is held back: %v", err)
	}
	close(e.up.gate)
	for _, id := range ids {
		e.wait(t, r, id, final)
	}
	e.wait(t, r, ids[1], func(*storage.Batch) bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.perWS[e.ws] == 0 // the driver is gone once the batch's final state is saved
	})
	if _, err := r.Create(context.Background(), e.newBatch(file, WindowImmediate)); err != nil {
		t.Fatalf("once the batches are done: %v", err)
	}
}
