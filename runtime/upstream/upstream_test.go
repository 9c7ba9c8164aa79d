package upstream

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/runtime/gwerr"
	_ "github.com/llmgw/gateway/runtime/providers/anthropic"
	_ "github.com/llmgw/gateway/runtime/providers/azure"
	_ "github.com/llmgw/gateway/runtime/providers/openai"
	"github.com/llmgw/gateway/storage"
)

// fakeFiles is a local provider speaking OpenAI's files API (and answering anything else with what answer
// says). It records what it was sent.
type fakeFiles struct {
	srv *httptest.Server

	mu       sync.Mutex
	files    map[string][]byte // provider file id → content
	names    map[string]string
	uploads  atomic.Int64
	contents atomic.Int64
	lastAuth string
	lastReq  *http.Request
	lastBody []byte
	chunked  bool
	purpose  string
	answer   func(w http.ResponseWriter, r *http.Request, body []byte) // for paths other than /files
}

func newFakeFiles(t *testing.T) *fakeFiles {
	f := &fakeFiles{files: map[string][]byte{}, names: map[string]string{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeFiles) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case r.Method == http.MethodPost && path == "/files":
		f.uploads.Add(1)
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		file, hdr, err := r.FormFile("file")
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		data, _ := io.ReadAll(file)
		f.mu.Lock()
		id := fmt.Sprintf("file-up%d", len(f.files)+1)
		f.files[id], f.names[id] = data, hdr.Filename
		f.lastAuth, f.chunked, f.purpose = r.Header.Get("Authorization"), len(r.TransferEncoding) > 0, r.FormValue("purpose")
		f.mu.Unlock()
		fmt.Fprintf(w, `{"id": %q, "object": "file", "bytes": %d, "filename": %q, "purpose": "fine-tune"}`, id, len(data), hdr.Filename)
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/files/"):
		id, content := strings.CutSuffix(strings.TrimPrefix(path, "/files/"), "/content")
		f.mu.Lock()
		data, ok := f.files[id]
		name := f.names[id]
		f.mu.Unlock()
		if !ok {
			w.WriteHeader(404)
			io.WriteString(w, `{"error": {"message": "No such File object: `+id+`", "type": "invalid_request_error", "param": "id", "code": null}}`)
			return
		}
		if content {
			f.contents.Add(1)
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(data)
			return
		}
		fmt.Fprintf(w, `{"id": %q, "object": "file", "bytes": %d, "filename": %q, "purpose": "fine-tune-results"}`, id, len(data), name)
	default:
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.lastReq, f.lastBody, f.lastAuth = r.Clone(context.Background()), body, r.Header.Get("Authorization")
		answer := f.answer
		f.mu.Unlock()
		if answer == nil {
			w.WriteHeader(404)
			io.WriteString(w, `{"error": {"message": "unknown path"}}`)
			return
		}
		answer(w, r, body)
	}
}

func (f *fakeFiles) put(id, name string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[id], f.names[id] = data, name
}

type env struct {
	store  *storage.Store
	client *Client
	ws     string
	other  string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	master := make([]byte, storage.MasterKeySize)
	rand.Read(master)
	st, err := storage.Open(t.TempDir(), storage.Options{MasterKey: master})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	engine := runtime.New(st, runtime.Options{Logger: log})
	return &env{store: st, client: New(st, engine, log), ws: storage.NewUUID(), other: storage.NewUUID()}
}

