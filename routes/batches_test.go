package routes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/runtime/batch"
	"github.com/llmgw/gateway/storage"
)

// batchUpstream is a local OpenAI-compatible provider for batches: it echoes the first message and the x-tenant
// and authorization headers, answers 429 to bodies whose user is "fail", and holds every call while hold is set.
type batchUpstream struct {
	*httptest.Server
	calls atomic.Int64
	hold  atomic.Pointer[chan struct{}]
}

// newBatchFixture is newFixture whose control plane runs batches, with a stored provider "up" over a
// batchUpstream in both workspaces.
func newBatchFixture(t *testing.T) (*fixture, *batchUpstream) {
	t.Helper()
	f := newFixture(t, Options{})
	runner := batch.New(f.store, f.srv.engine, batch.Options{Concurrency: 4, Logger: f.srv.log})
	if err := runner.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(runner.Stop)
	f.srv = New(f.store, f.srv.engine, Options{Logger: f.srv.log,
		Plane: control.New(f.store, f.srv.engine, control.Options{Batches: runner, Logger: f.srv.log})})
	up := &batchUpstream{}
	up.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up.calls.Add(1)
		var body struct {
			User     string `json:"user"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		raw, _ := io.ReadAll(r.Body) // before holding: the server sees a caller go away only once it is read
		json.Unmarshal(raw, &body)
		if hold := up.hold.Load(); hold != nil {
			select {
			case <-*hold:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		if body.User == "fail" || len(body.Messages) == 0 {
			w.WriteHeader(429)
			io.WriteString(w, `{"error":{"message":"slow down"}}`)
			return
		}
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%q}}],"tenant":%q,"meta":%q}`,
			body.Messages[0].Content, r.Header.Get("x-tenant"), r.Header.Get("authorization"))
	}))
	t.Cleanup(up.Close)
	host, _ := json.Marshal(up.URL + "/v1")
	for _, ws := range []string{f.ws.ID, f.other.ID} {
		if _, err := f.store.Providers.Put(&storage.Provider{WorkspaceID: ws, Slug: "up", Provider: "openai",
			Fields: map[string]json.RawMessage{"api_key": json.RawMessage(`"sk-stored"`), "custom_host": host}}); err != nil {
			t.Fatal(err)
		}
	}
	return f, up
}

// inputFile uploads a batch input file with key and returns its ID.
func (f *fixture) inputFile(t *testing.T, key, content string) string {
	t.Helper()
	a := f.upload(t, key, formPart{name: "purpose", value: "batch"}, formPart{name: "file", filename: "in.jsonl", value: content})
	if a.status != 200 {
		t.Fatalf("upload: %d %s", a.status, a.body)
	}
	return a.json(t)["id"].(string)
}

func batchLine(id, user string) string {
	return fmt.Sprintf(`{"custom_id":%q,"method":"POST","url":"/v1/chat/completions","body":{"model":"m","user":%q,"messages":[{"role":"user","content":%q}]}}`,
		id, user, id)
}

func (f *fixture) createBatch(t *testing.T, key, body string, headers ...string) answer {
	t.Helper()
	return f.do(t, "POST", "/v1/batches", body, append([]string{HeaderAPIKey, key, "Content-Type", "application/json"}, headers...)...)
}

// getBatches reads a batch endpoint with the virtual key SPEC.md requires on every batch endpoint.
func (f *fixture) getBatches(t *testing.T, key, path string) answer {
	t.Helper()
	return f.do(t, "GET", path, "", HeaderAPIKey, key, HeaderVirtualKey, "up")
}

