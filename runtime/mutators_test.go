package runtime

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime/providers"
	_ "github.com/llmgw/gateway/runtime/providers/openai"
	"github.com/llmgw/gateway/runtime/schema"
	"github.com/llmgw/gateway/storage"
)

// bodyMutator stands for a plugin's gateway_transform: rewrite gets the body and the check's parameters.
type bodyMutator struct {
	rewrite func(body map[string]any, stage string) any // nil result: unchanged
}

func (m bodyMutator) Check(context.Context, *hostapi.Input, hostapi.RequestView) (hostapi.Output, error) {
	return hostapi.NewOutput(), nil
}

func (m bodyMutator) TransformBody(_ context.Context, in *hostapi.Input, _ hostapi.RequestView) (hostapi.Output, error) {
	var body map[string]any
	if err := json.Unmarshal(in.Body, &body); err != nil {
		return hostapi.Output{}, fmt.Errorf("the body given is not an object: %v", err)
	}
	out := hostapi.NewOutput()
	switch v := m.rewrite(body, in.Stage).(type) {
	case nil:
	case string:
		out.Body = []byte(v)
	default:
		out.Body, _ = json.Marshal(v)
	}
	return out, nil
}

// mutatorFixture is an engine whose workspace has the plugins "sys" (adds a system message and caps
// max_tokens at 100), "bad" (invalid requests, one per check name) and "strip" (removes usage from an
// answer), with an upstream that records what it receives.
type mutatorFixture struct {
	e        *Engine
	key      *storage.APIKey
	upstream *httptest.Server
	mu       sync.Mutex
	received []map[string]any
}