func (e *env) provider(t *testing.T, ws, slug, provider string, fields map[string]string) {
	t.Helper()
	raw := map[string]json.RawMessage{}
	for k, v := range fields {
		raw[k], _ = json.Marshal(v)
	}
	if _, err := e.store.Providers.Put(&storage.Provider{WorkspaceID: ws, Slug: slug, Provider: provider, Fields: raw}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) file(t *testing.T, ws, name string, data []byte) *storage.File {
	t.Helper()
	w, err := e.store.Files.Create(ws, storage.File{Filename: name, Purpose: "fine-tune"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	f, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (e *env) content(t *testing.T, ws, id string) []byte {
	t.Helper()
	_, r, err := e.store.Files.Open(ws, id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func (e *env) openai(t *testing.T, up *fakeFiles) *Target {
	t.Helper()
	e.provider(t, e.ws, "oa", "openai", map[string]string{"api_key": "sk-test", "custom_host": up.srv.URL + "/v1"})
	tg, err := e.client.Target(context.Background(), e.ws, "oa", Files)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func checkGW(t *testing.T, err error, status int, code, param string) {
	t.Helper()
	var ge *gwerr.Error
	if !errors.As(err, &ge) {
		t.Fatalf("err = %v, want a *gwerr.Error", err)
	}
	if ge.Status != status || ge.Code != code || ge.Param != param {
		t.Fatalf("err = %d %s param %q (%s), want %d %s param %q", ge.Status, ge.Code, ge.Param, ge.Message, status, code, param)
	}
}

func TestTargetResolution(t *testing.T) {
	e := newEnv(t)
	up := newFakeFiles(t)
	e.provider(t, e.ws, "oa", "openai", map[string]string{"api_key": "sk-test", "custom_host": up.srv.URL + "/v1"})
	e.provider(t, e.ws, "claude", "anthropic", map[string]string{"api_key": "sk-ant"})
	ctx := context.Background()

	tg, err := e.client.Target(ctx, e.ws, "oa", FineTuning)
	if err != nil {
		t.Fatal(err)
	}
	if tg.Provider() != "openai" || tg.VirtualKey() != "oa" {
		t.Errorf("target = %s %s", tg.Provider(), tg.VirtualKey())
	}

	_, err = e.client.Target(ctx, e.ws, "claude", FineTuning)
	checkGW(t, err, 400, CodeUnsupportedProvider, HeaderVirtualKey)
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("an anthropic target's error does not wrap ErrUnsupported: %v", err)
	}
	if !strings.Contains(err.(*gwerr.Error).Message, "provider anthropic has no fine-tuning API") {
		t.Errorf("message = %q", err.(*gwerr.Error).Message)
	}
	_, err = e.client.Target(ctx, e.ws, "claude", Batches)
	if !strings.Contains(err.(*gwerr.Error).Message, "has no batch API") {
		t.Errorf("message = %q", err.(*gwerr.Error).Message)
	}

	for _, tc := range []struct{ name, ws, key string }{
		{"missing", e.ws, ""},
		{"unknown", e.ws, "nope"},
		{"another workspace's", e.other, "oa"},
		{"not an identifier", e.ws, "a/b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.client.Target(ctx, tc.ws, tc.key, Files)
			checkGW(t, err, 400, gwerr.CodeInvalidRequest, HeaderVirtualKey)
			if errors.Is(err, ErrUnsupported) {
				t.Error("an unknown key reads as an unsupported provider")
			}
		})
	}
}

func TestDo(t *testing.T) {
	e := newEnv(t)
	up := newFakeFiles(t)
	up.answer = func(w http.ResponseWriter, r *http.Request, body []byte) {
		if r.URL.Path == "/v1/fine_tuning/jobs/ftjob-1/cancel" {
			w.WriteHeader(409)
			io.WriteString(w, `{"error": {"message": "already done", "type": "invalid_request_error", "code": "job_done"}}`)
			return
		}
		fmt.Fprintf(w, `{"object": "list", "data": [], "has_more": false}`)
	}
	tg := e.openai(t, up)
	ctx := context.Background()

	status, body, err := tg.Do(ctx, http.MethodGet, "/fine_tuning/jobs", url.Values{"limit": {"5"}, "after": {"ftjob-x"}}, nil)
	if err != nil || status != 200 || !strings.Contains(string(body), `"has_more": false`) {
		t.Fatalf("Do = %d %s %v", status, body, err)
	}
	if up.lastReq.URL.Path != "/v1/fine_tuning/jobs" || up.lastReq.URL.Query().Get("limit") != "5" || up.lastReq.URL.Query().Get("after") != "ftjob-x" {
		t.Errorf("upstream got %s", up.lastReq.URL)
	}
	if up.lastAuth != "Bearer sk-test" {
		t.Errorf("authorization = %q", up.lastAuth)
	}

	status, body, err = tg.Do(ctx, http.MethodPost, "/fine_tuning/jobs", nil, []byte(`{"model":"m"}`))
	if err != nil || status != 200 {
		t.Fatalf("Do = %d %s %v", status, body, err)
	}
	if string(up.lastBody) != `{"model":"m"}` || up.lastReq.Header.Get("Content-Type") != "application/json" {
		t.Errorf("upstream got %q as %q", up.lastBody, up.lastReq.Header.Get("Content-Type"))
	}

	// The provider's errors come back as they are.
	status, body, err = tg.Do(ctx, http.MethodPost, "/fine_tuning/jobs/ftjob-1/cancel", nil, nil)
	if err != nil || status != 409 || !strings.Contains(string(body), `"code": "job_done"`) {
		t.Fatalf("Do = %d %s %v", status, body, err)
	}
	if up.lastReq.Header.Get("Content-Type") != "" || len(up.lastBody) != 0 {
		t.Errorf("a call without a body sent %q as %q", up.lastBody, up.lastReq.Header.Get("Content-Type"))
	}
}

func TestDoBounds(t *testing.T) {
	e := newEnv(t)
	up := newFakeFiles(t)
	up.answer = func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Write(bytes.Repeat([]byte(" "), MaxAnswer+1))
	}
	tg := e.openai(t, up)
	_, _, err := tg.Do(context.Background(), http.MethodGet, "/batches", nil, nil)
	checkGW(t, err, 502, gwerr.CodeUpstream, "")

	// A provider that cannot be reached is a 502 that names it, without the custom host's password.
	e.provider(t, e.ws, "down", "openai", map[string]string{"api_key": "k", "custom_host": "http://user:s3cret@" + closedAddr(t) + "/v1"})
	down, err := e.client.Target(context.Background(), e.ws, "down", Batches)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = down.Do(context.Background(), http.MethodGet, "/batches", nil, nil)
	checkGW(t, err, 502, gwerr.CodeUpstream, "")
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the error shows the password: %v", err)
	}

	// A cancelled caller stops the call.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = tg.Do(ctx, http.MethodGet, "/batches", nil, nil)
	checkGW(t, err, 503, gwerr.CodeUnavailable, "")
}

func closedAddr(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.Listener.Addr().String()
	srv.Close()
	return addr
}

func TestUploadFileOnce(t *testing.T) {
	e := newEnv(t)
	up := newFakeFiles(t)
	tg := e.openai(t, up)
	data := make([]byte, storage.FileChunkSize*2+1234) // three chunks
	rand.Read(data)
	f := e.file(t, e.ws, "train.jsonl", data)
	ctx := context.Background()

	var wg sync.WaitGroup
	ids := make([]string, 8)
	errs := make([]error, 8)
	for i := range ids {
		wg.Go(func() { ids[i], errs[i] = tg.UploadFile(ctx, f.ID, "fine-tune") })
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("upload %d = %q, %v; first %q", i, ids[i], errs[i], ids[0])
		}
	}
	if n := up.uploads.Load(); n != 1 {
		t.Errorf("the provider got %d uploads, want 1", n)
	}
	if !bytes.Equal(up.files[ids[0]], data) || up.names[ids[0]] != "train.jsonl" || up.purpose != "fine-tune" {
		t.Errorf("the provider got %d bytes named %q for %q", len(up.files[ids[0]]), up.names[ids[0]], up.purpose)
	}
	if up.chunked {
		t.Error("the upload went chunked: its length should be exact")
	}
	if up.lastAuth != "Bearer sk-test" {
		t.Errorf("authorization = %q", up.lastAuth)
	}
	if back, err := tg.GatewayFileID(ctx, ids[0]); err != nil || back != f.ID {
		t.Errorf("GatewayFileID = %q, %v; want %q", back, err, f.ID)
	}
	if back, err := tg.GatewayFileID(ctx, "file-unknown"); err != nil || back != "" {
		t.Errorf("GatewayFileID of an unknown file = %q, %v", back, err)
	}
	// The mapping survives a new client (it is stored), and importing the provider's copy gives the original.
	again := New(e.store, e.client.engine, nil)
	tg2, err := again.Target(ctx, e.ws, "oa", Files)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := tg2.UploadFile(ctx, f.ID, "fine-tune"); err != nil || id != ids[0] || up.uploads.Load() != 1 {
		t.Errorf("second client: %q %v, uploads %d", id, err, up.uploads.Load())
	}
	if g, err := tg2.ImportFile(ctx, ids[0], "fine-tune", ""); err != nil || g.ID != f.ID || up.contents.Load() != 0 {
		t.Errorf("importing the mirror = %v %v, downloads %d", g, err, up.contents.Load())
	}
	// A provider file has one purpose: the same gateway file sent as a batch input is a second provider file.
	if id, err := tg2.UploadFile(ctx, f.ID, "batch"); err != nil || id == ids[0] || up.uploads.Load() != 2 || up.purpose != "batch" {
		t.Errorf("upload for another purpose = %q %v, uploads %d, purpose %q", id, err, up.uploads.Load(), up.purpose)
	}

	// Another workspace's file is unknown here.
	otherFile := e.file(t, e.other, "x.jsonl", []byte("{}\n"))
	_, err = tg.UploadFile(ctx, otherFile.ID, "fine-tune")
	checkGW(t, err, 404, gwerr.CodeNotFound, "")
	if !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("err %v does not wrap storage.ErrNotFound", err)
	}
}

func TestUploadFileProviderError(t *testing.T) {
	e := newEnv(t)
	up := newFakeFiles(t)
	up.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(413)
		io.WriteString(w, `{"error": {"message": "too big"}}`)
	})
	tg := e.openai(t, up)
	f := e.file(t, e.ws, "t.jsonl", []byte("{}\n"))
	_, err := tg.UploadFile(context.Background(), f.ID, "fine-tune")
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Status != 413 || string(pe.Body) != `{"error": {"message": "too big"}}` || pe.Provider != "openai" {
		t.Fatalf("err = %#v", err)
	}
	if _, err := e.store.FineTuning.ProviderFileID(e.ws, "oa", f.ID, "fine-tune"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("a refused upload left a mapping: %v", err)
	}
}

