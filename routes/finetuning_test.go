package routes

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/runtime"
	_ "github.com/llmgw/gateway/runtime/providers/anthropic"
	mgmt "github.com/llmgw/gateway/runtime/upstream"
	"github.com/llmgw/gateway/storage"
)

// fakeFineTuning is a local provider speaking OpenAI's files and fine-tuning APIs (platform.openai.com/docs/
// api-reference/fine-tuning): jobs live in memory and move when the test says so.
type fakeFineTuning struct {
	*httptest.Server
	mu       sync.Mutex
	files    map[string][]byte
	jobs     map[string]map[string]any
	order    []string
	uploads  int
	calls    int
	created  map[string]any // the last create body
	lastPath string
	lastAuth string
	lastQ    string
}

func newFakeFineTuning(t *testing.T) *fakeFineTuning {
	u := &fakeFineTuning{files: map[string][]byte{}, jobs: map[string]map[string]any{}}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.Close)
	return u
}

func (u *fakeFineTuning) fail(w http.ResponseWriter, status int, code, msg string) {
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","param":null,"code":%q}}`, msg, code)
}

func (u *fakeFineTuning) serve(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.calls++
	u.lastPath, u.lastAuth, u.lastQ = r.Method+" "+r.URL.Path, r.Header.Get("Authorization"), r.URL.RawQuery
	w.Header().Set("Content-Type", "application/json")
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case r.Method == "POST" && path == "/files":
		file, hdr, err := r.FormFile("file")
		if err != nil || r.FormValue("purpose") != "fine-tune" {
			u.fail(w, 400, "bad_upload", fmt.Sprintf("bad upload: %v", err))
			return
		}
		data, _ := io.ReadAll(file)
		u.uploads++
		id := fmt.Sprintf("file-up%d", len(u.files)+1)
		u.files[id] = data
		fmt.Fprintf(w, `{"id":%q,"object":"file","bytes":%d,"filename":%q,"purpose":"fine-tune","created_at":1}`, id, len(data), hdr.Filename)
	case r.Method == "GET" && len(parts) >= 2 && parts[0] == "files":
		data, ok := u.files[parts[1]]
		if !ok {
			u.fail(w, 404, "not_found", "No such File object: "+parts[1])
			return
		}
		if len(parts) == 3 && parts[2] == "content" {
			w.Write(data)
			return
		}
		fmt.Fprintf(w, `{"id":%q,"object":"file","bytes":%d,"filename":"step_metrics.csv","purpose":"fine-tune-results"}`, parts[1], len(data))
	case r.Method == "POST" && path == "/fine_tuning/jobs":
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		u.created = body
		if body["model"] == "bad-model" {
			u.fail(w, 400, "model_not_available", "Model bad-model is not available for fine-tuning")
			return
		}
		id := fmt.Sprintf("ftjob-up%d", len(u.jobs)+1)
		job := map[string]any{"id": id, "object": "fine_tuning.job", "created_at": 1700000000 + len(u.jobs), "model": body["model"],
			"status": "validating_files", "training_file": body["training_file"], "validation_file": body["validation_file"],
			"fine_tuned_model": nil, "finished_at": nil, "trained_tokens": nil, "result_files": []any{}, "error": nil,
			"organization_id": "org-up", "hyperparameters": map[string]any{"n_epochs": "auto", "batch_size": "auto"},
			"seed": body["seed"], "integrations": body["integrations"], "estimated_finish": nil}
		u.jobs[id] = job
		u.order = append(u.order, id)
		json.NewEncoder(w).Encode(job)
	case len(parts) >= 3 && parts[0] == "fine_tuning" && parts[1] == "jobs":
		job, ok := u.jobs[parts[2]]
		if !ok {
			u.fail(w, 404, "not_found", "no job "+parts[2])
			return
		}
		switch {
		case len(parts) == 3 && r.Method == "GET":
			json.NewEncoder(w).Encode(job)
		case len(parts) == 4 && parts[3] == "cancel" && r.Method == "POST":
			if job["status"] == "succeeded" {
				u.fail(w, 409, "job_finished", "the job has finished")
				return
			}
			job["status"] = "cancelled"
			json.NewEncoder(w).Encode(job)
		case len(parts) == 4 && parts[3] == "events":
			fmt.Fprintf(w, `{"object":"list","data":[{"object":"fine_tuning.job.event","id":"ftevent-2","created_at":2,"level":"info","message":"Step 2","data":{},"type":"message"},{"object":"fine_tuning.job.event","id":"ftevent-1","created_at":1,"level":"info","message":"Created","data":{},"type":"message"}],"has_more":true}`)
		case len(parts) == 4 && parts[3] == "checkpoints":
			fmt.Fprintf(w, `{"object":"list","data":[{"object":"fine_tuning.job.checkpoint","id":"ftckpt-1","created_at":3,"fine_tuned_model_checkpoint":"ft:m:ckpt-step-10","step_number":10,"metrics":{"train_loss":0.5},"fine_tuning_job_id":%q}],"first_id":"ftckpt-1","last_id":"ftckpt-1","has_more":false}`, parts[2])
		default:
			u.fail(w, 404, "not_found", "no route")
		}
	default:
		u.fail(w, 404, "not_found", "no route "+path)
	}
}

