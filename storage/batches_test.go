package storage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func testBatch(ws, id string) *Batch {
	return &Batch{ID: id, WorkspaceID: ws, Endpoint: "/v1/chat/completions", InputFileID: "file-1",
		CompletionWindow: "immediate", Status: BatchValidating, CreatedAt: 1,
		Request: BatchRequest{KeyID: "k1", VirtualKey: "vk", Authorization: "sk-secret-token",
			Config: `{"provider":"openai","api_key":"sk-config-secret"}`, Headers: map[string]string{"x-custom": "v"}}}
}

func TestBatchRecordsSealTheirRequest(t *testing.T) {
	fs := vfs.NewMem()
	s := openTest(t, fs, nil)
	ws := NewUUID()
	b := testBatch(ws, "batch_1")
	if err := s.Batches.Create(b); err != nil {
		t.Fatal(err)
	}
	if err := s.Batches.Create(testBatch(ws, "batch_1")); !errors.Is(err, ErrConflict) {
		t.Fatalf("second create with the same id: %v, want ErrConflict", err)
	}
	got, err := s.Batches.Get(ws, "batch_1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Request.Authorization != "sk-secret-token" || got.Request.Headers["x-custom"] != "v" || got.Request.KeyID != "k1" {
		t.Fatalf("request did not round-trip: %+v", got.Request)
	}
	if _, err := s.Batches.Get(NewUUID(), "batch_1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another workspace's batch: %v, want ErrNotFound", err)
	}
	// No secret of the request is readable in the store.
	raw, err := s.get(key(tableBatch, ws, "batch_1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"sk-secret-token", "sk-config-secret", "x-custom"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the stored record holds %q in clear: %s", secret, raw)
		}
	}
	// A record copied under another key does not open: the seal is bound to the key.
	if err := s.db.Set(key(tableBatch, ws, "batch_2"), raw, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Batches.Get(ws, "batch_2"); err == nil {
		t.Fatal("a record copied under another key opened")
	}
}

