package routes

import (
	"bufio"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/storage"
)

// countingAnswers is an upstream answer whose content names the call, so that a cached answer is told apart
// from a new one.
func countingAnswers(w http.ResponseWriter, _ *http.Request, call int64) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"chatcmpl-%d","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"answer %d"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`, call, call)
}

func content(t *testing.T, a answer) string {
	t.Helper()
	if a.status != 200 {
		t.Fatalf("status %d: %s", a.status, a.body)
	}
	choices := a.json(t)["choices"].([]any)
	return choices[0].(map[string]any)["message"].(map[string]any)["content"].(string)
}

func cacheConfig(mode string, maxAge int) string {
	if maxAge > 0 {
		return fmt.Sprintf(`{"cache": {"mode": %q, "max_age": %d}}`, mode, maxAge)
	}
	return fmt.Sprintf(`{"cache": {"mode": %q}}`, mode)
}

func TestSimpleCache(t *testing.T) {
	f, clock := newLimitedFixture(t)
	up := newUpstream(t, countingAnswers)
	h := append([]string{HeaderConfig, cacheConfig("simple", 60)}, upstreamHeaders(up)...)
	expect := func(a answer, status, text string) {
		t.Helper()
		if got := content(t, a); got != text || a.header.Get(HeaderCacheStatus) != status {
			t.Fatalf("answer %q with cache status %q; want %q, %q", got, a.header.Get(HeaderCacheStatus), text, status)
		}
	}
	expect(f.chat(t, chatBody, h...), "MISS", "answer 1")
	expect(f.chat(t, chatBody, h...), "HIT", "answer 1")
	// Key order and spacing do not matter; the model and the messages do.
	expect(f.chat(t, `{"messages":[{"content":"Hi","role":"user"}],  "model":"gpt-4o-mini"}`, h...), "HIT", "answer 1")
	expect(f.chat(t, `{"model":"gpt-4o","messages":[{"role":"user","content":"Hi"}]}`, h...), "MISS", "answer 2")
	expect(f.chat(t, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi!"}]}`, h...), "MISS", "answer 3")
	// Force refresh calls the provider and keeps the new answer.
	expect(f.chat(t, chatBody, append([]string{HeaderCacheRefresh, "true"}, h...)...), "REFRESH", "answer 4")
	expect(f.chat(t, chatBody, h...), "HIT", "answer 4")
	// Metadata is part of the key, unless a namespace replaces it.
	expect(f.chat(t, chatBody, append([]string{HeaderMetadata, `{"team":"a"}`}, h...)...), "MISS", "answer 5")
	expect(f.chat(t, chatBody, append([]string{HeaderMetadata, `{"team":"a"}`}, h...)...), "HIT", "answer 5")
	expect(f.chat(t, chatBody, append([]string{HeaderCacheNamespace, "ns1", HeaderMetadata, `{"team":"a"}`}, h...)...), "MISS", "answer 6")
	expect(f.chat(t, chatBody, append([]string{HeaderCacheNamespace, "ns1", HeaderMetadata, `{"team":"b"}`}, h...)...), "HIT", "answer 6")
	expect(f.chat(t, chatBody, append([]string{HeaderCacheNamespace, "ns2"}, h...)...), "MISS", "answer 7")
	// max_age: 60 s.
	clock.Advance(61 * time.Second)
	expect(f.chat(t, chatBody, h...), "MISS", "answer 8")
	if up.calls.Load() != 8 {
		t.Fatalf("upstream called %d times, want 8", up.calls.Load())
	}
	// Without a cache in the config: DISABLED, and nothing is read.
	expect(f.chat(t, chatBody, upstreamHeaders(up)...), "DISABLED", "answer 9")
	// Another workspace never sees this one's answers.
	a := f.do(t, "POST", "/v1/chat/completions", chatBody, append([]string{HeaderAPIKey, f.otherKey, "Content-Type", "application/json"}, h...)...)
	expect(a, "MISS", "answer 10")
}

func TestCacheKeepsOnlySuccess(t *testing.T) {
	f, _ := newLimitedFixture(t)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, call int64) {
		if call == 1 {
			status(500, `{"error":{"message":"boom","type":"server_error"}}`)(w, r, call)
			return
		}
		countingAnswers(w, r, call)
	})
	h := append([]string{HeaderConfig, cacheConfig("simple", 0)}, upstreamHeaders(up)...)
	if a := f.chat(t, chatBody, h...); a.status != 500 || a.header.Get(HeaderCacheStatus) != "MISS" {
		t.Fatalf("first: %d %s %v", a.status, a.body, a.header)
	}
	if got := content(t, f.chat(t, chatBody, h...)); got != "answer 2" {
		t.Fatalf("an error answer was cached: %q", got)
	}
	if got := content(t, f.chat(t, chatBody, h...)); got != "answer 2" {
		t.Fatalf("the success was not cached: %q", got)
	}
}

