package batch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	_ "github.com/llmgw/gateway/runtime/providers/anthropic"
	"github.com/llmgw/gateway/runtime/upstream"
	"github.com/llmgw/gateway/storage"
)

// batchAPI is a local provider speaking OpenAI's files and batches APIs. The test sets the state GET returns.
type batchAPI struct {
	*httptest.Server
	mu       sync.Mutex
	uploaded string         // the input file's content
	created  map[string]any // the body of POST /batches
	creates  int
	state    string // the provider batch JSON that GET and cancel answer
	cancels  int
	auth     string
	list     string // what GET /batches answers
}

func newBatchAPI(t *testing.T) *batchAPI {
	t.Helper()
	a := &batchAPI{}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.auth = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == "POST" && r.URL.Path == "/v1/files":
			f, _, err := r.FormFile("file")
			if err != nil || r.FormValue("purpose") != "batch" {
				w.WriteHeader(400)
				io.WriteString(w, `{"error":{"message":"bad upload"}}`)
				return
			}
			raw, _ := io.ReadAll(f)
			a.uploaded = string(raw)
			io.WriteString(w, `{"id":"file-up-in","object":"file","purpose":"batch"}`)
		case r.Method == "POST" && r.URL.Path == "/v1/batches":
			a.creates++
			json.NewDecoder(r.Body).Decode(&a.created)
			a.state = `{"id":"batch_up_1","object":"batch","status":"validating","request_counts":{"total":0,"completed":0,"failed":0}}`
			io.WriteString(w, a.state)
		case r.Method == "GET" && r.URL.Path == "/v1/batches" && a.list != "":
			io.WriteString(w, a.list)
		case r.Method == "GET" && r.URL.Path == "/v1/batches/batch_up_1":
			io.WriteString(w, a.state)
		case r.Method == "POST" && r.URL.Path == "/v1/batches/batch_up_1/cancel":
			a.cancels++
			a.state = `{"id":"batch_up_1","status":"cancelling","cancelling_at":50,"request_counts":{"total":2,"completed":0,"failed":0}}`
			io.WriteString(w, a.state)
		case r.Method == "GET" && r.URL.Path == "/v1/files/file-up-out/content":
			io.WriteString(w, `{"id":"r1","custom_id":"a","response":{"status_code":200,"request_id":"x","body":{}},"error":null}`+"\n")
		case r.Method == "GET" && r.URL.Path == "/v1/files/file-up-err/content":
			io.WriteString(w, `{"id":"r2","custom_id":"b","response":{"status_code":500,"request_id":"y","body":{}},"error":null}`+"\n")
		default:
			w.WriteHeader(404)
			fmt.Fprintf(w, `{"error":{"message":"no route %s %s"}}`, r.Method, r.URL.Path)
		}
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *batchAPI) set(state string) {
	a.mu.Lock()
	a.state = state
	a.mu.Unlock()
}

// A 24h batch of a provider with a batch API is forwarded: the input uploaded, the provider's batch made
// with the metadata and a marker, its state mirrored when read, and its result files imported as gateway
// files once it is done, so that the caller only sees gateway IDs.
func TestForwarded24hBatch(t *testing.T) {
	e := newEnv(t)
	api := newBatchAPI(t)
	e.provider(t, "fw", "openai", api.URL+"/v1")
	r := e.runner(t, Options{Upstream: upstream.New(e.store, e.engine, e.log)})
	input := chatLine("a", "") + "\n" + chatLine("b", "") + "\n"
	nb := e.newBatch(e.file(t, input), Window24h)
	nb.Request.VirtualKey, nb.Metadata = "fw", map[string]string{"team": "x"}
	b, err := r.Create(context.Background(), nb)
	if err != nil {
		t.Fatal(err)
	}
	if b.Upstream == nil || b.Upstream.Provider != "openai" || b.ExpiresAt != 0 {
		t.Fatalf("created: %+v", b)
	}
	// Sent: the input uploaded as it is, the batch made with the caller's metadata and the gateway's marker.
	b = e.wait(t, r, b.ID, func(b *storage.Batch) bool { return b.Upstream.BatchID != "" })
	api.mu.Lock()
	if api.uploaded != input || api.created["input_file_id"] != "file-up-in" || api.created["endpoint"] != "/v1/chat/completions" ||
		api.created["completion_window"] != "24h" || api.auth != "Bearer sk-fw" {
		t.Fatalf("provider got upload %q, batch %v, auth %q", api.uploaded, api.created, api.auth)
	}
	if md := api.created["metadata"].(map[string]any); md["team"] != "x" || md[markerKey] != b.ID {
		t.Fatalf("provider batch metadata: %v", md)
	}
	api.mu.Unlock()
	if b.Upstream.BatchID != "batch_up_1" || b.Upstream.Submitting || b.Status != storage.BatchValidating {
		t.Fatalf("after sending: %+v %+v", b, b.Upstream)
	}

	api.set(`{"id":"batch_up_1","status":"in_progress","in_progress_at":10,"expires_at":90000,"request_counts":{"total":2,"completed":1,"failed":0}}`)
	b = e.wait(t, r, b.ID, func(b *storage.Batch) bool { return b.Status == storage.BatchInProgress })
	if b.InProgressAt != 10 || b.ExpiresAt != 90000 || b.Counts != (storage.BatchCounts{Total: 2, Completed: 1}) {
		t.Fatalf("mirrored: %+v", b)
	}
	api.set(`{"id":"batch_up_1","status":"completed","in_progress_at":10,"finalizing_at":20,"completed_at":30,
		"output_file_id":"file-up-out","error_file_id":"file-up-err","request_counts":{"total":2,"completed":1,"failed":1}}`)
	b = e.wait(t, r, b.ID, final)
	if b.Status != storage.BatchCompleted || b.CompletedAt != 30 || b.FinalizingAt != 20 || b.Counts != (storage.BatchCounts{Total: 2, Completed: 1, Failed: 1}) {
		t.Fatalf("done: %+v", b)
	}
	out, errs := e.results(t, b.OutputFileID), e.results(t, b.ErrorFileID)
	if len(out) != 1 || out[0].CustomID != "a" || len(errs) != 1 || errs[0].CustomID != "b" || strings.Contains(b.OutputFileID, "up") {
		t.Fatalf("imported files %s %s: %+v %+v", b.OutputFileID, b.ErrorFileID, out, errs)
	}
	if api.creates != 1 || e.up.calls.Load() != 0 {
		t.Fatalf("%d provider batches made, %d lines run in the gateway", api.creates, e.up.calls.Load())
	}
}