func TestBatchListNewestFirst(t *testing.T) {
	s := openTest(t, nil, nil)
	ws, other := NewUUID(), NewUUID()
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 5 {
		id := NewTimeOrderedID("batch_", base.Add(time.Duration(i)*time.Second))
		ids = append(ids, id)
		if err := s.Batches.Create(testBatch(ws, id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Batches.Create(testBatch(other, NewTimeOrderedID("batch_", base.Add(time.Hour)))); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		after string
		limit int
		want  []string
		more  bool
	}{
		{"first page", "", 2, []string{ids[4], ids[3]}, true},
		{"second page", ids[3], 2, []string{ids[2], ids[1]}, true},
		{"last page", ids[1], 2, []string{ids[0]}, false},
		{"exactly all", "", 5, []string{ids[4], ids[3], ids[2], ids[1], ids[0]}, false},
		{"after the oldest", ids[0], 10, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			page, more, err := s.Batches.List(ws, tc.after, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, b := range page {
				got = append(got, b.ID)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || more != tc.more {
				t.Fatalf("got %v more=%v, want %v more=%v", got, more, tc.want, tc.more)
			}
		})
	}
}

// A batch's line results are synced as they are put, survive a crash, and go away with the batch's
// unfinished mark once it reaches a final state.
func TestBatchLinesSurviveACrashAndGoWhenDone(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openTest(t, fs, nil)
	requirePebble(t, s)
	ws := NewUUID()
	if err := s.Batches.Create(testBatch(ws, "batch_a")); err != nil {
		t.Fatal(err)
	}
	if err := s.Batches.Create(&Batch{ID: "batch_done", WorkspaceID: ws, Status: BatchCompleted}); err != nil {
		t.Fatal(err)
	}
	for line, kind := range map[int]LineKind{1: LineSucceeded, 3: LineFailed, 2: LineSucceeded} {
		if held, err := s.Batches.PutLine(ws, "batch_a", line, kind, []byte(fmt.Sprintf(`{"line":%d}`, line))); err != nil || held != kind {
			t.Fatalf("line %d: held %d, %v", line, held, err)
		}
	}
	if _, err := s.Batches.Update(ws, "batch_a", func(b *Batch) error {
		b.Status, b.InProgressAt = BatchInProgress, 5
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, fs.CrashClone(vfs.CrashCloneCfg{}), nil)

	open, err := s.Batches.Unfinished()
	if err != nil || len(open) != 1 || open[0].ID != "batch_a" || open[0].Status != BatchInProgress || open[0].Request.Authorization != "sk-secret-token" {
		t.Fatalf("unfinished after a crash: %+v, %v", open, err)
	}
	var got []string
	if err := s.Batches.Lines(ws, "batch_a", func(line int, kind LineKind, data []byte) error {
		got = append(got, fmt.Sprintf("%d:%d:%s", line, kind, data))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := `[1:1:{"line":1} 2:1:{"line":2} 3:2:{"line":3}]`; fmt.Sprint(got) != want {
		t.Fatalf("lines after a crash = %v, want %s", got, want)
	}

	if _, err := s.Batches.Update(ws, "batch_a", func(b *Batch) error { return ErrUnchanged }); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if _, err := s.Batches.Update(ws, "batch_a", func(b *Batch) error { b.Status = BatchFailed; return boom }); !errors.Is(err, boom) {
		t.Fatalf("update that fails: %v", err)
	}
	if b, _ := s.Batches.Get(ws, "batch_a"); b.Status != BatchInProgress {
		t.Fatalf("a failed update was written: %s", b.Status)
	}
	if _, err := s.Batches.Update(ws, "batch_a", func(b *Batch) error { b.Status = BatchCompleted; return nil }); err != nil {
		t.Fatal(err)
	}
	if open, _ := s.Batches.Unfinished(); len(open) != 0 {
		t.Fatalf("a completed batch is still unfinished: %+v", open)
	}
	n := 0
	_ = s.Batches.Lines(ws, "batch_a", func(int, LineKind, []byte) error { n++; return nil })
	if n != 0 {
		t.Fatalf("%d line results kept after the batch completed", n)
	}
}

// A line has one result whoever writes it: writers racing on the same lines (two replicas' runs, one of which
// lost its lease late) store one result each, and each is told the kind the line holds; a batch that is over
// gets no line back.
func TestBatchLineIsWrittenOnce(t *testing.T) {
	s := openTest(t, nil, nil)
	checkLinesWrittenOnce(t, s, s)
}

// The same across two replicas of one PostgreSQL store: the check and the write hold a lock of the database.
func TestBatchLineIsWrittenOnceAcrossReplicas(t *testing.T) {
	a, b, _ := openReplicas(t)
	checkLinesWrittenOnce(t, a, b)
}

// checkLinesWrittenOnce has writers, alternately over each of stores, put results to the same lines of one
// batch at once.
func checkLinesWrittenOnce(t *testing.T, stores ...*Store) {
	ws := NewUUID()
	if err := stores[0].Batches.Create(testBatch(ws, "batch_once")); err != nil {
		t.Fatal(err)
	}
	const lines, writers = 100, 6
	held := make([][]LineKind, writers)
	var wg sync.WaitGroup
	for w := range writers {
		held[w] = make([]LineKind, lines+1)
		s := stores[w%len(stores)]
		wg.Go(func() {
			kind := LineSucceeded
			if w/len(stores)%2 == 1 {
				kind = LineFailed
			}
			for line := 1; line <= lines; line++ {
				k, err := s.Batches.PutLine(ws, "batch_once", line, kind, []byte(fmt.Sprintf(`{"kind":%d}`, kind)))
				if err != nil {
					t.Error(err)
					return
				}
				held[w][line] = k
			}
		})
	}
	wg.Wait()
	s := stores[len(stores)-1]
	stored := map[int]LineKind{}
	if err := s.Batches.Lines(ws, "batch_once", func(line int, kind LineKind, data []byte) error {
		if _, dup := stored[line]; dup {
			t.Errorf("line %d listed twice", line)
		}
		stored[line] = kind
		var v struct{ Kind LineKind }
		if err := json.Unmarshal(data, &v); err != nil || v.Kind != kind {
			t.Errorf("line %d holds %s as %d: not one writer's result", line, data, kind)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(stored) != lines {
		t.Fatalf("%d lines stored, want %d", len(stored), lines)
	}
	for w := range writers {
		for line := 1; line <= lines; line++ {
			if held[w][line] != stored[line] {
				t.Fatalf("writer %d was told line %d holds %d; it holds %d", w, line, held[w][line], stored[line])
			}
		}
	}

	if _, err := s.Batches.Update(ws, "batch_once", func(b *Batch) error { b.Status = BatchCancelled; return nil }); err != nil {
		t.Fatal(err)
	}
	if held, err := stores[0].Batches.PutLine(ws, "batch_once", 1, LineSucceeded, []byte(`{}`)); err != nil || held != 0 {
		t.Fatalf("a line put to a batch that is over: held %d, %v", held, err)
	}
	n := 0
	if err := s.Batches.Lines(ws, "batch_once", func(int, LineKind, []byte) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("%d line results stored for a batch that is over (%v)", n, err)
	}
}

// A validation pass finds repeated custom_ids across its flushes, records refused lines, and keeps no
// custom_id once finished; a new pass starts over.
func TestBatchValidation(t *testing.T) {
	s := openTest(t, nil, nil)
	ws := NewUUID()
	v, err := s.Batches.Validate(ws, "batch_v")
	if err != nil {
		t.Fatal(err)
	}
	const n = 3*validationFlush + 10
	for line := 1; line <= n; line++ {
		first, err := v.SeeID(fmt.Sprintf("id-%d", line), line)
		if err != nil || first != 0 {
			t.Fatalf("line %d: first %d, %v", line, first, err)
		}
	}
	for _, line := range []int{1, validationFlush + 3, n} { // before and after flushes
		first, err := v.SeeID(fmt.Sprintf("id-%d", line), n+line)
		if err != nil || first != line {
			t.Fatalf("repeat of line %d: first %d, %v", line, first, err)
		}
		if err := v.Invalid(n+line, []byte(`{"code":"duplicate_custom_id"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := v.Finish(); err != nil {
		t.Fatal(err)
	}
	if c := countPrefix(t, s, tableBatchCID+"/"); c != 0 {
		t.Fatalf("%d custom_ids kept after validation", c)
	}
	invalid := 0
	_ = s.Batches.Lines(ws, "batch_v", func(_ int, kind LineKind, data []byte) error {
		if kind == LineInvalid && strings.Contains(string(data), "duplicate") {
			invalid++
		}
		return nil
	})
	if invalid != 3 {
		t.Fatalf("%d refused lines stored, want 3", invalid)
	}
	// A new pass (after a crash mid-validation) starts from nothing.
	v, err = s.Batches.Validate(ws, "batch_v")
	if err != nil {
		t.Fatal(err)
	}
	defer v.Abort()
	if first, err := v.SeeID("id-1", 1); err != nil || first != 0 {
		t.Fatalf("a new pass remembers an old custom_id: %d %v", first, err)
	}
	if c := countPrefix(t, s, tableBatchLine+"/"); c != 0 {
		t.Fatalf("a new pass kept %d line results", c)
	}
}
