package runtime

import (
	"bytes"
	"context"
	"crypto/rand"
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

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/providers"
	_ "github.com/llmgw/gateway/runtime/providers/openai"
	"github.com/llmgw/gateway/runtime/schema"
	"github.com/llmgw/gateway/storage"
)

// boundsEngine is an engine over an in-memory store whose waits between retries are recorded instead of slept.
func boundsEngine(t *testing.T, opts Options) (*Engine, *[]time.Duration) {
	t.Helper()
	master := make([]byte, storage.MasterKeySize)
	rand.Read(master)
	st, err := storage.Open("mem", storage.Options{MasterKey: master, InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if opts.Transport == nil {
		opts.Transport = http.DefaultTransport
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	e := New(st, opts)
	var mu sync.Mutex
	waits := []time.Duration{}
	e.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return ctx.Err()
	}
	return e, &waits
}

func chatRequest(cfg string) *Request {
	return &Request{Endpoint: providers.ChatCompletions, Key: &storage.APIKey{WorkspaceID: storage.NewUUID()}, Config: cfg,
		TraceID: "trace-bounds", Body: schema.NewBody([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))}
}

// nestedFallback is a fallback of outer fallbacks of inner targets, every one retried: outer × inner × (retries+1)
// upstream calls when all fail.
func nestedFallback(host string, outer, inner, retries int) string {
	var groups []string
	for i := 0; i < outer; i++ {
		var leaves []string
		for j := 0; j < inner; j++ {
			leaves = append(leaves, fmt.Sprintf(`{"provider":"openai","api_key":"sk-%d-%d","custom_host":%q}`, i, j, host))
		}
		groups = append(groups, `{"strategy":{"mode":"fallback"},"targets":[`+strings.Join(leaves, ",")+`]}`)
	}
	return fmt.Sprintf(`{"strategy":{"mode":"fallback"},"retry":{"attempts":%d},"targets":[%s]}`, retries, strings.Join(groups, ","))
}

// A 16 × 16 fallback with retries against an upstream that always fails would make 768 calls; the cap stops
// the walk, and the caller gets the last attempt's answer.
func TestUpstreamAttemptCap(t *testing.T) {
	var calls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(500)
		fmt.Fprintf(w, `{"error":{"message":"down %d"}}`, n)
	}))
	defer up.Close()
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, nil))
	tests := []struct {
		name string
		cap  int
		cfg  string
	}{
		{"nested fallbacks with retries", 7, nestedFallback(up.URL+"/v1", 16, 16, 2)},
		{"cap reached between retries of the first target", 2, nestedFallback(up.URL+"/v1", 16, 16, 4)},
		{"one target, cap of one", 1, nestedFallback(up.URL+"/v1", 1, 1, 5)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := boundsEngine(t, Options{MaxUpstreamAttempts: tc.cap, Logger: logger})
			before := calls.Load()
			resp, err := e.Do(context.Background(), chatRequest(tc.cfg))
			if err != nil {
				t.Fatal(err)
			}
			made := calls.Load() - before
			if made != int64(tc.cap) {
				t.Fatalf("upstream saw %d calls, want the cap of %d", made, tc.cap)
			}
			if want := fmt.Sprintf(`{"error":{"message":"down %d"}}`, calls.Load()); resp.Status != 500 || string(resp.Body) != want {
				t.Fatalf("answer %d %s, want the last attempt's: 500 %s", resp.Status, resp.Body, want)
			}
		})
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "trace_id=trace-bounds") ||
		!strings.Contains(logs.String(), "cap=7") || !strings.Contains(logs.String(), "attempts=7") {
		t.Errorf("the log does not say why the request stopped:\n%s", logs.String())
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A cache hit is not an upstream attempt: with a cap of one, a cached answer still answers and the
// one attempt is left for a target that is really called.
func TestAttemptCapCountsCallsNotCacheHits(t *testing.T) {
	var calls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"choices":[{"message":{"content":"ok"}}]}`)
	}))
	defer up.Close()
	e, _ := boundsEngine(t, Options{MaxUpstreamAttempts: 1})
	cfg := fmt.Sprintf(`{"cache":{"mode":"simple"},"provider":"openai","api_key":"sk","custom_host":%q}`, up.URL+"/v1")
	req := chatRequest(cfg)
	for i := 0; i < 3; i++ {
		resp, err := e.Do(context.Background(), req)
		if err != nil || resp.Status != 200 {
			t.Fatalf("request %d: %v %v", i, resp, err)
		}
	}
	if calls.Load() != 1 {
		t.Fatalf("upstream calls %d, want 1 (the rest are cache hits)", calls.Load())
	}
}

// A Retry-After beyond the time allowed stops retrying at once: the caller gets the 429 and no 30 s wait is
// even asked for.
func TestRetryAfterBeyondTheBudget(t *testing.T) {
	var calls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Retry-After", "30")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(429)
		io.WriteString(w, `{"error":{"message":"slow down"}}`)
	}))
	defer up.Close()
	retry := `"retry":{"attempts":3,"use_retry_after_headers":true}`
	tests := []struct {
		name     string
		opts     Options
		cfg      string
		timeout  time.Duration // x-gateway-request-timeout
		maxWait  time.Duration // no wait this long may be asked for
		wantWait bool          // a shorter wait is fine (and expected)
	}{
		{"request_timeout 2000", Options{}, fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,"request_timeout":2000,%s}`, up.URL+"/v1", retry), 0, 30 * time.Second, false},
		{"inherited request_timeout", Options{}, fmt.Sprintf(`{"strategy":{"mode":"fallback"},"request_timeout":2000,%s,"targets":[{"provider":"openai","api_key":"sk","custom_host":%q}]}`, retry, up.URL+"/v1"), 0, 30 * time.Second, false},
		{"x-gateway-request-timeout", Options{}, fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,%s}`, up.URL+"/v1", retry), 2 * time.Second, 30 * time.Second, false},
		{"request deadline", Options{RequestDeadline: 5 * time.Second}, fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,%s}`, up.URL+"/v1", retry), 0, 30 * time.Second, false},
		{"within the budget", Options{}, fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,%s}`, up.URL+"/v1", retry), 0, time.Minute, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, waits := boundsEngine(t, tc.opts)
			before := calls.Load()
			req := chatRequest(tc.cfg)
			req.Timeout = tc.timeout
			resp, err := e.Do(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != 429 {
				t.Fatalf("status %d, want the provider's 429", resp.Status)
			}
			for _, w := range *waits {
				if w >= tc.maxWait {
					t.Fatalf("a wait of %v was asked for", w)
				}
			}
			made := calls.Load() - before
			if tc.wantWait && (len(*waits) != 3 || made != 4) {
				t.Fatalf("waits %v, calls %d: a Retry-After within the budget should be waited and retried", *waits, made)
			}
			if !tc.wantWait && (len(*waits) != 0 || made != 1) {
				t.Fatalf("waits %v, calls %d: retrying should stop at the first answer", *waits, made)
			}
		})
	}
}

// The request deadline bounds the whole request: a hanging upstream gets its call cancelled and the caller a 408.
func TestRequestDeadline(t *testing.T) {
	cancelled, stop := make(chan struct{}, 16), make(chan struct{})
	var calls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.Copy(io.Discard, r.Body) // net/http notices a closed connection only once the body is read
		select {
		case <-r.Context().Done():
			cancelled <- struct{}{}
		case <-stop:
		}
	}))
	defer up.Close()
	defer close(stop) // before up.Close, which waits for the calls to end
	e, _ := boundsEngine(t, Options{RequestDeadline: 50 * time.Millisecond})
	// Retries on 408 and a fallback: without the deadline each attempt would wait its full 60 s request_timeout.
	cfg := fmt.Sprintf(`{"strategy":{"mode":"fallback"},"request_timeout":60000,"retry":{"attempts":5,"on_status_codes":[408]},"targets":[`+
		`{"provider":"openai","api_key":"sk-1","custom_host":%q},{"provider":"openai","api_key":"sk-2","custom_host":%q}]}`, up.URL+"/v1", up.URL+"/v1")
	done := make(chan error, 1)
	go func() {
		_, err := e.Do(context.Background(), chatRequest(cfg))
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("no answer: the request deadline did not end the request")
	}
	ge, ok := err.(*gwerr.Error)
	if !ok || ge.Status != 408 || ge.Code != gwerr.CodeRequestTimeout {
		t.Fatalf("error %v, want 408 request_timeout", err)
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream call was not cancelled")
	}
	if calls.Load() != 1 {
		t.Fatalf("upstream calls %d: nothing should be tried after the deadline", calls.Load())
	}
}

// A stream that has begun is not cut by the request deadline: the deadline bounds finding an answer, the
// attempt's request_timeout bounds the stream.
func TestRequestDeadlineSparesAStreamThatHasBegun(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"n\":1}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
			io.WriteString(w, "data: [DONE]\n\n")
		case <-r.Context().Done():
		}
	}))
	defer up.Close()
	e, _ := boundsEngine(t, Options{RequestDeadline: 20 * time.Millisecond})
	req := chatRequest(fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q}`, up.URL+"/v1"))
	req.Stream = true
	resp, err := e.Do(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Close()
	buf := make([]byte, len("data: {\"n\":1}\n\n"))
	if _, err := io.ReadFull(resp.Stream, buf); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // past the deadline: the stream must live on
	close(release)
	rest, err := io.ReadAll(resp.Stream)
	if err != nil || !strings.Contains(string(rest), "[DONE]") {
		t.Fatalf("the stream was cut: %q, %v", rest, err)
	}
}
