package storage

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// writeFile stores data in pieces of odd sizes, so that chunk boundaries fall inside writes.
func writeFile(t *testing.T, s *Store, ws string, f File, data []byte) *File {
	t.Helper()
	w, err := s.Files.Create(ws, f, 0)
	if err != nil {
		t.Fatal(err)
	}
	for rest := data; len(rest) > 0; {
		n := min(len(rest), 77777)
		if _, err := w.Write(rest[:n]); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
	}
	got, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func readFile(t *testing.T, s *Store, ws, id string) []byte {
	t.Helper()
	_, r, err := s.Files.Open(ws, id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFilesRoundTrip(t *testing.T) {
	s := openTest(t, nil, nil)
	ws := NewUUID()
	random := make([]byte, 3*FileChunkSize+123) // incompressible: stored raw
	_, _ = rand.Read(random)
	text := bytes.Repeat([]byte(`{"custom_id":"x","method":"POST"}`+"\n"), 40000) // compresses well
	for name, data := range map[string][]byte{"empty": nil, "random": random, "text": text, "one byte": {7}} {
		f := writeFile(t, s, ws, File{Filename: name + ".jsonl", Purpose: "batch"}, data)
		if f.Bytes != int64(len(data)) || f.Filename != name+".jsonl" || f.Purpose != "batch" || f.WorkspaceID != ws {
			t.Errorf("%s: metadata %+v", name, f)
		}
		if got := readFile(t, s, ws, f.ID); !bytes.Equal(got, data) {
			t.Errorf("%s: read %d bytes back, want %d identical", name, len(got), len(data))
		}
		if _, _, err := s.Files.Open(NewUUID(), f.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: another workspace opened the file: %v", name, err)
		}
	}
}

func TestFilesLimitAbortDelete(t *testing.T) {
	s := openTest(t, nil, nil)
	ws := NewUUID()
	w, err := s.Files.Create(ws, File{Filename: "big", Purpose: "batch"}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, 6)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, 6)); !errors.Is(err, ErrFileTooLarge) {
		t.Fatalf("write past the limit = %v, want ErrFileTooLarge", err)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Files.Get(ws, w.ID()); !errors.Is(err, ErrNotFound) {
		t.Errorf("an aborted file is visible: %v", err)
	}
	f := writeFile(t, s, ws, File{Filename: "a", Purpose: "batch"}, []byte("hello"))
	if err := s.Files.Delete(ws, f.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Files.Open(ws, f.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("a deleted file opens: %v", err)
	}
	if err := s.Files.Delete(ws, f.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting twice = %v, want ErrNotFound", err)
	}
	n := 0
	_ = s.scan([]byte(tableFileChunk+"/"), func(_, _ []byte) error { n++; return nil })
	if n != 0 {
		t.Errorf("%d chunks left after abort and delete", n)
	}
}

// A writer cut short by a crash leaves chunks behind a pending marker; the next start sweeps them.
func TestFilesSweepPendingAfterCrash(t *testing.T) {
	mem := vfs.NewCrashableMem()
	s := openTest(t, mem, nil)
	requirePebble(t, s)
	ws := NewUUID()
	w, err := s.Files.Create(ws, File{Filename: "cut", Purpose: "batch"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, 6*FileChunkSize)); err != nil {
		t.Fatal(err)
	}
	_ = s.pdb.Flush() // what was applied reaches the disk, as it would in time
	crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	s2 := openTest(t, crashed, nil)
	n, err := s2.Files.SweepPending()
	if err != nil || n != 1 {
		t.Fatalf("SweepPending = %d, %v; want 1", n, err)
	}
	left := 0
	_ = s2.scan([]byte(tableFileChunk+"/"), func(_, _ []byte) error { left++; return nil })
	if left != 0 {
		t.Errorf("%d chunks of the cut file survived the sweep", left)
	}
}

func TestFilesListOrderAndPages(t *testing.T) {
	clk := newFakeClock()
	s := openTest(t, nil, clk)
	ws := NewUUID()
	var ids []string
	for i := 0; i < 5; i++ {
		purpose := "batch"
		if i%2 == 1 {
			purpose = "fine-tune"
		}
		ids = append(ids, writeFile(t, s, ws, File{Filename: "f", Purpose: purpose}, []byte{byte(i)}).ID)
		clk.Advance(time.Second)
	}
	page, more, err := s.Files.List(ws, FileList{Limit: 2})
	if err != nil || !more || len(page) != 2 || page[0].ID != ids[4] || page[1].ID != ids[3] {
		t.Fatalf("first page newest first: %v more=%v err=%v", page, more, err)
	}
	page, more, _ = s.Files.List(ws, FileList{Limit: 2, After: ids[3]})
	if more != true || len(page) != 2 || page[0].ID != ids[2] {
		t.Fatalf("second page: %v more=%v", page, more)
	}
	page, more, _ = s.Files.List(ws, FileList{Asc: true, Purpose: "fine-tune"})
	if more || len(page) != 2 || page[0].ID != ids[1] || page[1].ID != ids[3] {
		t.Fatalf("oldest first, fine-tune only: %v more=%v", page, more)
	}
	if page, _, _ := s.Files.List(NewUUID(), FileList{}); len(page) != 0 {
		t.Errorf("another workspace lists %d files", len(page))
	}
}

func BenchmarkFileWriteRead(b *testing.B) {
	s := openTest(b, nil, nil)
	ws := NewUUID()
	data := bytes.Repeat([]byte(`{"custom_id":"req-1","method":"POST","url":"/v1/chat/completions","body":{"model":"m"}}`+"\n"), 12000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		w, _ := s.Files.Create(ws, File{Filename: "b", Purpose: "batch"}, 0)
		_, _ = w.Write(data)
		f, err := w.Commit()
		if err != nil {
			b.Fatal(err)
		}
		_, r, _ := s.Files.Open(ws, f.ID)
		_, _ = io.Copy(io.Discard, r)
		r.Close()
	}
}

// IDs made in the same millisecond still sort in the order they were made.
func TestTimeOrderedIDsSortWithinAMillisecond(t *testing.T) {
	now := time.Now()
	prev := NewTimeOrderedID("x-", now)
	for i := 0; i < 1000; i++ {
		id := NewTimeOrderedID("x-", now)
		if id <= prev || len(id) != len(prev) || !ValidID(id) {
			t.Fatalf("%q after %q", id, prev)
		}
		prev = id
	}
}