// waitBatch reads the batch until it is final and returns it.
func (f *fixture) waitBatch(t *testing.T, key, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		a := f.getBatches(t, key, "/v1/batches/"+id)
		if a.status != 200 {
			t.Fatalf("GET batch: %d %s", a.status, a.body)
		}
		b := a.json(t)
		if storage.BatchDone(b["status"].(string)) {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch not done in time: %s", a.body)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCreateBatchErrors(t *testing.T) {
	f, _ := newBatchFixture(t)
	file := f.inputFile(t, f.plain, batchLine("a", ""))
	otherFile := f.inputFile(t, f.otherKey, batchLine("a", ""))
	ok := fmt.Sprintf(`{"input_file_id":%q,"endpoint":"/v1/chat/completions","completion_window":"immediate"}`, file)
	vk := []string{HeaderVirtualKey, "up"}
	tests := []struct {
		name    string
		body    string
		headers []string
		status  int
		code    string
		param   any
	}{
		{"no virtual key", ok, nil, 400, "invalid_request", HeaderVirtualKey},
		{"unknown virtual key", ok, []string{HeaderVirtualKey, "nope"}, 400, "invalid_request", HeaderVirtualKey},
		{"not JSON", `input_file_id=x`, vk, 400, "invalid_json", nil},
		{"unknown field", `{"input_file_id":"x","model":"m"}`, vk, 400, "invalid_request", "model"},
		{"input_file_id not a string", `{"input_file_id":1}`, vk, 400, "invalid_request", "input_file_id"},
		{"no input file", `{"endpoint":"/v1/chat/completions","completion_window":"immediate"}`, vk, 400, "invalid_request", "input_file_id"},
		{"another workspace's file", strings.Replace(ok, file, otherFile, 1), vk, 400, "invalid_request", "input_file_id"},
		{"bad endpoint", strings.Replace(ok, "/v1/chat/completions", "/v1/moderations", 1), vk, 400, "invalid_request", "endpoint"},
		{"bad window", strings.Replace(ok, "immediate", "48h", 1), vk, 400, "invalid_request", "completion_window"},
		{"metadata a number", strings.Replace(ok, "}", `,"metadata":3}`, 1), vk, 400, "invalid_request", "metadata"},
		{"metadata value a number", strings.Replace(ok, "}", `,"metadata":{"k":3}}`, 1), vk, 400, "invalid_request", "metadata.k"},
		{"bad metadata header", ok, append([]string{HeaderMetadata, `[1]`}, vk...), 400, "invalid_request", HeaderMetadata},
		{"bad request timeout header", ok, append([]string{HeaderRequestTimeout, `soon`}, vk...), 400, "invalid_request", HeaderRequestTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkError(t, f.createBatch(t, f.plain, tc.body, tc.headers...), tc.status, tc.code, tc.param)
		})
	}
	a := f.do(t, "POST", "/v1/batches", ok, HeaderAPIKey, f.plain, "Content-Type", "text/plain", HeaderVirtualKey, "up")
	checkError(t, a, 415, "unsupported_media_type", "content-type")
	if list, _, _ := f.store.Batches.List(f.ws.ID, "", 10); len(list) != 0 {
		t.Fatalf("refused requests made %d batches", len(list))
	}
}