func newMutatorFixture(t *testing.T) *mutatorFixture {
	t.Helper()
	master := make([]byte, storage.MasterKeySize)
	rand.Read(master)
	st, err := storage.Open("mem", storage.Options{MasterKey: master, InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &mutatorFixture{key: &storage.APIKey{WorkspaceID: storage.NewUUID()}}
	for _, id := range []string{"sys", "bad", "strip"} {
		if _, _, err := st.Plugins.Put(f.key.WorkspaceID, id, []byte("\x00asm\x01\x00\x00\x00")); err != nil {
			t.Fatal(err)
		}
	}
	f.upstream = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var got map[string]any
		_ = json.NewDecoder(r.Body).Decode(&got)
		f.mu.Lock()
		f.received = append(f.received, got)
		f.mu.Unlock()
		if got["stream"] == true {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	t.Cleanup(f.upstream.Close)
	checks := map[string]guardrails.Check{
		"sys.prompt": bodyMutator{rewrite: func(b map[string]any, _ string) any {
			msgs, _ := b["messages"].([]any)
			b["messages"] = append([]any{map[string]any{"role": "system", "content": "be brief"}}, msgs...)
			if mt, ok := b["max_tokens"].(float64); !ok || mt > 100 {
				b["max_tokens"] = 100
			}
			return b
		}},
		"bad.messages": bodyMutator{rewrite: func(b map[string]any, _ string) any { b["messages"] = "oops"; return b }},
		"bad.stream":   bodyMutator{rewrite: func(b map[string]any, _ string) any { b["stream"] = true; return b }},
		"strip.usage": bodyMutator{rewrite: func(b map[string]any, stage string) any {
			if stage != "after" {
				return nil
			}
			delete(b, "usage")
			b["rewritten"] = true
			return b
		}},
	}
	f.e = New(st, Options{Transport: http.DefaultTransport, PluginChecks: func(_, plugin, name string, _ json.RawMessage) (guardrails.Check, error) {
		c, ok := checks[plugin+"."+name]
		if !ok {
			return nil, fmt.Errorf("no check %s.%s", plugin, name)
		}
		return c, nil
	}})
	return f
}

// do sends a chat completion with hooks; it returns the status and the answer's bytes (a stream read whole).
func (f *mutatorFixture) do(t *testing.T, body, hooks string) (int, []byte) {
	t.Helper()
	cfg := fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,%s}`, f.upstream.URL+"/v1", hooks)
	b := schema.NewBody([]byte(body))
	resp, err := f.e.Do(context.Background(), &Request{Endpoint: providers.ChatCompletions, Key: f.key, Config: cfg, Body: b,
		Stream: b.Stream()})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	defer resp.Close()
	if resp.Stream != nil {
		out, _ := io.ReadAll(resp.Stream)
		return resp.Status, out
	}
	return resp.Status, resp.Body
}

func (f *mutatorFixture) last(t *testing.T) map[string]any {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.received) == 0 {
		t.Fatal("the upstream received nothing")
	}
	return f.received[len(f.received)-1]
}

const mutatorChat = `{"model":"gpt-4o","max_tokens":4096,"messages":[{"role":"user","content":"hello"}]}`

func mutatorHook(list, checks string) string {
	return fmt.Sprintf(`%q:[{"id":"m","type":"mutator","checks":[%s]}]`, list, checks)
}

func TestBeforeMutatorRewritesTheRequest(t *testing.T) {
	f := newMutatorFixture(t)
	status, body := f.do(t, mutatorChat, mutatorHook("before_request_hooks", `{"id":"sys.prompt","parameters":{}}`))
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	got := f.last(t)
	msgs, _ := got["messages"].([]any)
	if len(msgs) != 2 || msgs[0].(map[string]any)["role"] != "system" || got["max_tokens"] != 100.0 {
		t.Fatalf("the upstream received %v", got)
	}
	var answer struct {
		HookResults HookResults `json:"hook_results"`
	}
	if err := json.Unmarshal(body, &answer); err != nil || len(answer.HookResults.Before) != 1 {
		t.Fatalf("answer %s (%v)", body, err)
	}
	h := answer.HookResults.Before[0]
	if h.Type != "mutator" || !h.Checks[0].Transformed || h.Checks[0].Error != nil {
		t.Fatalf("hook result %+v", h)
	}
}

func TestBeforeMutatorInvalidReplacement(t *testing.T) {
	for _, tc := range []struct{ check, field string }{
		{"bad.messages", "messages"},
		{"bad.stream", "stream"},
	} {
		t.Run(tc.check, func(t *testing.T) {
			f := newMutatorFixture(t)
			status, body := f.do(t, mutatorChat, mutatorHook("before_request_hooks",
				`{"id":"`+tc.check+`","parameters":{"failOnError":true}}`))
			if status != StatusHooksFailedSoft {
				t.Fatalf("status %d, want 246 (the check failed, nothing denies): %s", status, body)
			}
			var answer struct {
				HookResults HookResults `json:"hook_results"`
			}
			_ = json.Unmarshal(body, &answer)
			c := answer.HookResults.Before[0].Checks[0]
			if c.Error == nil || !strings.Contains(*c.Error, tc.field) || c.Transformed {
				t.Fatalf("check %+v: want an error naming %s", c, tc.field)
			}
			t.Logf("the check error: %s", *c.Error)
			if got := f.last(t); got["messages"] == "oops" || got["stream"] == true || got["max_tokens"] != 4096.0 {
				t.Fatalf("the refused body went upstream: %v", got)
			}
		})
	}
}

func TestAfterMutatorRewritesTheAnswer(t *testing.T) {
	f := newMutatorFixture(t)
	status, body := f.do(t, mutatorChat, mutatorHook("after_request_hooks", `{"id":"strip.usage","parameters":{}}`))
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	var answer map[string]json.RawMessage
	if err := json.Unmarshal(body, &answer); err != nil {
		t.Fatal(err)
	}
	if _, ok := answer["usage"]; ok || string(answer["rewritten"]) != "true" || answer["hook_results"] == nil ||
		!strings.Contains(string(answer["hook_results"]), `"transformed":true`) {
		t.Fatalf("answer %s", body)
	}
}

func TestAfterMutatorOnAStreamIsACheckError(t *testing.T) {
	f := newMutatorFixture(t)
	stream := `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hello"}]}`
	status, body := f.do(t, stream, mutatorHook("after_request_hooks", `{"id":"strip.usage","parameters":{}}`))
	if status != 200 || !strings.Contains(string(body), streamedMutator) {
		t.Fatalf("status %d, stream %s: want the check error %q", status, body, streamedMutator)
	}
}

func TestMutatorOutsideOpenAIShapes(t *testing.T) {
	st := &state{req: &Request{Endpoint: providers.Messages}}
	if b := requestBody(st, []byte(`{}`)); b.JSON != nil || !strings.Contains(b.Refusal, "messages") {
		t.Fatalf("a messages request: %+v", b)
	}
	st = &state{req: &Request{Endpoint: providers.ChatCompletions, ContentType: "multipart/form-data"}}
	if b := answerBody(st, []byte(`{}`)); b.JSON != nil {
		t.Fatalf("an upload: %+v", b)
	}
}

// The cache keys the replaced body: two requests that a mutator makes the same share one cached answer.
func TestBeforeMutatorIsWhatTheCacheKeys(t *testing.T) {
	f := newMutatorFixture(t)
	hooks := `"cache":{"mode":"simple"},` + mutatorHook("before_request_hooks", `{"id":"sys.prompt","parameters":{}}`)
	for _, maxTokens := range []string{"4096", "8000"} {
		status, body := f.do(t, `{"model":"gpt-4o","max_tokens":`+maxTokens+`,"messages":[{"role":"user","content":"hello"}]}`, hooks)
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.received) != 1 {
		t.Fatalf("the upstream was called %d times, want 1: both requests became one after the mutator", len(f.received))
	}
}
