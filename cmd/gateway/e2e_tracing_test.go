package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/llmgw/gateway/tracing/tracingtest"
)

// traceUpstream is a mock OpenAI provider that records the traceparent of each call: under /bad it answers
// 500, elsewhere a completion with usage.
type traceUpstream struct {
	*httptest.Server
	mu     sync.Mutex
	parent map[string]string // the model asked for → the traceparent received with it (the last one)
}

func newTraceUpstream(t *testing.T) *traceUpstream {
	u := &traceUpstream{parent: map[string]string{}}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		model := regexp.MustCompile(`"model":"([^"]*)"`).FindStringSubmatch(string(body))
		u.mu.Lock()
		if model != nil {
			u.parent[model[1]] = r.Header.Get("Traceparent")
		}
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.HasPrefix(r.URL.Path, "/bad/") {
			w.WriteHeader(500)
			io.WriteString(w, `{"error":{"message":"down","type":"server_error"}}`)
			return
		}
		io.WriteString(w, `{"id":"c","object":"chat.completion","model":"gpt-4o-mini-2024","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}`)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *traceUpstream) traceparent(model string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.parent[model]
}

// TestTracesThroughTheBinary runs the gateway with OTEL_EXPORTER_OTLP_ENDPOINT pointing at an in-process OTLP
// receiver: a request continues its caller's trace, each provider attempt is a child span with the GenAI
// attributes whose context reaches the provider, a fallback shows both attempts, and a wasm guardrail shows as
// a hook span with a plugin span, counted in the verdict and plugin-call metrics.
func TestTracesThroughTheBinary(t *testing.T) {
	recv := tracingtest.New(t)
	up := newTraceUpstream(t)
	dir := t.TempDir()
	boot := writeFile(t, dir, "b.json", `{"api_keys": [{"key": "gw-trace-admin", "admin": true}]}`)
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.URL(), "OTEL_BSP_SCHEDULE_DELAY=100", "OTEL_SERVICE_NAME=",
		"OTEL_TRACES_EXPORTER=", "OTEL_EXPORTER_OTLP_PROTOCOL=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=", "OTEL_TRACES_SAMPLER="}
	p := startGateway(t, env, "--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--bootstrap", boot,
		"--metrics-listen", "127.0.0.1:0")
	if p.base == "" {
		t.Fatalf("start failed: %v", p.err)
	}
	if !strings.Contains(p.stderr.String(), `msg="tracing on"`) {
		t.Fatalf("no tracing in the log:\n%s", p.stderr)
	}
	chat := func(model, config, traceparent string) int {
		t.Helper()
		body := `{"model":"` + model + `","messages":[{"role":"user","content":"hello there"}]}`
		req, _ := http.NewRequest("POST", p.base+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-gateway-api-key", "gw-trace-admin")
		req.Header.Set("x-gateway-config", config)
		if traceparent != "" {
			req.Header.Set("traceparent", traceparent)
		}
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	target := func(path string) string {
		return `{"provider":"openai","api_key":"sk","custom_host":"` + up.URL + path + `/v1"}`
	}
	const wait = 15 * time.Second

	// A caller's trace is continued; the attempt is its child, and the provider gets the attempt's context.
	const trace1, callerSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	if status := chat("model-one", target(""), "00-"+trace1+"-"+callerSpan+"-01"); status != 200 {
		t.Fatalf("chat: %d", status)
	}
	spans := tracingtest.InTrace(recv.Wait(t, wait, func(s []tracingtest.Span) bool {
		in := tracingtest.InTrace(s, trace1)
		return len(tracingtest.Kind(in, tracepb.Span_SPAN_KIND_SERVER)) == 1 && len(tracingtest.Kind(in, tracepb.Span_SPAN_KIND_CLIENT)) == 1
	}), trace1)
	server := tracingtest.Kind(spans, tracepb.Span_SPAN_KIND_SERVER)[0]
	attempt := tracingtest.Kind(spans, tracepb.Span_SPAN_KIND_CLIENT)[0]
	if server.ParentSpanID != callerSpan || server.Service != "gateway" || server.Str("gen_ai.request.model") != "model-one" ||
		server.Str("gen_ai.provider.name") != "openai" || server.Str("gateway.trace_id") == "" {
		t.Errorf("server span: parent %s service %q attrs %v", server.ParentSpanID, server.Service, server.Attrs)
	}
	if n, _ := server.Int("http.response.status_code"); n != 200 {
		t.Errorf("server span status %d", n)
	}
	in, _ := attempt.Int("gen_ai.usage.input_tokens")
	out, _ := attempt.Int("gen_ai.usage.output_tokens")
	if attempt.ParentSpanID != server.SpanID || attempt.Name != "chat model-one" || attempt.Str("gen_ai.provider.name") != "openai" ||
		attempt.Str("gen_ai.system") != "openai" || attempt.Str("gen_ai.request.model") != "model-one" ||
		attempt.Str("gen_ai.response.model") != "gpt-4o-mini-2024" || attempt.Str("gen_ai.operation.name") != "chat" || in != 7 || out != 3 {
		t.Errorf("attempt span %q parent %s attrs %v", attempt.Name, attempt.ParentSpanID, attempt.Attrs)
	}
	if got, want := up.traceparent("model-one"), "00-"+trace1+"-"+attempt.SpanID+"-01"; got != want {
		t.Errorf("the provider got traceparent %q, want %q", got, want)
	}

	// A fallback from a failing target: two attempts, the first failed.
	const trace2 = "1af7651916cd43dd8448eb211c80319c"
	fallback := `{"strategy":{"mode":"fallback"},"targets":[` + target("/bad") + `,` + target("") + `]}`
	if status := chat("model-two", fallback, "00-"+trace2+"-"+callerSpan+"-01"); status != 200 {
		t.Fatalf("fallback chat: %d", status)
	}
	spans = tracingtest.InTrace(recv.Wait(t, wait, func(s []tracingtest.Span) bool {
		in := tracingtest.InTrace(s, trace2)
		return len(tracingtest.Kind(in, tracepb.Span_SPAN_KIND_SERVER)) == 1 && len(tracingtest.Kind(in, tracepb.Span_SPAN_KIND_CLIENT)) == 2
	}), trace2)
	var failed, answered int
	for _, a := range tracingtest.Kind(spans, tracepb.Span_SPAN_KIND_CLIENT) {
		switch n, _ := a.Int("http.response.status_code"); {
		case n == 500 && a.Error:
			failed++
		case n == 200 && !a.Error:
			answered++
		}
	}
	if failed != 1 || answered != 1 {
		t.Errorf("fallback attempts: %d failed, %d answered, want 1 and 1", failed, answered)
	}

	if !testing.Short() { // builds a wasm guest
		status, body := putPlugin(t, p.base, "gw-trace-admin", "denylist", buildExample(t, "denylist"))
		if status != 200 {
			t.Fatalf("upload: %d %v", status, body)
		}
		const trace3 = "2af7651916cd43dd8448eb211c80319c"
		guarded := `{"provider":"openai","api_key":"sk","custom_host":"` + up.URL + `/v1",` +
			`"input_guardrails":[{"id":"words","deny":true,"denylist.check":{"words":["forbidden"]}}]}`
		if status := chat("model-three", guarded, "00-"+trace3+"-"+callerSpan+"-01"); status != 200 {
			t.Fatalf("guarded chat: %d", status)
		}
		named := func(spans []tracingtest.Span, name string) []tracingtest.Span {
			var out []tracingtest.Span
			for _, s := range spans {
				if s.Name == name {
					out = append(out, s)
				}
			}
			return out
		}
		spans = tracingtest.InTrace(recv.Wait(t, wait, func(s []tracingtest.Span) bool {
			in := tracingtest.InTrace(s, trace3)
			return len(named(in, "hooks before")) == 1 && len(named(in, "plugin denylist")) == 1 &&
				len(tracingtest.Kind(in, tracepb.Span_SPAN_KIND_SERVER)) == 1
		}), trace3)
		hook, plugin := named(spans, "hooks before")[0], named(spans, "plugin denylist")[0]
		server := tracingtest.Kind(spans, tracepb.Span_SPAN_KIND_SERVER)[0]
		if hook.ParentSpanID != server.SpanID || plugin.ParentSpanID != hook.SpanID || hook.Str("gateway.hook.stage") != "before" {
			t.Errorf("hook span parent %s, plugin span parent %s (server %s, hook %s)", hook.ParentSpanID, plugin.ParentSpanID, server.SpanID, hook.SpanID)
		}
		m := metricsLine.FindStringSubmatch(p.stderr.String())
		if m == nil {
			t.Fatalf("no metrics listener in the log")
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(m[1])
		if err != nil {
			t.Fatal(err)
		}
		text, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, want := range []string{`gateway_guardrail_verdicts_total{check="denylist.check",verdict="pass"} 1`,
			`gateway_plugin_call_duration_seconds_count{plugin="denylist"} 1`} {
			if !strings.Contains(string(text), want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// TestTracingMisconfiguredStopsTheStart: an OTEL_* value the gateway cannot honour stops it with a message
// naming the variable, rather than serving without the traces its operator asked for.
func TestTracingMisconfiguredStopsTheStart(t *testing.T) {
	dir := t.TempDir()
	p := startGateway(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL=http/json"},
		"--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"))
	if p.base != "" {
		t.Fatal("the gateway started")
	}
	if code := p.wait(t); code != 1 || !strings.Contains(p.stderr.String(), "OTEL_EXPORTER_OTLP_PROTOCOL") {
		t.Fatalf("exit %d, stderr:\n%s", code, p.stderr)
	}
}
