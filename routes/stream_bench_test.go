package routes

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	gwruntime "github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/storage"
)

// eventTransport answers every call with a stream of fixed events, one event per Read, as an upstream that
// flushes each event reaches the gateway; no socket, so the figures are the gateway's own work per chunk.
type eventTransport struct{ events [][]byte }

func (t eventTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: &eventReader{events: t.events}, ContentLength: -1, Request: r}, nil
}

type eventReader struct {
	events [][]byte
	rest   []byte
}

func (r *eventReader) Read(p []byte) (int, error) {
	if len(r.rest) == 0 {
		if len(r.events) == 0 {
			return 0, io.EOF
		}
		r.rest, r.events = r.events[0], r.events[1:]
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}

func (r *eventReader) Close() error { return nil }

// openAIEvents is an OpenAI chat stream of n content chunks, a finish chunk with usage, and [DONE].
func openAIEvents(n int) [][]byte {
	var events [][]byte
	for i := 0; i < n; i++ {
		events = append(events, []byte(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"word `+strconv.Itoa(i)+` "},"finish_reason":null}]}`+"\n\n"))
	}
	events = append(events, []byte(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":`+strconv.Itoa(n)+`,"total_tokens":`+strconv.Itoa(n+9)+`}}`+"\n\n"),
		[]byte("data: [DONE]\n\n"))
	return events
}

// anthropicEvents is an Anthropic messages stream of n text deltas.
func anthropicEvents(n int) [][]byte {
	events := [][]byte{
		[]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n"),
		[]byte("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"),
	}
	for i := 0; i < n; i++ {
		events = append(events, []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"word "+strconv.Itoa(i)+" \"}}\n\n"))
	}
	return append(events,
		[]byte("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"),
		[]byte("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":200}}\n\n"),
		[]byte("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
}

// BenchmarkStreamRelay relays a streamed chat completion through the whole gateway (routes, engine, usage
// watch, fasthttp's stream writer) from an in-process upstream that hands over one event per read. ns/chunk
// and allocs/chunk divide the whole request by its chunks: the 1-chunk runs show the request's fixed cost, so
// (200-chunk figure × 200 − 1-chunk figure) / 199 is what one more chunk costs.
func BenchmarkStreamRelay(b *testing.B) {
	for _, tc := range []struct {
		name, provider string
		events         func(int) [][]byte
	}{{"openai", "openai", openAIEvents}, {"anthropic", "anthropic", anthropicEvents}} {
		for _, chunks := range []int{1, 200} {
			b.Run(tc.name+"/chunks="+strconv.Itoa(chunks), func(b *testing.B) {
				events := tc.events(chunks)
				f := newFixtureWith(b, Options{}, func(*storage.Store) gwruntime.Options {
					return gwruntime.Options{Transport: eventTransport{events: events}}
				})
				cfg := `{"provider":"` + tc.provider + `","api_key":"sk","custom_host":"http://127.0.0.1:9/v1"}`
				runStream(b, f.srv.Handler().Handler(), chunks, HeaderAPIKey, f.plain, HeaderConfig, cfg)
			})
		}
	}
}

// runStream drives handler with a streamed chat completion b.N times and reads each stream to its end.
func runStream(b *testing.B, handler fasthttp.RequestHandler, chunks int, headers ...string) {
	var ctx fasthttp.RequestCtx
	raw := []byte(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Hi"}]}`)
	var out countingWriter
	var before, after runtime.MemStats
	b.ReportAllocs()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI("/v1/chat/completions")
		ctx.Request.Header.SetContentType("application/json")
		for j := 0; j+1 < len(headers); j += 2 {
			ctx.Request.Header.Set(headers[j], headers[j+1])
		}
		ctx.Request.SetBody(raw)
		handler(&ctx)
		if ctx.Response.StatusCode() != 200 {
			b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
		out.n, out.last = 0, out.buf[:0]
		if err := ctx.Response.BodyWriteTo(&out); err != nil {
			b.Fatal(err)
		}
		if !bytes.HasSuffix(out.last, []byte("data: [DONE]\n\n")) {
			b.Fatalf("the stream did not end with [DONE]: %q", out.last)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N*chunks), "allocs/chunk")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*chunks), "ns/chunk")
}

// countingWriter discards what it is given but its last 64 bytes, without allocating.
type countingWriter struct {
	n    int
	buf  [256]byte
	last []byte
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n := len(p)
	w.n += n
	if len(p) >= 64 {
		p = p[len(p)-64:]
	}
	if len(w.last)+len(p) > len(w.buf) {
		w.last = append(w.buf[:0], w.last[len(w.last)-64:]...)
	}
	w.last = append(w.last, p...)
	return n, nil
}

// BenchmarkStreamRelayOverTCP is a 200-chunk OpenAI stream over real loopback sockets: a net/http provider that
// flushes each event, the gateway, a fasthttp caller on one keep-alive connection. Its "direct" run calls the
// provider itself: the difference per chunk is what the gateway adds, syscalls included.
func BenchmarkStreamRelayOverTCP(b *testing.B) {
	const chunks = 200
	events := openAIEvents(chunks)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for _, ev := range events {
			w.Write(ev)
			fl.Flush()
		}
	}))
	b.Cleanup(up.Close)
	f := newFixture(b, Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go f.srv.Serve(ln)
	b.Cleanup(func() { f.srv.Shutdown(time.Second) })
	cfg := `{"provider":"openai","api_key":"sk","custom_host":"` + up.URL + `/v1"}`
	body := []byte(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Hi"}]}`)
	for _, tc := range []struct{ name, addr, path string }{
		{"direct", strings.TrimPrefix(up.URL, "http://"), "/v1/chat/completions"},
		{"gateway", ln.Addr().String(), "/v1/chat/completions"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			client := &fasthttp.HostClient{Addr: tc.addr, MaxConns: 1}
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				req.Reset()
				resp.Reset()
				req.Header.SetMethod("POST")
				req.SetRequestURI("http://" + tc.addr + tc.path)
				req.Header.SetContentType("application/json")
				req.Header.Set(HeaderAPIKey, f.plain)
				req.Header.Set(HeaderConfig, cfg)
				req.SetBody(body)
				if err := client.Do(req, resp); err != nil {
					b.Fatal(err)
				}
				if resp.StatusCode() != 200 || !bytes.HasSuffix(resp.Body(), []byte("data: [DONE]\n\n")) {
					b.Fatalf("status %d: %q", resp.StatusCode(), resp.Body())
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*chunks), "ns/chunk")
		})
	}
}
