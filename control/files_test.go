package control

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// checkGwErr asserts err is a gateway error of that status and param.
func checkGwErr(t *testing.T, err error, status int, param string) {
	t.Helper()
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Status != status || ge.Param != param {
		t.Fatalf("err = %v, want %d naming %q", err, status, param)
	}
}

// upload stores content under filename and purpose through the Plane.
func (f *fixture) upload(t *testing.T, filename, purpose string, content []byte) (*storage.File, error) {
	t.Helper()
	u, err := f.plane.StartFile(ctx, f.caller, filename)
	if err != nil {
		return nil, err
	}
	defer u.Abort()
	if _, err := io.Copy(u, bytes.NewReader(content)); err != nil {
		return nil, err
	}
	return u.Commit(purpose)
}

// pendingUploads is how many uploads were left half written (and sweeps them).
func (f *fixture) pendingUploads(t *testing.T) int {
	t.Helper()
	n, err := f.store.Files.SweepPending()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestFileUpload(t *testing.T) {
	f := newFixture(t, Options{FileLimit: 1000})
	if f.plane.FileLimit() != 1000 || newFixture(t, Options{}).plane.FileLimit() != DefaultFileLimit {
		t.Fatal("file limit not taken, or not defaulted")
	}
	got, err := f.upload(t, "a.jsonl", "batch", []byte("hello"))
	if err != nil || got.Bytes != 5 || got.Purpose != "batch" || got.Filename != "a.jsonl" || !strings.HasPrefix(got.ID, "file-") {
		t.Fatalf("upload: %+v %v", got, err)
	}
	stored, r, err := f.plane.OpenFile(ctx, f.caller, got.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	r.Close()
	if *stored != *got || string(b) != "hello" {
		t.Fatalf("read back %+v %q", stored, b)
	}

	tests := []struct {
		name, filename, purpose string
		size                    int
		status                  int
		param                   string
	}{
		{"missing purpose", "a", "", 10, 400, "purpose"},
		{"unknown purpose", "a", "vision", 10, 400, "purpose"},
		{"no filename", "", "batch", 10, 400, "file"},
		{"long filename", strings.Repeat("x", 513), "batch", 10, 400, "file"},
		{"filename not UTF-8", "a\xff", "batch", 10, 400, "file"},
		{"newline in the filename", "a\nb", "batch", 10, 400, "file"},
		{"over the limit", "a", "batch", 1001, 413, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.upload(t, tc.filename, tc.purpose, bytes.Repeat([]byte("x"), tc.size))
			checkGwErr(t, err, tc.status, tc.param)
			if n := f.pendingUploads(t); n != 0 {
				t.Fatalf("%d uploads left pending", n)
			}
			if files, _, _ := f.plane.ListFiles(ctx, f.caller, FileQuery{}); len(files) != 1 {
				t.Fatalf("files %v, want only the first", files)
			}
		})
	}
	if got, err := f.upload(t, "full", "user_data", bytes.Repeat([]byte("x"), 1000)); err != nil || got.Bytes != 1000 {
		t.Fatalf("a file of exactly the limit: %+v %v", got, err)
	}
	checkGwErr(t, f.plane.CheckUploadSize(1001), 413, "")
	if err := f.plane.CheckUploadSize(1000); err != nil {
		t.Fatal(err)
	}
}

func TestFileListQuery(t *testing.T) {
	f := newFixture(t, Options{})
	var ids []string
	for _, p := range []string{"batch", "fine-tune", "batch"} {
		got, err := f.upload(t, "f", p, []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, got.ID)
	}
	idsOf := func(q FileQuery) ([]string, bool) {
		t.Helper()
		files, more, err := f.plane.ListFiles(ctx, f.caller, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, fl := range files {
			out = append(out, fl.ID)
		}
		return out, more
	}
	all, more := idsOf(FileQuery{})
	if len(all) != 3 || more {
		t.Fatalf("list %v %v", all, more)
	}
	asc, _ := idsOf(FileQuery{Order: "asc"})
	if asc[0] != all[2] || asc[2] != all[0] {
		t.Fatalf("asc %v, desc %v", asc, all)
	}
	if page, more := idsOf(FileQuery{Limit: "2", Order: "asc"}); len(page) != 2 || !more {
		t.Fatalf("first page %v %v", page, more)
	}
	if page, more := idsOf(FileQuery{Limit: "2", Order: "asc", After: asc[1]}); len(page) != 1 || page[0] != asc[2] || more {
		t.Fatalf("second page %v %v", page, more)
	}
	if batch, _ := idsOf(FileQuery{Purpose: "fine-tune"}); len(batch) != 1 || batch[0] != ids[1] {
		t.Fatalf("fine-tune %v, want %s", batch, ids[1])
	}
	for _, tc := range []struct {
		q     FileQuery
		param string
	}{
		{FileQuery{Limit: "0"}, "limit"}, {FileQuery{Limit: "10001"}, "limit"}, {FileQuery{Limit: "1.5"}, "limit"},
		{FileQuery{Order: "ASC"}, "order"}, {FileQuery{Purpose: "x"}, "purpose"}, {FileQuery{After: "a/b"}, "after"},
	} {
		_, _, err := f.plane.ListFiles(ctx, f.caller, tc.q)
		checkGwErr(t, err, 400, tc.param)
	}
}

// Another workspace's file is a 404 to every operation, and its list never shows it.
func TestFilesOtherWorkspace(t *testing.T) {
	f := newFixture(t, Options{})
	got, err := f.upload(t, "f", "batch", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	other := Caller{WorkspaceID: "ws-other", KeyID: "key-2"}
	_, err = f.plane.GetFile(ctx, other, got.ID)
	checkGwErr(t, err, 404, "")
	_, _, err = f.plane.OpenFile(ctx, other, got.ID)
	checkGwErr(t, err, 404, "")
	checkGwErr(t, f.plane.DeleteFile(ctx, other, got.ID), 404, "")
	if files, _, err := f.plane.ListFiles(ctx, other, FileQuery{}); err != nil || len(files) != 0 {
		t.Fatalf("the other workspace lists %v %v", files, err)
	}
	if err := f.plane.DeleteFile(ctx, f.caller, got.ID); err != nil {
		t.Fatal(err)
	}
	_, err = f.plane.GetFile(ctx, f.caller, got.ID)
	checkGwErr(t, err, 404, "")
	checkGwErr(t, f.plane.DeleteFile(ctx, f.caller, got.ID), 404, "")
}

// Hammer: uploads, reads and deletes at once; every upload that succeeds reads back whole until deleted.
func TestFilesHammer(t *testing.T) {
	f := newFixture(t, Options{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			content := bytes.Repeat([]byte{byte('a' + i)}, storage.FileChunkSize+i*1000)
			for range 4 {
				got, err := f.upload(t, "h", "batch", content)
				if err != nil {
					t.Error(err)
					return
				}
				_, r, err := f.plane.OpenFile(ctx, f.caller, got.ID)
				if err != nil {
					t.Error(err)
					return
				}
				b, err := io.ReadAll(r)
				r.Close()
				if err != nil || !bytes.Equal(b, content) {
					t.Errorf("read back %d bytes, %v", len(b), err)
				}
				if err := f.plane.DeleteFile(ctx, f.caller, got.ID); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if files, _, _ := f.plane.ListFiles(ctx, f.caller, FileQuery{}); len(files) != 0 {
		t.Fatalf("files left: %d", len(files))
	}
}