// streamRequest posts a streamed chat completion with the headers and returns the events' data payloads.
func streamRequest(t *testing.T, base, key, body string, headers ...string) (*http.Response, []string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set(HeaderAPIKey, key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, data)
		}
	}
	return resp, events
}

// streamText joins the content deltas of chat.completion.chunk events and checks they end with [DONE].
func streamText(t *testing.T, events []string) string {
	t.Helper()
	if len(events) == 0 || events[len(events)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %q", events)
	}
	var text strings.Builder
	for _, ev := range events[:len(events)-1] {
		var chunk struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(ev), &chunk); err != nil || chunk.Object != "chat.completion.chunk" {
			t.Fatalf("event %q is not a chat.completion.chunk: %v", ev, err)
		}
		for _, c := range chunk.Choices {
			text.WriteString(c.Delta.Content)
		}
	}
	return text.String()
}

func TestCachedAnswersReplayAsStreams(t *testing.T) {
	f, _ := newLimitedFixture(t)
	base, _ := f.serve(t)
	var up *upstream
	up = newUpstream(t, func(w http.ResponseWriter, r *http.Request, call int64) {
		_, body := up.lastRequest()
		if !strings.Contains(body, `"stream":true`) {
			countingAnswers(w, r, call)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"id\":\"c%d\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"streamed \"}}]}\n\n", call)
		fmt.Fprintf(w, "data: {\"id\":\"c%d\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"answer %d\"},\"finish_reason\":\"stop\"}]}\n\n", call, call)
		io.WriteString(w, "data: [DONE]\n\n")
	})
	h := append([]string{HeaderConfig, cacheConfig("simple", 0)}, upstreamHeaders(up)...)
	streamed := `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Hi"}]}`

	// A whole answer, cached, then asked for as a stream: replayed as chunks.
	if got := content(t, f.chat(t, chatBody, h...)); got != "answer 1" {
		t.Fatalf("first answer %q", got)
	}
	resp, events := streamRequest(t, base, f.plain, streamed, h...)
	if resp.Header.Get(HeaderCacheStatus) != "HIT" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("replay headers: %v", resp.Header)
	}
	if got := streamText(t, events); got != "answer 1" {
		t.Fatalf("replayed text %q", got)
	}
	// A streamed answer is assembled and kept; a whole request then gets it as a chat.completion.
	other := `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Bye"}]}`
	resp, events = streamRequest(t, base, f.plain, other, h...)
	if resp.Header.Get(HeaderCacheStatus) != "MISS" || streamText(t, events) != "streamed answer 2" {
		t.Fatalf("streamed miss: %v %q", resp.Header, events)
	}
	a := f.chat(t, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Bye"}]}`, h...)
	if got := content(t, a); got != "streamed answer 2" || a.header.Get(HeaderCacheStatus) != "HIT" {
		t.Fatalf("assembled answer %q, status %q", got, a.header.Get(HeaderCacheStatus))
	}
	resp, events = streamRequest(t, base, f.plain, other, h...)
	if resp.Header.Get(HeaderCacheStatus) != "HIT" || streamText(t, events) != "streamed answer 2" {
		t.Fatalf("streamed hit: %v %q", resp.Header, events)
	}
	if up.calls.Load() != 2 {
		t.Fatalf("upstream called %d times, want 2", up.calls.Load())
	}
}

// bagOfWords is a deterministic embedding: words (lower case, without punctuation) hashed into 64
// dimensions, so that rewordings with the same words are identical and other questions are far.
func bagOfWords(text string) []float64 {
	v := make([]float64, 64)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !('a' <= r && r <= 'z') }) {
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%64]++
	}
	return v
}