func TestImportFile(t *testing.T) {
	e := newEnv(t)
	up := newFakeFiles(t)
	tg := e.openai(t, up)
	data := make([]byte, storage.FileChunkSize+77)
	rand.Read(data)
	up.put("file-res1", "step_metrics.csv", data)
	ctx := context.Background()

	f, err := tg.ImportFile(ctx, "file-res1", "fine-tune-results", "")
	if err != nil {
		t.Fatal(err)
	}
	if f.Filename != "step_metrics.csv" || f.Purpose != "fine-tune-results" || f.Bytes != int64(len(data)) {
		t.Errorf("imported %+v", f)
	}
	if !bytes.Equal(e.content(t, e.ws, f.ID), data) {
		t.Error("the copy's content differs")
	}
	again, err := tg.ImportFile(ctx, "file-res1", "fine-tune-results", "other.csv")
	if err != nil || again.ID != f.ID || up.contents.Load() != 1 {
		t.Errorf("second import = %v, %v; downloads %d", again, err, up.contents.Load())
	}
	if back, _ := tg.GatewayFileID(ctx, "file-res1"); back != f.ID {
		t.Errorf("GatewayFileID = %q", back)
	}
	if pid, _ := e.store.FineTuning.ProviderFileID(e.ws, "oa", f.ID, "fine-tune-results"); pid != "file-res1" {
		t.Errorf("ProviderFileID = %q", pid)
	}
	// A deleted copy is copied again, under the same ID.
	if err := e.store.Files.Delete(e.ws, f.ID); err != nil {
		t.Fatal(err)
	}
	third, err := tg.ImportFile(ctx, "file-res1", "fine-tune-results", "named.csv")
	if err != nil || third.ID != f.ID || third.Filename != "named.csv" || up.contents.Load() != 2 {
		t.Errorf("import after delete = %+v, %v; downloads %d", third, err, up.contents.Load())
	}

	// The provider's refusal comes back as it is.
	_, err = tg.ImportFile(ctx, "file-missing", "fine-tune-results", "x.csv")
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Status != 404 || !strings.Contains(string(pe.Body), "No such File object") {
		t.Fatalf("err = %v", err)
	}

	// A file over the limit is refused and leaves nothing behind.
	up.put("file-big", "big.csv", data)
	small := New(e.store, e.client.engine, nil).WithFileLimit(1000)
	tgs, err := small.Target(ctx, e.ws, "oa", Files)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tgs.ImportFile(ctx, "file-big", "fine-tune-results", "big.csv")
	checkGW(t, err, 502, gwerr.CodeUpstream, "")
	if id, _ := tgs.GatewayFileID(ctx, "file-big"); id != "" {
		t.Errorf("a refused import left mapping %q", id)
	}
	if _, err := e.store.Files.Get(e.ws, importedFileID(e.ws, "oa", "file-big")); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("a refused import left a file: %v", err)
	}
}

