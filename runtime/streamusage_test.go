package runtime

import (
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
	"testing"

	"github.com/llmgw/gateway/runtime/providers"
	"github.com/llmgw/gateway/runtime/schema"
	"github.com/llmgw/gateway/storage"
)

func TestAskStreamUsage(t *testing.T) {
	tests := []struct {
		name, body, want string
		asked            bool
	}{
		{"absent", `{"model":"m","stream":true}`, `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`, false},
		{"false", `{"stream":true,"stream_options":{"include_usage":false}}`, `{"stream":true,"stream_options":{"include_usage":true}}`, false},
		{"other options kept", `{"stream_options":{"continuous_usage_stats":true}}`,
			`{"stream_options":{"continuous_usage_stats":true,"include_usage":true}}`, false},
		{"null", `{"stream_options":null}`, `{"stream_options":{"include_usage":true}}`, false},
		{"asked", `{"stream_options": {"include_usage" : true}}`, `{"stream_options": {"include_usage" : true}}`, true},
		{"a string mentioning it", `{"messages":[{"content":"\"stream_options\":{\"include_usage\":true}"}]}`,
			`{"messages":[{"content":"\"stream_options\":{\"include_usage\":true}"}],"stream_options":{"include_usage":true}}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, asked, err := askStreamUsage([]byte(tc.body))
			if err != nil || asked != tc.asked || string(got) != tc.want {
				t.Fatalf("askStreamUsage = %s, %v, %v; want %s, %v", got, asked, err, tc.want, tc.asked)
			}
			if !json.Valid(got) {
				t.Fatalf("not JSON: %s", got)
			}
		})
	}
	if _, _, err := askStreamUsage([]byte(`[1]`)); err == nil {
		t.Error("an array body was patched")
	}
}

// openAIStream is a chat stream as OpenAI sends it with include_usage: "usage":null on every chunk, then a
// usage chunk with empty choices.
const openAIStream = `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel"}}],"usage":null}` + "\n\n" +
	`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}],"usage":null}` + "\n\n" +
	`data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":2,"total_tokens":13}}` + "\n\n" +
	"data: [DONE]\n\n"

// callerStream is what a caller that did not ask for usage receives of openAIStream.
const callerStream = `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel"}}]}` + "\n\n" +
	`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}` + "\n\n" +
	"data: [DONE]\n\n"

func TestUsageHider(t *testing.T) {
	long := `data: {"choices":[{"delta":{"content":"` + strings.Repeat("x", 3*usageHiderBuffer) + `"}}],"usage":null}` + "\n\n"
	tests := []struct {
		name, in, want string
		usage          Usage
	}{
		{"openai", openAIStream, callerStream, Usage{InputTokens: 11, OutputTokens: 2, Known: true}},
		{"spaced", "data: {\"choices\": [ ], \"usage\": {\"prompt_tokens\": 3, \"completion_tokens\": 4}}\r\n\r\ndata: [DONE]\r\n\r\n",
			"data: [DONE]\r\n\r\n", Usage{InputTokens: 3, OutputTokens: 4, Known: true}},
		{"no usage", callerStream, callerStream, Usage{}},
		{"a long line passes unread", long + "data: [DONE]\n\n", long + "data: [DONE]\n\n", Usage{}},
		{"a last line without its end", "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1}}", "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1}}", Usage{}},
	}
	for _, tc := range tests {
		for _, size := range []int{7, 64 << 10} {
			h := hideUsageChunks(io.NopCloser(strings.NewReader(tc.in)))
			var out strings.Builder
			buf := make([]byte, size)
			for {
				n, err := h.Read(buf)
				out.WriteString(string(buf[:n]))
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if out.String() != tc.want || h.usage != tc.usage {
				t.Errorf("%s, reads of %d: got %q, %+v\nwant %q, %+v", tc.name, size, out.String(), h.usage, tc.want, tc.usage)
			}
		}
	}
}

// TestUsageHiderHandsOverWhatIsBuffered: events that arrived together leave in one Read, so that the relay's
// flush-when-nothing-waits rule sees them together (one write to the caller, not one per line).
func TestUsageHiderHandsOverWhatIsBuffered(t *testing.T) {
	h := hideUsageChunks(io.NopCloser(strings.NewReader(openAIStream)))
	buf := make([]byte, 64<<10)
	n, err := h.Read(buf)
	if err != nil || string(buf[:n]) != callerStream {
		t.Fatalf("one Read gave %q, %v; want every buffered event: %q", buf[:n], err, callerStream)
	}
}

// BenchmarkUsageHider is the cost of hiding the usage chunk, per chunk of a 100-chunk stream: nothing
// allocated but the stream's buffer.
func BenchmarkUsageHider(b *testing.B) {
	chunk := `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"word "},"finish_reason":null}],"usage":null}` + "\n\n"
	stream := strings.Repeat(chunk, 100) + `data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":100}}` + "\n\ndata: [DONE]\n\n"
	src := strings.NewReader(stream)
	buf := make([]byte, 32<<10)
	h := hideUsageChunks(io.NopCloser(src))
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		src.Reset(stream)
		*h = usageHider{src: h.src, br: h.br}
		h.br.Reset(src)
		for {
			if _, err := h.Read(buf); err != nil {
				break
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/101, "ns/chunk")
}

// streamEngine is an engine over an in-memory store and an OpenAI-format upstream that answers a streamed chat
// completion with openAIStream when its body asks for usage, and with callerStream when not; bodies holds
// what it received.
func streamEngine(t *testing.T) (e *Engine, upstreamURL string, bodies func() []string) {
	master := make([]byte, storage.MasterKeySize)
	rand.Read(master)
	st, err := storage.Open("mem", storage.Options{MasterKey: master, InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var mu sync.Mutex
	var got []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(body))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if strings.Contains(string(body), `"include_usage":true`) {
			io.WriteString(w, openAIStream)
		} else {
			io.WriteString(w, callerStream)
		}
	}))
	t.Cleanup(up.Close)
	return New(st, Options{Logger: slog.New(slog.DiscardHandler)}), up.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// TestUsageOnEveryStream: a streamed chat completion that does not ask for usage goes upstream asking for it,
// the caller's stream has no usage chunk (nor "usage":null), and the answer's usage is the provider's, not an
// estimate; a caller that asks gets the stream as the provider sent it.
func TestUsageOnEveryStream(t *testing.T) {
	e, upstreamURL, bodies := streamEngine(t)
	for _, tc := range []struct {
		name, body, want string
	}{
		{"not asked", `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Hi"}]}`, callerStream},
		{"asked", `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hi"}]}`, openAIStream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &Request{Endpoint: providers.ChatCompletions, Key: &storage.APIKey{ID: "k", WorkspaceID: "ws"}, Body: schema.NewBody([]byte(tc.body)),
				Stream: true, Provider: "openai", CustomHost: upstreamURL, Authorization: "sk"}
			resp, err := e.Do(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Stream)
			resp.Close()
			if err != nil || string(got) != tc.want {
				t.Fatalf("caller's stream %v:\n%q\nwant\n%q", err, got, tc.want)
			}
			sent := bodies()
			if last := sent[len(sent)-1]; !strings.Contains(last, `"stream_options":{"include_usage":true}`) {
				t.Errorf("upstream body does not ask for usage: %s", last)
			}
			if want := (Usage{InputTokens: 11, OutputTokens: 2, Known: true}); resp.Usage.InputTokens != want.InputTokens ||
				resp.Usage.OutputTokens != want.OutputTokens || !resp.Usage.Known || resp.Usage.Estimated {
				t.Errorf("usage %+v, want the provider's %+v", resp.Usage, want)
			}
		})
	}
}

// TestHiddenUsageNotCached: the cache records a stream as its caller saw it: replayed to a caller that did not
// ask for usage, it has no usage chunk.
func TestHiddenUsageNotCached(t *testing.T) {
	e, upstreamURL, bodies := streamEngine(t)
	cfg := fmt.Sprintf(`{"cache":{"mode":"simple"},"provider":"openai","api_key":"sk","custom_host":%q}`, upstreamURL)
	body := []byte(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Hi"}]}`)
	for i, want := range []string{CacheMiss, CacheHit} {
		req := &Request{Endpoint: providers.ChatCompletions, Key: &storage.APIKey{ID: "k", WorkspaceID: "ws"}, Body: schema.NewBody(body),
			Stream: true, Config: cfg}
		resp, err := e.Do(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Stream)
		resp.Close()
		if resp.CacheStatus != want || strings.Contains(string(got), `"usage"`) || !strings.Contains(string(got), "Hel") {
			t.Fatalf("call %d: %s, stream %q", i, resp.CacheStatus, got)
		}
	}
	if n := len(bodies()); n != 1 {
		t.Fatalf("%d upstream calls, want 1", n)
	}
}
