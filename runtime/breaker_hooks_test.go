package runtime

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/gateway/runtime/providers"
	_ "github.com/llmgw/gateway/runtime/providers/openai"
	"github.com/llmgw/gateway/runtime/schema"
	"github.com/llmgw/gateway/storage"
)

// A request stopped by an input guardrail must not take the half-open breaker's single probe: the breaker is
// asked only right before the provider call.
func TestGuardrailDenyDoesNotStrandTheBreakerProbe(t *testing.T) {
	master := make([]byte, storage.MasterKeySize)
	rand.Read(master)
	st, err := storage.Open("mem", storage.Options{MasterKey: master, InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var fail atomic.Bool
	fail.Store(true)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if fail.Load() {
			w.WriteHeader(503)
			io.WriteString(w, `{"error":{"message":"down"}}`)
			return
		}
		io.WriteString(w, `{"choices":[{"message":{"content":"ok"}}]}`)
	}))
	defer up.Close()

	e := New(st, Options{Transport: http.DefaultTransport})
	now := time.Unix(1_000_000, 0)
	e.now = func() time.Time { return now }
	cfg := fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,"cb_config":{"failure_threshold":1,"cooldown_interval":30000},`+
		`"input_guardrails":[{"id":"short","deny":true,"default.wordCount":{"maxWords":3}}]}`, up.URL+"/v1")
	key := &storage.APIKey{WorkspaceID: storage.NewUUID()}
	do := func(content string) (int, error) {
		resp, err := e.Do(context.Background(), &Request{Endpoint: providers.ChatCompletions, Key: key, Config: cfg,
			Body: schema.NewBody([]byte(`{"model":"m","messages":[{"role":"user","content":"` + content + `"}]}`))})
		if err != nil {
			return 0, err
		}
		return resp.Status, nil
	}
	if status, _ := do("hi"); status != 503 { // the failure opens the breaker
		t.Fatalf("first call: %d", status)
	}
	now = now.Add(31 * time.Second) // cooldown over: half-open
	fail.Store(false)
	if status, _ := do("far too many words for this guardrail"); status != 446 {
		t.Fatalf("denied request: %d", status)
	}
	if status, err := do("hi"); status != 200 {
		t.Fatalf("the probe after a denied request: %d, %v (the breaker kept waiting for a probe that never ran)", status, err)
	}
}
