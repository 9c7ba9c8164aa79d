package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// rewriterGuest is a transform plugin written with the SDK for this test: "rewriter.answer" strips usage from
// an answer and marks it; "rewriter.invalid" turns a request's messages into a string, which no chat request
// may have.
const rewriterGuest = `package main

import (
	"encoding/json"
	"strings"

	sdk "github.com/llmgw/gateway/sdk-guest"
)

func init() {
	sdk.HandleTransform(func(in sdk.TransformInput) sdk.TransformResult {
		var body map[string]any
		if err := json.Unmarshal(in.Body, &body); err != nil {
			return sdk.TransformError(err)
		}
		switch _, name, _ := strings.Cut(in.CheckID, "."); name {
		case "answer":
			delete(body, "usage")
			body["system_fingerprint"] = "rewritten"
		case "invalid":
			body["messages"] = "oops"
		default:
			return sdk.Unchanged()
		}
		out, _ := json.Marshal(body)
		return sdk.Replace(out)
	})
}

func main() {}
`

// buildSDKGuest builds a Go guest written with the SDK in a module of its own that requires the SDK through a
// replace line, as a plugin author outside the tree does.
func buildSDKGuest(t testing.TB, source string) []byte {
	t.Helper()
	sdkDir, err := filepath.Abs(filepath.Join("..", "..", "sdk-guest"))
	if err != nil {
		t.Fatal(err)
	}
	mod := "module guest\n\ngo 1.26\n\nrequire github.com/llmgw/gateway/sdk-guest v0.0.0\n\nreplace github.com/llmgw/gateway/sdk-guest => " + sdkDir + "\n"
	return buildGuestModule(t, mod, source, "-buildmode=c-shared")
}

// recordingUpstream is a mock provider that keeps the bodies it receives and answers a chat completion with
// usage, streamed when asked.
type recordingUpstream struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
}

func newRecordingUpstream(t *testing.T) *recordingUpstream {
	u := &recordingUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		u.mu.Lock()
		u.bodies = append(u.bodies, body)
		u.mu.Unlock()
		if body["stream"] == true {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\ndata: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *recordingUpstream) last(t *testing.T) map[string]any {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.bodies) == 0 {
		t.Fatal("the mock provider received nothing")
	}
	return u.bodies[len(u.bodies)-1]
}

// TestTransformPluginsThroughTheBinary uploads transform plugins and sends requests whose configs have mutator
// hooks: the provider receives the rewritten request, the client the rewritten answer; a streamed answer, an
// invalid replacement and a plugin without gateway_transform are each reported, never skipped.
func TestTransformPluginsThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds wasm guests")
	}
	sysprompt := buildExample(t, "sysprompt")
	rewriter := buildSDKGuest(t, rewriterGuest)
	plain := buildGuest(t, strings.Replace(panicsInInit, `func init() { panic("this guest cannot start") }`, "", 1), "-buildmode=c-shared")
	up := newRecordingUpstream(t)
	dir := t.TempDir()
	boot := writeFile(t, dir, "b.json", `{"api_keys": [{"key": "gw-transform-admin", "admin": true}]}`)
	p := startGateway(t, nil, "--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--bootstrap", boot)
	defer p.stop(t, syscall.SIGTERM)
	for id, wasm := range map[string][]byte{"sysprompt": sysprompt, "rewriter": rewriter, "plain": plain} {
		if status, body := putPlugin(t, p.base, "gw-transform-admin", id, wasm); status != 200 {
			t.Fatalf("upload %s: %d %v", id, status, body)
		}
	}
	chat := func(config, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", p.base+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-gateway-api-key", "gw-transform-admin")
		req.Header.Set("x-gateway-config", config)
		resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	target := `"provider":"openai","api_key":"sk","custom_host":"` + up.URL + `/v1"`
	hook := func(list, check, params string) string {
		return `{` + target + `,"` + list + `":[{"id":"m","type":"mutator","checks":[{"id":"` + check + `","parameters":` + params + `}]}]}`
	}
	const request = `{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":"hi"}]}`

	// A before mutator: the provider receives the rewritten body.
	status, body := chat(hook("before_request_hooks", "sysprompt.apply", `{"system":"be brief","max_tokens":100}`), request)
	if status != 200 || !strings.Contains(body, `"transformed":true`) {
		t.Fatalf("before mutator: %d %s", status, body)
	}
	got := up.last(t)
	msgs, _ := got["messages"].([]any)
	if len(msgs) != 2 || msgs[0].(map[string]any)["content"] != "be brief" || got["max_tokens"] != 100.0 {
		t.Fatalf("the provider received %v", got)
	}

	// An after mutator: the client gets the rewritten answer, with hook_results.
	status, body = chat(hook("after_request_hooks", "rewriter.answer", `{}`), request)
	var answer map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &answer); err != nil || status != 200 {
		t.Fatalf("after mutator: %d %s", status, body)
	}
	if _, ok := answer["usage"]; ok || string(answer["system_fingerprint"]) != `"rewritten"` ||
		!strings.Contains(string(answer["hook_results"]), `"transformed":true`) {
		t.Fatalf("after mutator: the client got %s", body)
	}

	// On a streamed answer an after mutator is a check error, reported in the stream's hook_results.
	status, body = chat(hook("after_request_hooks", "rewriter.answer", `{}`),
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if status != 200 || !strings.Contains(body, "mutators do not run on streamed answers") {
		t.Fatalf("streamed answer: %d %s", status, body)
	}

	// An invalid replacement is a check error naming the field; with failOnError the answer says 246 and the
	// provider receives the caller's body.
	status, body = chat(hook("before_request_hooks", "rewriter.invalid", `{"failOnError":true}`), request)
	if status != 246 || !strings.Contains(body, `messages`) || !strings.Contains(body, "replacement body is refused") {
		t.Fatalf("invalid replacement: %d %s", status, body)
	}
	if got := up.last(t); got["messages"] == "oops" {
		t.Fatalf("the refused body reached the provider: %v", got)
	}

	// A plugin without gateway_transform, and a built-in check, in a mutator hook: 400s naming the check.
	status, body = chat(hook("before_request_hooks", "plain.check", `{}`), request)
	if status != 400 || !strings.Contains(body, `"before_request_hooks[0].checks[0].id"`) || !strings.Contains(body, "gateway_transform") ||
		!strings.Contains(body, `\"plain\"`) {
		t.Fatalf("plugin without gateway_transform: %d %s", status, body)
	}
	status, body = chat(hook("after_request_hooks", "default.wordCount", `{"maxWords":3}`), request)
	if status != 400 || !strings.Contains(body, `"after_request_hooks[0].checks[0].id"`) {
		t.Fatalf("built-in check in a mutator: %d %s", status, body)
	}
}