// A batch made over HTTP runs with the creating request's gateway headers, answers SPEC.md's batch object at
// every step, and its result files read back through /v1/files.
func TestBatchThroughHTTP(t *testing.T) {
	f, up := newBatchFixture(t)
	content := batchLine("one", "") + "\n" + batchLine("two", "fail") + "\n" + `{"custom_id":"one","method":"POST","url":"/v1/chat/completions","body":{}}` + "\n"
	file := f.inputFile(t, f.plain, content)
	a := f.createBatch(t, f.plain, fmt.Sprintf(`{"input_file_id":%q,"endpoint":"/v1/chat/completions","completion_window":"immediate","metadata":{"team":"search"}}`, file),
		HeaderVirtualKey, "up", HeaderForward, "x-tenant", "x-tenant", "acme", HeaderTraceID, "trace-b1")
	if a.status != 200 {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	created := a.json(t)
	wantKeys := []string{"id", "object", "endpoint", "errors", "input_file_id", "completion_window", "status", "output_file_id",
		"error_file_id", "created_at", "in_progress_at", "expires_at", "finalizing_at", "completed_at", "failed_at", "expired_at",
		"cancelling_at", "cancelled_at", "request_counts", "metadata"}
	for _, k := range wantKeys {
		if _, ok := created[k]; !ok {
			t.Errorf("batch object has no %s: %s", k, a.body)
		}
	}
	if len(created) != len(wantKeys) || created["object"] != "batch" || created["status"] != "validating" || created["output_file_id"] != nil ||
		created["errors"] != nil || created["expires_at"] != nil || created["metadata"].(map[string]any)["team"] != "search" {
		t.Fatalf("created batch: %s", a.body)
	}
	id := created["id"].(string)
	b := f.waitBatch(t, f.plain, id)
	counts := b["request_counts"].(map[string]any)
	if b["status"] != "completed" || counts["total"] != 2.0 || counts["completed"] != 1.0 || counts["failed"] != 1.0 ||
		b["completed_at"] == nil || b["in_progress_at"] == nil || b["finalizing_at"] == nil || b["cancelled_at"] != nil {
		t.Fatalf("done batch: %v", b)
	}
	errs := b["errors"].(map[string]any)
	data := errs["data"].([]any)
	if errs["object"] != "list" || len(data) != 1 {
		t.Fatalf("errors: %v", errs)
	}
	if e := data[0].(map[string]any); e["code"] != "duplicate_custom_id" || e["param"] != "custom_id" || e["line"] != 3.0 {
		t.Fatalf("errors.data[0]: %v", e)
	}
	out := f.getJSON(t, f.plain, "/v1/files/"+b["output_file_id"].(string)+"/content")
	if out.status != 200 || bytes.Count(out.body, []byte("\n")) != 1 || !bytes.Contains(out.body, []byte(`"custom_id":"one"`)) ||
		!bytes.Contains(out.body, []byte(`"tenant":"acme"`)) || !bytes.Contains(out.body, []byte(`"meta":"Bearer sk-stored"`)) {
		t.Fatalf("output file: %d %s", out.status, out.body)
	}
	errFile := f.getJSON(t, f.plain, "/v1/files/"+b["error_file_id"].(string)+"/content")
	if errFile.status != 200 || !bytes.Contains(errFile.body, []byte(`"custom_id":"two","response":{"status_code":429`)) {
		t.Fatalf("error file: %d %s", errFile.status, errFile.body)
	}
	if up.calls.Load() != 2 {
		t.Fatalf("upstream calls %d, want 2", up.calls.Load())
	}
	// Another workspace sees nothing of it.
	checkError(t, f.getBatches(t, f.otherKey, "/v1/batches/"+id), 404, "not_found", nil)
	checkError(t, f.do(t, "POST", "/v1/batches/"+id+"/cancel", "", HeaderAPIKey, f.otherKey, HeaderVirtualKey, "up"), 404, "not_found", nil)
	if l := f.getBatches(t, f.otherKey, "/v1/batches"); l.status != 200 || len(l.json(t)["data"].([]any)) != 0 {
		t.Fatalf("another workspace's list: %s", l.body)
	}
	// Finished: cancelling it is a conflict.
	checkError(t, f.do(t, "POST", "/v1/batches/"+id+"/cancel", "", HeaderAPIKey, f.plain, HeaderVirtualKey, "up"), 409, "conflict", nil)
}

func TestListBatches(t *testing.T) {
	f, _ := newBatchFixture(t)
	file := f.inputFile(t, f.plain, batchLine("a", ""))
	var ids []string
	for range 5 {
		a := f.createBatch(t, f.plain, fmt.Sprintf(`{"input_file_id":%q,"endpoint":"/v1/chat/completions","completion_window":"immediate"}`, file),
			HeaderVirtualKey, "up")
		if a.status != 200 {
			t.Fatalf("create: %d %s", a.status, a.body)
		}
		ids = append(ids, a.json(t)["id"].(string))
		time.Sleep(2 * time.Millisecond) // IDs order by the millisecond
	}
	type page struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		HasMore bool    `json:"has_more"`
		FirstID *string `json:"first_id"`
		LastID  *string `json:"last_id"`
		Object  string  `json:"object"`
	}
	list := func(query string) page {
		t.Helper()
		a := f.getBatches(t, f.plain, "/v1/batches"+query)
		if a.status != 200 {
			t.Fatalf("list %s: %d %s", query, a.status, a.body)
		}
		var p page
		if err := json.Unmarshal(a.body, &p); err != nil || p.Object != "list" {
			t.Fatalf("list %s: %s", query, a.body)
		}
		return p
	}
	p := list("?limit=2")
	if len(p.Data) != 2 || p.Data[0].ID != ids[4] || p.Data[1].ID != ids[3] || !p.HasMore || *p.FirstID != ids[4] || *p.LastID != ids[3] {
		t.Fatalf("first page: %+v", p)
	}
	p = list("?limit=2&after=" + *p.LastID)
	if len(p.Data) != 2 || p.Data[0].ID != ids[2] || p.Data[1].ID != ids[1] || !p.HasMore {
		t.Fatalf("second page: %+v", p)
	}
	p = list("?limit=2&after=" + *p.LastID)
	if len(p.Data) != 1 || p.Data[0].ID != ids[0] || p.HasMore {
		t.Fatalf("last page: %+v", p)
	}
	if p = list("?after=" + ids[0]); len(p.Data) != 0 || p.HasMore || p.FirstID != nil || p.LastID != nil {
		t.Fatalf("past the end: %+v", p)
	}
	if p = list(""); len(p.Data) != 5 {
		t.Fatalf("default page: %d batches", len(p.Data))
	}
	for _, bad := range []string{"0", "101", "-1", "x", "1.5"} {
		checkError(t, f.getBatches(t, f.plain, "/v1/batches?limit="+bad), 400, "invalid_request", "limit")
	}
	checkError(t, f.getBatches(t, f.plain, "/v1/batches?after=a%2Fb"), 400, "invalid_request", "after")
	checkError(t, f.getBatches(t, f.plain, "/v1/batches/batch_unknown"), 404, "not_found", nil)
}

