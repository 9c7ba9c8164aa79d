package batch

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime"
	_ "github.com/llmgw/gateway/runtime/providers/openai"
	"github.com/llmgw/gateway/storage"
)

// mockUpstream is a local OpenAI-compatible provider: a chat completion answers with the first message's content
// echoed, and with the caller's x-tenant header; a body whose "user" starts with "fail" gets a 500. gate, when
// set, holds each call until it can receive. A call is counted in byID once it passed the gate.
type mockUpstream struct {
	*httptest.Server
	calls   atomic.Int64
	gate    chan struct{}
	waiting atomic.Int64 // calls held at gate now
	delay   time.Duration

	mu   sync.Mutex
	byID map[string]int // calls by the first message's content (the line's custom_id), when not nil
}

func (u *mockUpstream) callsOf(id string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.byID[id]
}

func newUpstream(t testing.TB) *mockUpstream {
	t.Helper()
	u := &mockUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.calls.Add(1)
		// The body is read first: the server notices a caller that went away only once it has.
		raw, _ := io.ReadAll(r.Body)
		if u.gate != nil {
			u.waiting.Add(1)
			select {
			case <-u.gate:
				u.waiting.Add(-1)
			case <-r.Context().Done():
				u.waiting.Add(-1)
				return
			}
		}
		if u.delay > 0 {
			select {
			case <-time.After(u.delay):
			case <-r.Context().Done():
				return
			}
		}
		var body struct {
			User     string `json:"user"`
			Input    string `json:"input"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":{"message":"bad body %q"}}`, raw)
			return
		}
		content := ""
		if len(body.Messages) > 0 {
			content = body.Messages[0].Content
		}
		u.mu.Lock()
		if u.byID != nil && content != "" {
			u.byID[content]++
		}
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("x-request-id", "req-up")
		if strings.HasPrefix(body.User, "fail") {
			w.WriteHeader(500)
			io.WriteString(w, `{"error":{"message":"upstream failure","type":"server_error"}}`)
			return
		}
		if r.URL.Path == "/v1/embeddings" {
			fmt.Fprintf(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],"model":"e","echo":%q}`, body.Input)
			return
		}
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"tenant":%q}`,
			content, r.Header.Get("x-tenant"))
	}))
	t.Cleanup(u.Close)
	return u
}

// env is a store with a workspace and a stored provider "up" over a local upstream, and an engine.
type env struct {
	store  *storage.Store
	ws     string
	up     *mockUpstream
	engine *runtime.Engine
	log    *slog.Logger
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func newEnv(t testing.TB) *env {
	t.Helper()
	master := make([]byte, storage.MasterKeySize)
	rand.Read(master)
	st, err := storage.Open(t.TempDir(), storage.Options{MasterKey: master, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return newEnvOver(t, st, storage.NewUUID())
}

func newEnvOver(t testing.TB, st *storage.Store, ws string) *env {
	t.Helper()
	e := &env{store: st, ws: ws, up: newUpstream(t), engine: runtime.New(st, runtime.Options{Logger: quiet()}), log: quiet()}
	e.provider(t, "up", "openai", e.up.URL+"/v1")
	return e
}

// provider stores a provider of the workspace whose custom host is baseURL.
func (e *env) provider(t testing.TB, slug, provider, baseURL string) {
	t.Helper()
	host, _ := json.Marshal(baseURL)
	if _, err := e.store.Providers.Put(&storage.Provider{WorkspaceID: e.ws, Slug: slug, Provider: provider,
		Fields: map[string]json.RawMessage{"api_key": json.RawMessage(`"sk-` + slug + `"`), "custom_host": host}}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) runner(t testing.TB, opts Options) *Runner {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = e.log
	}
	r := New(e.store, e.engine, opts)
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

// file stores content as a batch input file of the workspace.
func (e *env) file(t testing.TB, content string) string {
	t.Helper()
	return e.fileFrom(t, strings.NewReader(content))
}

func (e *env) fileFrom(t testing.TB, content io.Reader) string {
	t.Helper()
	w, err := e.store.Files.Create(e.ws, storage.File{Filename: "in.jsonl", Purpose: "batch"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(w, content); err != nil {
		t.Fatal(err)
	}
	f, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	return f.ID
}

// chatLine is an input line of a chat completion whose message content is its custom_id.
func chatLine(customID, user string) string {
	return fmt.Sprintf(`{"custom_id":%q,"method":"POST","url":"/v1/chat/completions","body":{"model":"m","user":%q,"messages":[{"role":"user","content":%q}]}}`,
		customID, user, customID)
}

// newBatch is a batch of the workspace over file, as the control plane hands it to Create.
func (e *env) newBatch(file, window string) *storage.Batch {
	return &storage.Batch{WorkspaceID: e.ws, Endpoint: "/v1/chat/completions", InputFileID: file, CompletionWindow: window,
		Request: storage.BatchRequest{KeyID: "key-1", VirtualKey: "up", TraceID: "trace-batch",
			ForwardNames: []string{"x-tenant"}, Headers: map[string]string{"x-tenant": "acme"}}}
}

// wait polls the batch until done says so, failing the test after a while.
func (e *env) wait(t testing.TB, r *Runner, id string, done func(b *storage.Batch) bool) *storage.Batch {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, err := e.store.Batches.Get(e.ws, id)
		if err != nil {
			t.Fatal(err)
		}
		b = r.View(context.Background(), b, true)
		if done(b) {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch %s did not get there in time: %+v", id, b)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func final(b *storage.Batch) bool { return storage.BatchDone(b.Status) }

// result is a line of an output or error file.
type result struct {
	ID       string `json:"id"`
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		RequestID  string          `json:"request_id"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// results reads a result file ("" gives none), checking that it is JSON lines.
func (e *env) results(t testing.TB, id string) []result {
	t.Helper()
	if id == "" {
		return nil
	}
	_, rc, err := e.store.Files.Open(e.ws, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var out []result
	sc := bufio.NewScanner(rc)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r result
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("result line %s: %v", sc.Bytes(), err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// onceEach checks that the files hold each custom_id of want exactly once, and nothing else.
func onceEach(t testing.TB, want []string, files ...[]result) {
	t.Helper()
	seen := map[string]int{}
	for _, f := range files {
		for _, r := range f {
			seen[r.CustomID]++
		}
	}
	for _, id := range want {
		if seen[id] != 1 {
			t.Errorf("custom_id %s has %d results, want 1", id, seen[id])
		}
		delete(seen, id)
	}
	for id, n := range seen {
		t.Errorf("unexpected custom_id %q in the results (%d times)", id, n)
	}
}

// hammer runs fn n times at once.
func hammer(n int, fn func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { fn(i) })
	}
	wg.Wait()
}