// set changes a provider job's fields, as the provider's progress would.
func (u *fakeFineTuning) set(id string, fields map[string]any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for k, v := range fields {
		u.jobs[id][k] = v
	}
}

func (u *fakeFineTuning) snapshot() (calls, uploads int, created map[string]any, lastPath, lastAuth, lastQ string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.calls, u.uploads, u.created, u.lastPath, u.lastAuth, u.lastQ
}

type ftFixture struct {
	*fixture
	up    *fakeFineTuning
	train *storage.File
	valid *storage.File
}

// newFineTuningFixture serves the fixture's workspaces with a plane that calls providers: workspace default has
// the stored providers ft (openai, on the fake) and claude (anthropic); workspace other has its own ft, on the
// same fake account.
func newFineTuningFixture(t *testing.T) *ftFixture {
	t.Helper()
	f := newFixture(t, Options{})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	engine := runtime.New(f.store, runtime.Options{Logger: log})
	plane := control.New(f.store, engine, control.Options{Logger: log, Upstream: mgmt.New(f.store, engine, log)})
	f.srv = New(f.store, engine, Options{Logger: log, Plane: plane})
	up := newFakeFineTuning(t)
	put := func(ws, slug, provider string, fields map[string]string) {
		raw := map[string]json.RawMessage{}
		for k, v := range fields {
			raw[k], _ = json.Marshal(v)
		}
		if _, err := f.store.Providers.Put(&storage.Provider{WorkspaceID: ws, Slug: slug, Provider: provider, Fields: raw}); err != nil {
			t.Fatal(err)
		}
	}
	put(f.ws.ID, "ft", "openai", map[string]string{"api_key": "sk-ft", "custom_host": up.URL + "/v1"})
	put(f.ws.ID, "ft2", "openai", map[string]string{"api_key": "sk-ft", "custom_host": up.URL + "/v1"})
	put(f.ws.ID, "claude", "anthropic", map[string]string{"api_key": "sk-ant"})
	put(f.other.ID, "ft", "openai", map[string]string{"api_key": "sk-ft", "custom_host": up.URL + "/v1"})
	ff := &ftFixture{fixture: f, up: up}
	ff.train = ff.file(t, f.ws.ID, "train.jsonl", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`+"\n")
	ff.valid = ff.file(t, f.ws.ID, "valid.jsonl", `{"messages":[]}`+"\n")
	return ff
}

func (f *ftFixture) file(t *testing.T, ws, name, content string) *storage.File {
	t.Helper()
	w, err := f.store.Files.Create(ws, storage.File{Filename: name, Purpose: "fine-tune"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, content)
	file, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	return file
}

// ft sends a fine-tuning request with the plain key of workspace default and virtual key ft, unless headers
// say otherwise.
func (f *ftFixture) ft(t *testing.T, method, path, body string, headers ...string) answer {
	t.Helper()
	h := []string{HeaderAPIKey, f.plain, HeaderVirtualKey, "ft"}
	if body != "" {
		h = append(h, "Content-Type", "application/json")
	}
	return f.do(t, method, path, body, append(h, headers...)...)
}

func (f *ftFixture) create(t *testing.T, body string) map[string]any {
	t.Helper()
	a := f.ft(t, "POST", "/v1/fine_tuning/jobs", body)
	if a.status != 200 {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	return a.json(t)
}

// checkJob asserts SPEC.md's job object: every required field, object, and the null rules of its status.
func checkJob(t *testing.T, job map[string]any) {
	t.Helper()
	for _, k := range []string{"id", "created_at", "error", "fine_tuned_model", "finished_at", "hyperparameters", "model", "object",
		"organization_id", "result_files", "status", "trained_tokens", "training_file", "validation_file", "seed", "integrations", "estimated_finish"} {
		if _, ok := job[k]; !ok {
			t.Errorf("job has no %s: %v", k, job)
		}
	}
	if job["object"] != "fine_tuning.job" {
		t.Errorf("object = %v", job["object"])
	}
	if _, ok := job["error"].(map[string]any); !ok {
		t.Errorf("error = %v, want an object", job["error"])
	}
	if hp, _ := job["hyperparameters"].(map[string]any); hp["n_epochs"] == nil {
		t.Errorf("hyperparameters = %v, want n_epochs", job["hyperparameters"])
	}
	if _, ok := job["result_files"].([]any); !ok {
		t.Errorf("result_files = %v, want an array", job["result_files"])
	}
	switch job["status"] {
	case "validating_files", "queued", "running":
		for _, k := range []string{"fine_tuned_model", "finished_at", "trained_tokens"} {
			if job[k] != nil {
				t.Errorf("%s = %v while the job is %v", k, job[k], job["status"])
			}
		}
	case "succeeded", "failed", "cancelled":
	default:
		t.Errorf("status = %v", job["status"])
	}
	if job["status"] != "running" && job["estimated_finish"] != nil {
		t.Errorf("estimated_finish = %v while the job is %v", job["estimated_finish"], job["status"])
	}
	if id, _ := job["id"].(string); !strings.HasPrefix(id, "ftjob-") || strings.HasPrefix(id, "ftjob-up") {
		t.Errorf("id = %q, want a gateway job id", id)
	}
}

func TestFineTuningCreateMapsFiles(t *testing.T) {
	f := newFineTuningFixture(t)
	job := f.create(t, fmt.Sprintf(`{"model":"gpt-4o-mini-2024-07-18","training_file":%q,"validation_file":%q,"suffix":"s1","seed":42,
		"hyperparameters":{"n_epochs":3},"integrations":[{"type":"tracker","tracker":{"project":"p","tags":["a"]}}],"metadata":{"team":"x"}}`,
		f.train.ID, f.valid.ID))
	checkJob(t, job)
	_, uploads, created, _, auth, _ := f.up.snapshot()
	if uploads != 2 || auth != "Bearer sk-ft" {
		t.Errorf("uploads %d, authorization %q", uploads, auth)
	}
	// The provider sees its own file ids and OpenAI's integration spelling; the caller sees gateway ids.
	if created["training_file"] != "file-up1" || created["validation_file"] != "file-up2" || created["suffix"] != "s1" ||
		created["seed"] != float64(42) || created["model"] != "gpt-4o-mini-2024-07-18" {
		t.Errorf("the provider got %v", created)
	}
	if string(f.up.files["file-up1"]) != `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`+"\n" {
		t.Errorf("the provider got training content %q", f.up.files["file-up1"])
	}
	integ, _ := json.Marshal(created["integrations"])
	if string(integ) != `[{"type":"wandb","wandb":{"project":"p","tags":["a"]}}]` {
		t.Errorf("the provider got integrations %s", integ)
	}
	if hp, _ := json.Marshal(created["hyperparameters"]); string(hp) != `{"n_epochs":3}` {
		t.Errorf("the provider got hyperparameters %s", hp)
	}
	if job["training_file"] != f.train.ID || job["validation_file"] != f.valid.ID {
		t.Errorf("job files = %v, %v", job["training_file"], job["validation_file"])
	}
	integ, _ = json.Marshal(job["integrations"])
	if string(integ) != `[{"tracker":{"project":"p","tags":["a"]},"type":"tracker"}]` { // keys sorted by the map
		t.Errorf("job integrations %s", integ)
	}
	if job["status"] != "validating_files" || job["organization_id"] != "org-up" || job["seed"] != float64(42) || job["created_at"] != float64(1700000000) {
		t.Errorf("job = %v", job)
	}

	// The same training file again is not uploaded again.
	second := f.create(t, fmt.Sprintf(`{"model":"m","training_file":%q}`, f.train.ID))
	if _, uploads, _, _, _, _ := f.up.snapshot(); uploads != 2 {
		t.Errorf("uploads = %d after a second job on the same file", uploads)
	}
	if second["validation_file"] != nil || second["integrations"] != nil || second["id"] == job["id"] {
		t.Errorf("second job = %v", second)
	}
}

func TestFineTuningLifecycle(t *testing.T) {
	f := newFineTuningFixture(t)
	job := f.create(t, fmt.Sprintf(`{"model":"m","training_file":%q}`, f.train.ID))
	id := job["id"].(string)
	path := "/v1/fine_tuning/jobs/" + id

	// Running: a provider that shows a model early is overruled by SPEC.md's null rules.
	f.up.set("ftjob-up1", map[string]any{"status": "running", "estimated_finish": 1700009999, "fine_tuned_model": "ft:early", "trained_tokens": 5})
	a := f.ft(t, "GET", path, "")
	got := a.json(t)
	checkJob(t, got)
	if got["status"] != "running" || got["estimated_finish"] != float64(1700009999) || got["fine_tuned_model"] != nil || got["id"] != id {
		t.Errorf("running job = %v", got)
	}
	if _, _, _, p, _, _ := f.up.snapshot(); p != "GET /v1/fine_tuning/jobs/ftjob-up1" {
		t.Errorf("the provider was asked %s", p)
	}

	// Succeeded: the result file is copied in once and shown by its gateway id.
	f.up.mu.Lock()
	f.up.files["file-res1"] = []byte("step,train_loss\n1,0.5\n")
	f.up.mu.Unlock()
	f.up.set("ftjob-up1", map[string]any{"status": "succeeded", "fine_tuned_model": "ft:m:org:s:abc", "finished_at": 1700001000,
		"trained_tokens": 1234, "result_files": []any{"file-res1"}, "estimated_finish": 1700009999})
	got = f.ft(t, "GET", path, "").json(t)
	checkJob(t, got)
	results, _ := got["result_files"].([]any)
	if len(results) != 1 || results[0] == "file-res1" || got["fine_tuned_model"] != "ft:m:org:s:abc" || got["trained_tokens"] != float64(1234) ||
		got["finished_at"] != float64(1700001000) || got["estimated_finish"] != nil {
		t.Fatalf("succeeded job = %v", got)
	}
	resID := results[0].(string)
	meta, r, err := f.store.Files.Open(f.ws.ID, resID)
	if err != nil {
		t.Fatal(err)
	}
	content, _ := io.ReadAll(r)
	r.Close()
	if string(content) != "step,train_loss\n1,0.5\n" || meta.Filename != "step_metrics.csv" {
		t.Errorf("result file %q named %q", content, meta.Filename)
	}
	calls, _, _, _, _, _ := f.up.snapshot()
	again := f.ft(t, "GET", path, "").json(t)
	if again["result_files"].([]any)[0] != resID {
		t.Errorf("second read shows %v", again["result_files"])
	}
	if c, _, _, _, _, _ := f.up.snapshot(); c != calls+1 {
		t.Errorf("a second read made %d provider calls, want 1 (the result file is copied once)", c-calls)
	}

	// Cancel of a finished job: the provider's error as it is.
	a = f.ft(t, "POST", path+"/cancel", "")
	if a.status != 409 || string(a.body) != `{"error":{"message":"the job has finished","type":"invalid_request_error","param":null,"code":"job_finished"}}` {
		t.Errorf("cancel of a finished job = %d %s", a.status, a.body)
	}

	// Cancel of a running one.
	other := f.create(t, fmt.Sprintf(`{"model":"m","training_file":%q}`, f.train.ID))
	a = f.ft(t, "POST", "/v1/fine_tuning/jobs/"+other["id"].(string)+"/cancel", "")
	got = a.json(t)
	checkJob(t, got)
	if a.status != 200 || got["status"] != "cancelled" || got["id"] != other["id"] {
		t.Errorf("cancel = %d %v", a.status, got)
	}
	if _, _, _, p, _, _ := f.up.snapshot(); p != "POST /v1/fine_tuning/jobs/ftjob-up2/cancel" {
		t.Errorf("the provider was asked %s", p)
	}
}

func TestFineTuningEventsAndCheckpoints(t *testing.T) {
	f := newFineTuningFixture(t)
	id := f.create(t, fmt.Sprintf(`{"model":"m","training_file":%q}`, f.train.ID))["id"].(string)

	a := f.ft(t, "GET", "/v1/fine_tuning/jobs/"+id+"/events?limit=2&after=ftevent-9", "")
	var events control.FineTuningList
	if err := json.Unmarshal(a.body, &events); err != nil || a.status != 200 {
		t.Fatalf("events = %d %s", a.status, a.body)
	}
	if events.Object != "list" || len(events.Data) != 2 || !events.HasMore || !strings.Contains(string(events.Data[0]), `"id":"ftevent-2"`) {
		t.Errorf("events = %s", a.body)
	}
	if _, _, _, p, _, q := f.up.snapshot(); p != "GET /v1/fine_tuning/jobs/ftjob-up1/events" || q != "after=ftevent-9&limit=2" {
		t.Errorf("the provider was asked %s?%s", p, q)
	}

	a = f.ft(t, "GET", "/v1/fine_tuning/jobs/"+id+"/checkpoints", "")
	var ckpts struct {
		Object  string           `json:"object"`
		Data    []map[string]any `json:"data"`
		HasMore bool             `json:"has_more"`
		FirstID string           `json:"first_id"`
	}
	if err := json.Unmarshal(a.body, &ckpts); err != nil || a.status != 200 {
		t.Fatalf("checkpoints = %d %s", a.status, a.body)
	}
	if ckpts.Object != "list" || len(ckpts.Data) != 1 || ckpts.Data[0]["fine_tuning_job_id"] != id || ckpts.Data[0]["step_number"] != float64(10) ||
		ckpts.FirstID != "ftckpt-1" {
		t.Errorf("checkpoints = %s", a.body)
	}
	if _, _, _, _, _, q := f.up.snapshot(); q != "limit=20" {
		t.Errorf("default limit sent as %q", q)
	}
	checkError(t, f.ft(t, "GET", "/v1/fine_tuning/jobs/"+id+"/events?limit=0", ""), 400, "invalid_request", "limit")
	checkError(t, f.ft(t, "GET", "/v1/fine_tuning/jobs/ftjob-nope/checkpoints", ""), 404, "not_found", nil)
}

func TestFineTuningList(t *testing.T) {
	f := newFineTuningFixture(t)
	var ids []string
	for range 3 {
		ids = append(ids, f.create(t, fmt.Sprintf(`{"model":"m","training_file":%q}`, f.train.ID))["id"].(string))
	}
	f.up.set("ftjob-up1", map[string]any{"status": "failed", "error": map[string]any{"code": "invalid_file", "message": "bad line 3", "param": "training_file"}})

	page := func(query string) (data []map[string]any, more bool) {
		t.Helper()
		a := f.ft(t, "GET", "/v1/fine_tuning/jobs"+query, "")
		var l struct {
			Object  string           `json:"object"`
			Data    []map[string]any `json:"data"`
			HasMore bool             `json:"has_more"`
		}
		if err := json.Unmarshal(a.body, &l); err != nil || a.status != 200 || l.Object != "list" || l.Data == nil {
			t.Fatalf("list%s = %d %s", query, a.status, a.body)
		}
		for _, j := range l.Data {
			checkJob(t, j)
		}
		return l.Data, l.HasMore
	}
	first, more := page("?limit=2")
	if len(first) != 2 || !more || first[0]["id"] != ids[2] || first[1]["id"] != ids[1] {
		t.Fatalf("first page = %v, more %v; want %s, %s", first, more, ids[2], ids[1])
	}
	rest, more := page("?limit=2&after=" + ids[1])
	if len(rest) != 1 || more || rest[0]["id"] != ids[0] {
		t.Fatalf("second page = %v, more %v", rest, more)
	}
	if e, _ := rest[0]["error"].(map[string]any); rest[0]["status"] != "failed" || e["code"] != "invalid_file" || e["param"] != "training_file" {
		t.Errorf("failed job = %v", rest[0])
	}
	all, _ := page("")
	if len(all) != 3 {
		t.Errorf("default page has %d jobs", len(all))
	}
	// A finished job is shown from its record: the provider is not asked again.
	calls, _, _, _, _, _ := f.up.snapshot()
	page("?after=" + ids[1])
	if c, _, _, _, _, _ := f.up.snapshot(); c != calls {
		t.Errorf("listing a failed job asked the provider %d times", c-calls)
	}
	// A provider that cannot answer leaves the list as last seen.
	f.up.Close()
	if stale, _ := page(""); len(stale) != 3 || stale[0]["status"] != "validating_files" {
		t.Errorf("list with the provider down = %v", stale)
	}

	for _, q := range []string{"?limit=0", "?limit=101", "?limit=x", "?limit=-1"} {
		checkError(t, f.ft(t, "GET", "/v1/fine_tuning/jobs"+q, ""), 400, "invalid_request", "limit")
	}
	checkError(t, f.ft(t, "GET", "/v1/fine_tuning/jobs?after=ftjob-unknown", ""), 400, "invalid_request", "after")
	// Jobs belong to their virtual key and workspace.
	if other := f.ft(t, "GET", "/v1/fine_tuning/jobs", "", HeaderVirtualKey, "ft2").json(t); len(other["data"].([]any)) != 0 {
		t.Errorf("another virtual key lists %v", other["data"])
	}
	if other := f.ft(t, "GET", "/v1/fine_tuning/jobs", "", HeaderAPIKey, f.otherKey).json(t); len(other["data"].([]any)) != 0 {
		t.Errorf("another workspace lists %v", other["data"])
	}
}

func TestFineTuningOtherWorkspace404(t *testing.T) {
	f := newFineTuningFixture(t)
	id := f.create(t, fmt.Sprintf(`{"model":"m","training_file":%q}`, f.train.ID))["id"].(string)
	calls, _, _, _, _, _ := f.up.snapshot()
	for _, h := range [][]string{{HeaderAPIKey, f.otherKey}, {HeaderVirtualKey, "ft2"}} {
		for _, r := range []struct{ method, path string }{{"GET", ""}, {"POST", "/cancel"}, {"GET", "/events"}, {"GET", "/checkpoints"}} {
			checkError(t, f.ft(t, r.method, "/v1/fine_tuning/jobs/"+id+r.path, "", h...), 404, "not_found", nil)
		}
	}
	checkError(t, f.ft(t, "GET", "/v1/fine_tuning/jobs/ftjob-up1", ""), 404, "not_found", nil) // the provider's id is no gateway id
	checkError(t, f.ft(t, "GET", "/v1/fine_tuning/jobs/..%2f", ""), 404, "not_found", nil)
	if c, _, _, _, _, _ := f.up.snapshot(); c != calls {
		t.Errorf("the provider was asked %d times about jobs that are not the caller's", c-calls)
	}
}

func TestFineTuningValidation(t *testing.T) {
	f := newFineTuningFixture(t)
	otherFile := f.file(t, f.other.ID, "theirs.jsonl", "{}\n")
	tf := f.train.ID
	six := strings.Repeat(`{"type":"tracker","tracker":{"project":"p"}},`, 6)
	tests := []struct {
		name, body string
		headers    []string
		status     int
		code       string
		param      any
	}{
		{"no model", `{"training_file":"` + tf + `"}`, nil, 400, "invalid_request", "model"},
		{"model not a string", `{"model":3,"training_file":"` + tf + `"}`, nil, 400, "invalid_request", "model"},
		{"empty model", `{"model":"","training_file":"` + tf + `"}`, nil, 400, "invalid_request", "model"},
		{"no training file", `{"model":"m"}`, nil, 400, "invalid_request", "training_file"},
		{"unknown training file", `{"model":"m","training_file":"file-nope"}`, nil, 400, "invalid_request", "training_file"},
		{"another workspace's training file", `{"model":"m","training_file":"` + otherFile.ID + `"}`, nil, 400, "invalid_request", "training_file"},
		{"training file not an id", `{"model":"m","training_file":"a/b"}`, nil, 400, "invalid_request", "training_file"},
		{"unknown validation file", `{"model":"m","training_file":"` + tf + `","validation_file":"file-nope"}`, nil, 400, "invalid_request", "validation_file"},
		{"suffix too long", `{"model":"m","training_file":"` + tf + `","suffix":"` + strings.Repeat("s", 65) + `"}`, nil, 400, "invalid_request", "suffix"},
		{"method not an object", `{"model":"m","training_file":"` + tf + `","method":"dpo"}`, nil, 400, "invalid_request", "method"},
		{"hyperparameters not an object", `{"model":"m","training_file":"` + tf + `","hyperparameters":[]}`, nil, 400, "invalid_request", "hyperparameters"},
		{"seed not an integer", `{"model":"m","training_file":"` + tf + `","seed":1.5}`, nil, 400, "invalid_request", "seed"},
		{"six integrations", `{"model":"m","training_file":"` + tf + `","integrations":[` + strings.TrimSuffix(six, ",") + `]}`, nil, 400, "invalid_request", "integrations"},
		{"integrations not an array", `{"model":"m","training_file":"` + tf + `","integrations":{}}`, nil, 400, "invalid_request", "integrations"},
		{"integration type", `{"model":"m","training_file":"` + tf + `","integrations":[{"type":"slack","slack":{}}]}`, nil, 400, "invalid_request", "integrations[0].type"},
		{"integration without project", `{"model":"m","training_file":"` + tf + `","integrations":[{"type":"tracker","tracker":{"name":"n"}}]}`, nil, 400, "invalid_request", "integrations[0].tracker.project"},
		{"integration tag", `{"model":"m","training_file":"` + tf + `","integrations":[{"type":"tracker","tracker":{"project":"p","tags":[1]}}]}`, nil, 400, "invalid_request", "integrations[0].tracker.tags[0]"},
		{"metadata value", `{"model":"m","training_file":"` + tf + `","metadata":{"k":1}}`, nil, 400, "invalid_request", "metadata.k"},
		{"unknown field", `{"model":"m","training_file":"` + tf + `","epochs":3}`, nil, 400, "invalid_request", "epochs"},
		{"not an object", `[1]`, nil, 400, "invalid_json", nil},
		{"malformed JSON", `{"model":`, nil, 400, "invalid_json", nil},
		{"no virtual key", `{"model":"m","training_file":"` + tf + `"}`, []string{HeaderVirtualKey, ""}, 400, "invalid_request", HeaderVirtualKey},
		{"unknown virtual key", `{"model":"m","training_file":"` + tf + `"}`, []string{HeaderVirtualKey, "nope"}, 400, "invalid_request", HeaderVirtualKey},
		{"not JSON", `model=m`, []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type", "content-type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkError(t, f.ft(t, "POST", "/v1/fine_tuning/jobs", tc.body, tc.headers...), tc.status, tc.code, tc.param)
		})
	}
	if calls, _, _, _, _, _ := f.up.snapshot(); calls != 0 {
		t.Errorf("refused requests made %d provider calls", calls)
	}
	// Every endpoint needs the virtual key.
	for _, r := range []struct{ method, path string }{{"GET", ""}, {"GET", "/ftjob-1"}, {"POST", "/ftjob-1/cancel"}, {"GET", "/ftjob-1/events"}, {"GET", "/ftjob-1/checkpoints"}} {
		checkError(t, f.ft(t, r.method, "/v1/fine_tuning/jobs"+r.path, "", HeaderVirtualKey, ""), 400, "invalid_request", HeaderVirtualKey)
	}
	checkError(t, f.do(t, "GET", "/v1/fine_tuning/jobs", ""), 401, "missing_api_key", HeaderAPIKey)
}

func TestFineTuningUnsupportedProvider(t *testing.T) {
	f := newFineTuningFixture(t)
	for _, r := range []struct{ method, path, body string }{
		{"POST", "", fmt.Sprintf(`{"model":"m","training_file":%q}`, f.train.ID)},
		{"GET", "", ""}, {"GET", "/ftjob-1", ""}, {"POST", "/ftjob-1/cancel", ""}, {"GET", "/ftjob-1/events", ""},
	} {
		a := f.ft(t, r.method, "/v1/fine_tuning/jobs"+r.path, r.body, HeaderVirtualKey, "claude")
		checkError(t, a, 400, mgmt.CodeUnsupportedProvider, HeaderVirtualKey)
		if !strings.Contains(string(a.body), "provider anthropic has no fine-tuning API") {
			t.Errorf("%s %s: %s", r.method, r.path, a.body)
		}
	}
}

func TestFineTuningProviderErrorPassesThrough(t *testing.T) {
	f := newFineTuningFixture(t)
	a := f.ft(t, "POST", "/v1/fine_tuning/jobs", fmt.Sprintf(`{"model":"bad-model","training_file":%q}`, f.train.ID))
	want := `{"error":{"message":"Model bad-model is not available for fine-tuning","type":"invalid_request_error","param":null,"code":"model_not_available"}}`
	if a.status != 400 || string(a.body) != want || !strings.HasPrefix(a.header.Get("Content-Type"), "application/json") {
		t.Errorf("create = %d %q %s", a.status, a.header.Get("Content-Type"), a.body)
	}
	if l := f.ft(t, "GET", "/v1/fine_tuning/jobs", "").json(t); len(l["data"].([]any)) != 0 {
		t.Errorf("a refused job is listed: %v", l)
	}
	// The provider no longer knows a job the gateway made: its 404 passes through too.
	id := f.create(t, fmt.Sprintf(`{"model":"m","training_file":%q}`, f.train.ID))["id"].(string)
	f.up.mu.Lock()
	delete(f.up.jobs, "ftjob-up1")
	f.up.mu.Unlock()
	a = f.ft(t, "GET", "/v1/fine_tuning/jobs/"+id, "")
	if a.status != 404 || !strings.Contains(string(a.body), `"message":"no job ftjob-up1"`) {
		t.Errorf("get = %d %s", a.status, a.body)
	}
	// A provider that cannot be reached is a 502.
	f.up.Close()
	checkError(t, f.ft(t, "GET", "/v1/fine_tuning/jobs/"+id, ""), 502, "upstream_error", nil)
}