// TestAzureTarget: a stored azure-openai provider's management calls go to {custom_host}/openai{path} with an
// api-version and the key in api-key; with api_version v1, to /openai/v1{path} without one.
func TestAzureTarget(t *testing.T) {
	e := newEnv(t)
	up := newFakeFiles(t)
	var mu sync.Mutex
	var got *http.Request
	up.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Clone(context.Background())
		mu.Unlock()
		io.WriteString(w, `{"object": "list", "data": []}`)
	})
	e.provider(t, e.ws, "az", "azure-openai", map[string]string{"api_key": "azkey", "custom_host": up.srv.URL})
	e.provider(t, e.ws, "az1", "azure-openai", map[string]string{"api_key": "azkey", "custom_host": up.srv.URL, "api_version": "v1"})
	e.provider(t, e.ws, "foundry", "azure-openai", map[string]string{"api_key": "k", "cloudx_deployment_type": "serverless",
		"cloudx_deployment_name": "d", "cloudx_region": "eastus"})
	ctx := context.Background()
	for _, tc := range []struct{ slug, path, version string }{
		{"az", "/openai/fine_tuning/jobs", "2024-10-21"},
		{"az1", "/openai/v1/fine_tuning/jobs", ""},
	} {
		tg, err := e.client.Target(ctx, e.ws, tc.slug, FineTuning)
		if err != nil {
			t.Fatal(err)
		}
		if status, _, err := tg.Do(ctx, http.MethodGet, "/fine_tuning/jobs", url.Values{"limit": {"2"}}, nil); err != nil || status != 200 {
			t.Fatalf("%s: %d %v", tc.slug, status, err)
		}
		mu.Lock()
		if got.URL.Path != tc.path || got.URL.Query().Get("api-version") != tc.version || got.URL.Query().Get("limit") != "2" {
			t.Errorf("%s: upstream got %s", tc.slug, got.URL)
		}
		if got.Header.Get("Api-Key") != "azkey" || got.Header.Get("Authorization") != "" {
			t.Errorf("%s: auth headers %v", tc.slug, got.Header)
		}
		mu.Unlock()
	}
	tg, err := e.client.Target(ctx, e.ws, "foundry", FineTuning)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = tg.Do(ctx, http.MethodGet, "/fine_tuning/jobs", nil, nil)
	checkGW(t, err, 400, gwerr.CodeInvalidRequest, HeaderVirtualKey)
}

func TestKeyedMutexHammer(t *testing.T) {
	var k keyedMutex
	var counters [4]int
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			for range 200 {
				unlock := k.lock(fmt.Sprint(i % 4))
				counters[i%4]++
				unlock()
			}
		})
	}
	wg.Wait()
	for i, n := range counters {
		if n != 16*200 {
			t.Errorf("counter %d = %d", i, n)
		}
	}
	if len(k.held) != 0 {
		t.Errorf("%d locks kept after use", len(k.held))
	}
}