// The official openai-go SDK makes, reads, lists and cancels batches unchanged.
func TestBatchesWithTheOpenAISDK(t *testing.T) {
	f, up := newBatchFixture(t)
	block := make(chan struct{})
	defer close(block)
	up.hold.Store(&block)
	base, _ := f.serve(t)
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("sk-unused"), option.WithMaxRetries(0),
		option.WithHeader(HeaderAPIKey, f.plain), option.WithHeader(HeaderVirtualKey, "up"))
	ctx := context.Background()
	var lines []string
	for i := range 20 {
		lines = append(lines, batchLine(fmt.Sprint("s-", i), ""))
	}
	file := f.inputFile(t, f.plain, strings.Join(lines, "\n"))
	b, err := client.Batches.New(ctx, openai.BatchNewParams{InputFileID: file, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h, Metadata: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	if b.Status != openai.BatchStatusValidating || b.Metadata["k"] != "v" || b.Object != "batch" {
		t.Fatalf("created: %+v", b)
	}
	got, err := client.Batches.Get(ctx, b.ID)
	if err != nil || got.ID != b.ID {
		t.Fatalf("get: %+v %v", got, err)
	}
	page, err := client.Batches.List(ctx, openai.BatchListParams{Limit: openai.Int(10)})
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != b.ID {
		t.Fatalf("list: %+v %v", page, err)
	}
	// Cancel once every line is validated and counted (the upstream holds them), so that the counts are known.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		cur, err := client.Batches.Get(ctx, b.ID)
		if err == nil && cur.Status == openai.BatchStatusInProgress && cur.RequestCounts.Total == 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch not in progress in time: %+v %v", cur, err)
		}
	}
	c, err := client.Batches.Cancel(ctx, b.ID)
	if err != nil || (c.Status != openai.BatchStatusCancelling && c.Status != openai.BatchStatusCancelled) || c.CancellingAt == 0 {
		t.Fatalf("cancel: %+v %v", c, err)
	}
	done := f.waitBatch(t, f.plain, b.ID)
	if done["status"] != "cancelled" {
		t.Fatalf("after cancel: %v", done)
	}
	final, err := client.Batches.Get(ctx, b.ID)
	if err != nil || final.Status != openai.BatchStatusCancelled || final.CancelledAt == 0 || final.RequestCounts.Total != 20 {
		t.Fatalf("final: %+v %v", final, err)
	}
}