// A forwarded batch is cancelled at the provider; a start that finds a batch sent in doubt (a crash between
// sending it and storing its ID) finds it by its marker instead of sending it again.
func TestForwardedBatchCancelAndDoubt(t *testing.T) {
	e := newEnv(t)
	api := newBatchAPI(t)
	e.provider(t, "fw", "openai", api.URL+"/v1")
	client := upstream.New(e.store, e.engine, e.log)
	// In doubt: the record says it was being sent; the provider has it, with the marker.
	nb := e.newBatch(e.file(t, chatLine("a", "")), Window24h)
	nb.ID, nb.Status, nb.CreatedAt, nb.Request.VirtualKey = "batch_doubt", storage.BatchValidating, 1, "fw"
	nb.Upstream = &storage.BatchUpstream{Provider: "openai", Submitting: true}
	if err := e.store.Batches.Create(nb); err != nil {
		t.Fatal(err)
	}
	api.mu.Lock()
	api.list = `{"object":"list","data":[{"id":"batch_other","status":"completed","metadata":{}},
		{"id":"batch_up_1","status":"in_progress","metadata":{"gateway_batch_id":"batch_doubt"}}]}`
	api.state = `{"id":"batch_up_1","status":"in_progress","request_counts":{"total":1,"completed":0,"failed":0}}`
	api.mu.Unlock()
	r := e.runner(t, Options{Upstream: client})
	b := e.wait(t, r, nb.ID, func(b *storage.Batch) bool { return b.Upstream.BatchID != "" })
	if b.Upstream.BatchID != "batch_up_1" || api.creates != 0 || b.Status != storage.BatchInProgress {
		t.Fatalf("in doubt: %+v %+v, %d batches made", b, b.Upstream, api.creates)
	}

	c, err := r.Cancel(context.Background(), e.ws, b.ID)
	if err != nil || c.Status != storage.BatchCancelling || api.cancels != 1 {
		t.Fatalf("cancel: %+v %v (%d provider cancels)", c, err, api.cancels)
	}
	api.set(`{"id":"batch_up_1","status":"cancelled","cancelling_at":50,"cancelled_at":60,"request_counts":{"total":1,"completed":0,"failed":0}}`)
	b = e.wait(t, r, b.ID, final)
	if b.Status != storage.BatchCancelled || b.CancelledAt != 60 || b.OutputFileID != "" || b.ErrorFileID != "" {
		t.Fatalf("cancelled: %+v", b)
	}
}

// A 24h batch of a provider without a batch API runs in the gateway; one the provider refuses fails with the
// provider's words.
func TestUnsupportedAndRefused24hBatches(t *testing.T) {
	e := newEnv(t)
	e.provider(t, "claude", "anthropic", e.up.URL+"/v1") // not Anthropic's answers, but no test reaches the internet
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(401)
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided","code":"invalid_api_key"}}`)
	}))
	defer refusing.Close()
	e.provider(t, "bad", "openai", refusing.URL+"/v1")
	r := e.runner(t, Options{Upstream: upstream.New(e.store, e.engine, e.log)})

	nb := e.newBatch(e.file(t, chatLine("a", "")), Window24h)
	nb.Request.VirtualKey = "claude"
	b, err := r.Create(context.Background(), nb)
	if err != nil {
		t.Fatal(err)
	}
	if b.Upstream != nil || b.ExpiresAt != b.CreatedAt+24*3600 {
		t.Fatalf("a provider without a batch API: %+v", b)
	}
	b = e.wait(t, r, b.ID, final)
	if b.Status != storage.BatchCompleted || b.Counts.Total != 1 || e.up.calls.Load() != 1 {
		t.Fatalf("gateway-managed 24h batch: %+v", b)
	}

	nb = e.newBatch(e.file(t, chatLine("a", "")), Window24h)
	nb.Request.VirtualKey = "bad"
	if b, err = r.Create(context.Background(), nb); err != nil {
		t.Fatal(err)
	}
	b = e.wait(t, r, b.ID, final)
	if b.Status != storage.BatchFailed || len(b.Errors) != 1 || b.Errors[0].Code != "invalid_api_key" ||
		!strings.Contains(b.Errors[0].Message, "Incorrect API key provided") {
		t.Fatalf("refused: %+v", b)
	}
}