func TestSemanticCache(t *testing.T) {
	f, _ := newLimitedFixture(t)
	var embedded []string
	var up *upstream
	up = newUpstream(t, func(w http.ResponseWriter, r *http.Request, call int64) {
		if strings.HasSuffix(r.URL.Path, "/embeddings") {
			var req struct {
				Model string `json:"model"`
				Input string `json:"input"`
			}
			_, body := up.lastRequest()
			json.Unmarshal([]byte(body), &req)
			embedded = append(embedded, req.Model+": "+req.Input)
			vec, _ := json.Marshal(bagOfWords(req.Input))
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":%s}],"model":%q,"usage":{"prompt_tokens":3,"total_tokens":3}}`, vec, req.Model)
			return
		}
		countingAnswers(w, r, call)
	})
	h := append([]string{HeaderConfig, cacheConfig("semantic", 0)}, upstreamHeaders(up)...)
	ask := func(question string) answer {
		return f.chat(t, `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":`+
			strconvQuote(question)+`}]}`, h...)
	}
	a := ask("What is the capital of France?")
	if a.header.Get(HeaderCacheStatus) != "MISS" {
		t.Fatalf("first: %v", a.header)
	}
	first := content(t, a)
	a = ask("what is the capital of france")
	if got := content(t, a); got != first || a.header.Get(HeaderCacheStatus) != "SEMANTIC HIT" {
		t.Fatalf("reworded question: %q with %q; want %q with SEMANTIC HIT", got, a.header.Get(HeaderCacheStatus), first)
	}
	a = ask("What is the capital of France?")
	if a.header.Get(HeaderCacheStatus) != "HIT" {
		t.Fatalf("the same question again: %q, want HIT (exact matches are checked first)", a.header.Get(HeaderCacheStatus))
	}
	a = ask("How do I bake sourdough bread at home?")
	if got := content(t, a); got == first || a.header.Get(HeaderCacheStatus) != "MISS" {
		t.Fatalf("an unrelated question: %q with %q", got, a.header.Get(HeaderCacheStatus))
	}
	if len(embedded) == 0 || !strings.HasPrefix(embedded[0], "text-embedding-3-small: ") {
		t.Fatalf("embeddings requests: %q", embedded)
	}
	// The workspace's settings choose the embeddings model and the threshold.
	f.ws.SemanticCache = &storage.SemanticCacheSettings{EmbeddingModel: "my-embedder", Threshold: 0.9999}
	if _, err := f.store.Workspaces.Put(f.ws); err != nil {
		t.Fatal(err)
	}
	a = ask("what is the capital of france please")
	if a.header.Get(HeaderCacheStatus) != "MISS" {
		t.Fatalf("below the workspace's threshold: %q", a.header.Get(HeaderCacheStatus))
	}
	if last := embedded[len(embedded)-1]; !strings.HasPrefix(last, "my-embedder: ") {
		t.Fatalf("embeddings model %q, want the workspace's", last)
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Embeddings and legacy completions are cached too.
func TestCacheOfOtherEndpoints(t *testing.T) {
	f, _ := newLimitedFixture(t)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, call int64) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/embeddings") {
			fmt.Fprintf(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[%d,0.5]}],"model":"e","usage":{"prompt_tokens":1,"total_tokens":1}}`, call)
			return
		}
		fmt.Fprintf(w, `{"id":"cmpl-%d","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"text %d","finish_reason":"stop"}]}`, call, call)
	})
	h := append([]string{HeaderAPIKey, f.plain, "Content-Type", "application/json", HeaderConfig, cacheConfig("simple", 0)}, upstreamHeaders(up)...)
	for _, tc := range []struct{ path, body string }{
		{"/v1/embeddings", `{"model":"e","input":"hello"}`},
		{"/v1/completions", `{"model":"m","prompt":"Say hi"}`},
	} {
		first := f.do(t, "POST", tc.path, tc.body, h...)
		second := f.do(t, "POST", tc.path, tc.body, h...)
		if first.status != 200 || first.header.Get(HeaderCacheStatus) != "MISS" || second.header.Get(HeaderCacheStatus) != "HIT" || string(first.body) != string(second.body) {
			t.Fatalf("%s: %d %q %s / %q %s", tc.path, first.status, first.header.Get(HeaderCacheStatus), first.body, second.header.Get(HeaderCacheStatus), second.body)
		}
	}
	if up.calls.Load() != 2 {
		t.Fatalf("upstream called %d times, want 2", up.calls.Load())
	}
}
