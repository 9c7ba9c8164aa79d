package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// recordingRunner is a BatchRunner that stores what it is given, as created, and records the calls.
type recordingRunner struct {
	store     *storage.Store
	created   []*storage.Batch
	cancelled []string
	viewed    map[string]bool // batch id → refresh
}

func (r *recordingRunner) Create(_ context.Context, b *storage.Batch) (*storage.Batch, error) {
	b.ID, b.Status = fmt.Sprintf("batch_%03d", len(r.created)), storage.BatchValidating
	if err := r.store.Batches.Create(b); err != nil {
		return nil, err
	}
	r.created = append(r.created, b)
	return b, nil
}

func (r *recordingRunner) Cancel(_ context.Context, workspaceID, id string) (*storage.Batch, error) {
	r.cancelled = append(r.cancelled, id)
	return r.store.Batches.Get(workspaceID, id)
}

func (r *recordingRunner) View(_ context.Context, b *storage.Batch, refresh bool) *storage.Batch {
	r.viewed[b.ID] = refresh
	return b
}

func newBatchFixture(t *testing.T) (*fixture, *recordingRunner) {
	t.Helper()
	runner := &recordingRunner{viewed: map[string]bool{}}
	f := newFixture(t, Options{Batches: runner})
	runner.store = f.store
	if _, err := f.store.Providers.Put(&storage.Provider{WorkspaceID: f.caller.WorkspaceID, Slug: "vk", Provider: "openai",
		Fields: map[string]json.RawMessage{"api_key": json.RawMessage(`"sk"`)}}); err != nil {
		t.Fatal(err)
	}
	for _, file := range []storage.File{{ID: "file-in", Purpose: "batch"}, {ID: "file-ft", Purpose: "fine-tune"}} {
		w, err := f.store.Files.Create(f.caller.WorkspaceID, file, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	return f, runner
}

func validBatchInput() BatchInput {
	return BatchInput{InputFileID: "file-in", Endpoint: "/v1/chat/completions", CompletionWindow: "immediate",
		Request: storage.BatchRequest{VirtualKey: "vk", Authorization: "sk-caller"}}
}

func TestCreateBatchValidation(t *testing.T) {
	f, runner := newBatchFixture(t)
	long := strings.Repeat("k", 65)
	many := map[string]string{}
	for i := range 17 {
		many[fmt.Sprint("k", i)] = "v"
	}
	manyJSON, _ := json.Marshal(many)
	tests := []struct {
		name   string
		change func(in *BatchInput)
		param  string
	}{
		{"no virtual key", func(in *BatchInput) { in.Request.VirtualKey = "" }, "x-gateway-virtual-key"},
		{"unknown virtual key", func(in *BatchInput) { in.Request.VirtualKey = "nope" }, "x-gateway-virtual-key"},
		{"no input file", func(in *BatchInput) { in.InputFileID = "" }, "input_file_id"},
		{"unknown input file", func(in *BatchInput) { in.InputFileID = "file-nope" }, "input_file_id"},
		{"input file of another purpose", func(in *BatchInput) { in.InputFileID = "file-ft" }, "input_file_id"},
		{"input file id that is no id", func(in *BatchInput) { in.InputFileID = "../x" }, "input_file_id"},
		{"no endpoint", func(in *BatchInput) { in.Endpoint = "" }, "endpoint"},
		{"unknown endpoint", func(in *BatchInput) { in.Endpoint = "/v1/responses" }, "endpoint"},
		{"endpoint without /v1", func(in *BatchInput) { in.Endpoint = "/chat/completions" }, "endpoint"},
		{"no window", func(in *BatchInput) { in.CompletionWindow = "" }, "completion_window"},
		{"unknown window", func(in *BatchInput) { in.CompletionWindow = "1h" }, "completion_window"},
		{"metadata an array", func(in *BatchInput) { in.Metadata = json.RawMessage(`["a"]`) }, "metadata"},
		{"metadata a string", func(in *BatchInput) { in.Metadata = json.RawMessage(`"a"`) }, "metadata"},
		{"metadata with 17 pairs", func(in *BatchInput) { in.Metadata = manyJSON }, "metadata"},
		{"metadata key too long", func(in *BatchInput) { in.Metadata = json.RawMessage(`{"` + long + `":"v"}`) }, "metadata"},
		{"metadata value not a string", func(in *BatchInput) { in.Metadata = json.RawMessage(`{"a":1}`) }, "metadata.a"},
		{"metadata value too long", func(in *BatchInput) {
			in.Metadata = json.RawMessage(`{"a":"` + strings.Repeat("é", 513) + `"}`)
		}, "metadata.a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := validBatchInput()
			tc.change(&in)
			_, err := f.plane.CreateBatch(ctx, f.caller, in)
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Status != http.StatusBadRequest || ge.Param != tc.param || ge.Message == "" {
				t.Fatalf("err = %v, want a 400 naming %s", err, tc.param)
			}
		})
	}
	if len(runner.created) != 0 {
		t.Fatalf("refused batches reached the runner: %+v", runner.created)
	}
}

func TestCreateBatch(t *testing.T) {
	f, runner := newBatchFixture(t)
	tests := []struct {
		name     string
		metadata string
		want     map[string]string
	}{
		{"no metadata", "", nil},
		{"null metadata", "null", nil},
		{"empty metadata", "{}", map[string]string{}},
		{"limits exactly", `{"` + strings.Repeat("k", 64) + `":"` + strings.Repeat("é", 512) + `"}`,
			map[string]string{strings.Repeat("k", 64): strings.Repeat("é", 512)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := validBatchInput()
			in.CompletionWindow = "24h"
			in.Metadata = json.RawMessage(tc.metadata)
			b, err := f.plane.CreateBatch(ctx, f.caller, in)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(b.Metadata) != fmt.Sprint(tc.want) || (b.Metadata == nil) != (tc.want == nil) {
				t.Fatalf("metadata %#v, want %#v", b.Metadata, tc.want)
			}
			if b.WorkspaceID != f.caller.WorkspaceID || b.Request.KeyID != f.caller.KeyID || b.Request.TraceID != f.caller.TraceID ||
				b.Request.Authorization != "sk-caller" || b.CompletionWindow != "24h" || b.InputFileID != "file-in" {
				t.Fatalf("batch handed to the runner: %+v", b)
			}
		})
	}
	if len(runner.created) != len(tests) {
		t.Fatalf("runner got %d batches", len(runner.created))
	}
}

// Another workspace's batch is a 404 for every operation and never listed; lists page with after.
func TestBatchesOfAnotherWorkspace(t *testing.T) {
	f, runner := newBatchFixture(t)
	for range 3 {
		if _, err := f.plane.CreateBatch(ctx, f.caller, validBatchInput()); err != nil {
			t.Fatal(err)
		}
	}
	other := Caller{WorkspaceID: storage.NewUUID(), KeyID: "key-2"}
	var ge *gwerr.Error
	if _, err := f.plane.GetBatch(ctx, other, "batch_000"); !errors.As(err, &ge) || ge.Status != http.StatusNotFound {
		t.Fatalf("get of another workspace's batch: %v", err)
	}
	if _, err := f.plane.CancelBatch(ctx, other, "batch_000"); !errors.As(err, &ge) || ge.Status != http.StatusNotFound {
		t.Fatalf("cancel of another workspace's batch: %v", err)
	}
	if len(runner.cancelled) != 0 {
		t.Fatal("a cancel of another workspace's batch reached the runner")
	}
	if page, _, err := f.plane.ListBatches(ctx, other, "", 100); err != nil || len(page) != 0 {
		t.Fatalf("another workspace lists %d batches (%v)", len(page), err)
	}

	b, err := f.plane.GetBatch(ctx, f.caller, "batch_001")
	if err != nil || b.ID != "batch_001" || !runner.viewed["batch_001"] {
		t.Fatalf("get: %+v %v (a read asks for the provider's state)", b, err)
	}
	if _, err := f.plane.CancelBatch(ctx, f.caller, "batch_001"); err != nil || runner.cancelled[0] != "batch_001" {
		t.Fatalf("cancel: %v %v", err, runner.cancelled)
	}
	page, more, err := f.plane.ListBatches(ctx, f.caller, "batch_002", 1)
	if err != nil || len(page) != 1 || page[0].ID != "batch_001" || !more || runner.viewed["batch_001"] {
		t.Fatalf("list after batch_002: %d %v %v (a list does not call providers)", len(page), more, err)
	}
	if _, _, err := f.plane.ListBatches(ctx, f.caller, "a/b", 1); !errors.As(err, &ge) || ge.Param != "after" {
		t.Fatalf("list after a bad id: %v", err)
	}
}

func TestBatchesWithoutARunner(t *testing.T) {
	f := newFixture(t, Options{})
	var ge *gwerr.Error
	if _, err := f.plane.CreateBatch(ctx, f.caller, validBatchInput()); !errors.As(err, &ge) || ge.Status != http.StatusServiceUnavailable {
		t.Fatalf("create without a runner: %v", err)
	}
}
