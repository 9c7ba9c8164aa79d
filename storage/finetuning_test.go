package storage

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestFileMirrorBothWays(t *testing.T) {
	s := openTest(t, nil, nil)
	ws, other := NewUUID(), NewUUID()
	ft := s.FineTuning
	if err := ft.PutFileMirror(ws, "oa", "file-g1", "fine-tune", "file-p1"); err != nil {
		t.Fatal(err)
	}
	// A provider ID that is no key component (Azure's could hold anything) is kept by its hash.
	odd := "assistant/file 9?"
	if err := ft.PutFileMirror(ws, "oa", "file-g2", "fine-tune", odd); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, want string
		lookup     func() (string, error)
	}{
		{"provider of g1", "file-p1", func() (string, error) { return ft.ProviderFileID(ws, "oa", "file-g1", "fine-tune") }},
		{"gateway of p1", "file-g1", func() (string, error) { return ft.GatewayFileID(ws, "oa", "file-p1") }},
		{"provider of g2", odd, func() (string, error) { return ft.ProviderFileID(ws, "oa", "file-g2", "fine-tune") }},
		{"gateway of the odd id", "file-g2", func() (string, error) { return ft.GatewayFileID(ws, "oa", odd) }},
	}
	for _, tc := range tests {
		if got, err := tc.lookup(); err != nil || got != tc.want {
			t.Errorf("%s = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	for _, miss := range []struct{ ws, slug, id string }{{other, "oa", "file-g1"}, {ws, "oa2", "file-g1"}, {ws, "oa", "file-g3"}, {ws, "a/b", "file-g1"}} {
		if _, err := ft.ProviderFileID(miss.ws, miss.slug, miss.id, "fine-tune"); !errors.Is(err, ErrNotFound) {
			t.Errorf("ProviderFileID%v = %v, want ErrNotFound", miss, err)
		}
	}
	if _, err := ft.GatewayFileID(other, "oa", "file-p1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("another workspace sees the mirror: %v", err)
	}
	if err := ft.PutFileMirror(ws, "oa", "bad/id", "fine-tune", "file-p"); err == nil {
		t.Error("a gateway file id that is no key component was stored")
	}
}

func TestFineTuningJobsNewestFirst(t *testing.T) {
	clk := newFakeClock()
	s := openTest(t, nil, clk)
	ws := NewUUID()
	var ids []string
	for i := range 5 {
		id := NewTimeOrderedID("ftjob-", clk.Advance(time.Millisecond))
		ids = append(ids, id)
		if err := s.FineTuning.PutJob(&FineTuningJob{ID: id, WorkspaceID: ws, VirtualKey: "oa", ProviderJobID: fmt.Sprint("p", i)}); err != nil {
			t.Fatal(err)
		}
	}
	// Another virtual key's and another workspace's jobs never show.
	_ = s.FineTuning.PutJob(&FineTuningJob{ID: NewTimeOrderedID("ftjob-", clk.Advance(time.Millisecond)), WorkspaceID: ws, VirtualKey: "oa2", ProviderJobID: "x"})
	_ = s.FineTuning.PutJob(&FineTuningJob{ID: NewTimeOrderedID("ftjob-", clk.Advance(time.Millisecond)), WorkspaceID: NewUUID(), VirtualKey: "oa", ProviderJobID: "y"})

	tests := []struct {
		after string
		limit int
		want  []string
		more  bool
	}{
		{"", 2, []string{ids[4], ids[3]}, true},
		{ids[3], 2, []string{ids[2], ids[1]}, true},
		{ids[1], 2, []string{ids[0]}, false},
		{ids[0], 2, nil, false},
		{"", 5, []string{ids[4], ids[3], ids[2], ids[1], ids[0]}, false},
		{"", 0, nil, false},
	}
	for _, tc := range tests {
		jobs, more, err := s.FineTuning.ListJobs(ws, "oa", tc.after, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, j := range jobs {
			got = append(got, j.ID)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) || more != tc.more {
			t.Errorf("ListJobs(after %q, %d) = %v, %v; want %v, %v", tc.after, tc.limit, got, more, tc.want, tc.more)
		}
	}
	j, err := s.FineTuning.GetJob(ws, "oa", ids[2])
	if err != nil || j.ProviderJobID != "p2" {
		t.Errorf("GetJob = %+v, %v", j, err)
	}
	if _, err := s.FineTuning.GetJob(ws, "oa2", ids[2]); !errors.Is(err, ErrNotFound) {
		t.Errorf("another virtual key reads the job: %v", err)
	}
}

// TestFineTuningWritesAreSynced: a job and a mirror acknowledged before a crash are there after it.
func TestFineTuningWritesAreSynced(t *testing.T) {
	mem := vfs.NewCrashableMem()
	s := openTest(t, mem, nil)
	requirePebble(t, s)
	ws := NewUUID()
	if err := s.FineTuning.PutJob(&FineTuningJob{ID: "ftjob-1", WorkspaceID: ws, VirtualKey: "oa", ProviderJobID: "p1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.FineTuning.PutFileMirror(ws, "oa", "file-g", "fine-tune", "file-p"); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	s2 := openTest(t, crashed, nil)
	if _, err := s2.FineTuning.GetJob(ws, "oa", "ftjob-1"); err != nil {
		t.Errorf("job lost in the crash: %v", err)
	}
	if p, err := s2.FineTuning.ProviderFileID(ws, "oa", "file-g", "fine-tune"); err != nil || p != "file-p" {
		t.Errorf("mirror lost in the crash: %q %v", p, err)
	}
}
