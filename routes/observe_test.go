package routes

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// metricValue is the value of the series of name whose labels include want: a counter's or gauge's value, a
// histogram's sample count. ok is false when no such series exists; several matching series are summed.
func metricValue(t *testing.T, reg prometheus.Gatherer, name string, want map[string]string) (v float64, ok bool) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, w := range want {
				if labels[k] != w {
					continue series
				}
			}
			ok = true
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				v += m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				v += m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				v += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return v, ok
}

func TestMetricsAfterTraffic(t *testing.T) {
	var logs bytes.Buffer
	f := newFixture(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	up := newUpstream(t, nil)
	h := upstreamHeaders(up)
	for i := 0; i < 3; i++ {
		a := f.chat(t, chatBody, h...)
		if a.status != 200 {
			t.Fatalf("chat %d: %d %s", i, a.status, a.body)
		}
		// The answer's own cost: 5 input and 2 output tokens of gpt-4o-mini ($0.15 and $0.60 per million).
		if got := a.header.Get(HeaderCost); got != strconv.FormatFloat((5*0.15+2*0.6)/1e6, 'f', -1, 64) {
			t.Errorf("x-gateway-cost-usd = %q", got)
		}
	}
	reg := f.srv.Metrics().Registry()
	tests := []struct {
		name   string
		metric string
		labels map[string]string
		want   float64
	}{
		{"requests", "gateway_requests_total", map[string]string{"endpoint": "chat/completions", "provider": "openai", "model": "gpt-4o-mini", "status_code": "200"}, 3},
		{"duration count", "gateway_request_duration_seconds", map[string]string{"endpoint": "chat/completions", "provider": "openai"}, 3},
		{"input tokens", "gateway_tokens_total", map[string]string{"provider": "openai", "model": "gpt-4o-mini", "kind": "input"}, 15},
		{"output tokens", "gateway_tokens_total", map[string]string{"provider": "openai", "model": "gpt-4o-mini", "kind": "output"}, 6},
		// gpt-4o-mini: $0.15 input, $0.60 output per million tokens; each answer has 5 and 2.
		{"cost", "gateway_cost_usd_total", map[string]string{"provider": "openai", "model": "gpt-4o-mini"}, 3 * (5*0.15 + 2*0.6) / 1e6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := metricValue(t, reg, tc.metric, tc.labels)
			if !ok || math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("%s%v = %v (found %v), want %v", tc.metric, tc.labels, got, ok, tc.want)
			}
		})
	}
	if v, ok := metricValue(t, reg, "gateway_retries_total", nil); !ok || v != 0 {
		t.Errorf("retries = %v (found %v), want 0", v, ok)
	}
	lines := strings.Count(logs.String(), "msg=request ")
	if lines != 3 {
		t.Errorf("%d request log lines, want 3:\n%s", lines, logs.String())
	}
	for _, want := range []string{"endpoint=chat/completions", "provider=openai", "model=gpt-4o-mini", "status=200", "input_tokens=5", "output_tokens=2", "workspace_id=" + f.ws.ID} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("request log has no %s:\n%s", want, logs.String())
		}
	}
}

func TestMetricsCountRetriesAndRateLimits(t *testing.T) {
	f, _ := newLimitedFixture(t)
	up := newUpstream(t, nil)
	f.newPolicy(t, f.admin, `{"type": "requests", "unit": "rpm", "value": 1, "group_by": [{"key": "api_key"}]}`)
	h := upstreamHeaders(up)
	if a := f.chat(t, chatBody, h...); a.status != 200 {
		t.Fatalf("first: %d %s", a.status, a.body)
	}
	checkError(t, f.chat(t, chatBody, h...), 429, "rate_limited", nil)
	reg := f.srv.Metrics().Registry()
	if v, _ := metricValue(t, reg, "gateway_rate_limited_total", nil); v != 1 {
		t.Errorf("rate limited = %v, want 1", v)
	}
	if v, _ := metricValue(t, reg, "gateway_requests_total", map[string]string{"status_code": "429", "provider": "", "model": "gpt-4o-mini"}); v != 1 {
		t.Errorf("429 requests = %v, want 1", v)
	}

	// A provider's 429, retried, is no refusal of the gateway's: it counts as a retry.
	g := newFixture(t, Options{})
	flaky := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, call int64) {
		w.Header().Set("Content-Type", "application/json")
		if call == 1 {
			w.WriteHeader(429)
			io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit"}}`)
			return
		}
		io.WriteString(w, chatAnswer)
	})
	cfg := fmt.Sprintf(`{"provider":"openai","api_key":"sk","custom_host":%q,"retry":{"attempts":2,"on_status_codes":[429]}}`, flaky.URL+"/v1")
	if a := g.chat(t, chatBody, HeaderConfig, cfg); a.status != 200 || a.header.Get(HeaderRetryCount) != "1" {
		t.Fatalf("retried: %d %s %s", a.status, a.header.Get(HeaderRetryCount), a.body)
	}
	reg = g.srv.Metrics().Registry()
	if v, _ := metricValue(t, reg, "gateway_retries_total", nil); v != 1 {
		t.Errorf("retries = %v, want 1", v)
	}
	if v, _ := metricValue(t, reg, "gateway_rate_limited_total", nil); v != 0 {
		t.Errorf("rate limited = %v, want 0", v)
	}
}

func TestMetricsEndpointAuth(t *testing.T) {
	f := newFixture(t, Options{})
	org := f.orgAdmin(t)
	tests := []struct {
		name   string
		key    string
		status int
	}{
		{"no key", "", 401},
		{"workspace key", f.plain, 403},
		{"workspace admin key", f.admin, 403},
		{"organisation admin key", org, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h []string
			if tc.key != "" {
				h = []string{HeaderAPIKey, tc.key}
			}
			a := f.do(t, "GET", "/metrics", "", h...)
			if a.status != tc.status {
				t.Fatalf("status = %d, want %d: %s", a.status, tc.status, a.body)
			}
			if tc.status == 200 && (!bytes.Contains(a.body, []byte("# TYPE go_goroutines gauge")) ||
				!strings.HasPrefix(a.header.Get("Content-Type"), "text/plain")) {
				t.Fatalf("not the Prometheus text format: %s %s", a.header.Get("Content-Type"), a.body)
			}
		})
	}
}

// postStreamOf posts a streamed chat request for model to the upstream at upstreamBase and reads the whole answer.
func (f *fixture) postStreamOf(t *testing.T, base, upstreamBase, model string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions",
		strings.NewReader(`{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"12345678"}]}`))
	for k, v := range map[string]string{HeaderAPIKey: f.plain, "Content-Type": "application/json", HeaderProvider: "openai",
		"Authorization": "Bearer sk", HeaderCustomHost: upstreamBase} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("stream: %d %s", resp.StatusCode, body)
	}
	return string(body)
}

// TestMetricsOfStreams: a stream's tokens and cost are counted when it ends (reported usage, else an estimate),
// with its time to first token and its upstream time.
func TestMetricsOfStreams(t *testing.T) {
	var logs bytes.Buffer
	f := newFixture(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	base, _ := f.serve(t)
	const withUsage = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n" +
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":30,\"total_tokens\":50}}\n\n" +
		"data: [DONE]\n\n"
	// No usage: 16 bytes of text in two chunks.
	const withoutUsage = "data: {\"id\":\"c2\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"abcdefgh\"}}]}\n\n" +
		"data: {\"id\":\"c2\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ijklmnop\"}}]}\n\n" +
		"data: [DONE]\n\n"
	events := withUsage
	up := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ int64) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, events)
	})
	// The caller did not ask for usage (stream_options.include_usage): its chunk is counted but not shown.
	if got := f.postStreamOf(t, base, up.URL+"/v1", "gpt-4o-mini"); got != withUsage[:strings.Index(withUsage, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[],")]+"data: [DONE]\n\n" {
		t.Fatalf("stream changed on the way: %q", got)
	}
	events = withoutUsage
	if got := f.postStreamOf(t, base, up.URL+"/v1", "gpt-4o"); got != withoutUsage {
		t.Fatalf("stream changed on the way: %q", got)
	}
	reg := f.srv.Metrics().Registry()
	// Estimated at 4 bytes a token: the request body, and the answer's 16 bytes of text (4 tokens).
	reqTokens := float64((len(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"12345678"}]}`) + 3) / 4)
	tests := []struct {
		metric string
		labels map[string]string
		want   float64
	}{
		{"gateway_tokens_total", map[string]string{"model": "gpt-4o-mini", "kind": "input"}, 20},
		{"gateway_tokens_total", map[string]string{"model": "gpt-4o-mini", "kind": "output"}, 30},
		{"gateway_cost_usd_total", map[string]string{"model": "gpt-4o-mini"}, (20*0.15 + 30*0.6) / 1e6},
		{"gateway_tokens_total", map[string]string{"model": "gpt-4o", "kind": "input"}, reqTokens},
		{"gateway_tokens_total", map[string]string{"model": "gpt-4o", "kind": "output"}, 4},
		{"gateway_time_to_first_token_seconds", map[string]string{"provider": "openai"}, 2},
		{"gateway_upstream_duration_seconds", map[string]string{"provider": "openai"}, 2},
		{"gateway_overhead_duration_seconds", map[string]string{"endpoint": "chat/completions"}, 2},
	}
	for _, tc := range tests {
		got, ok := metricValue(t, reg, tc.metric, tc.labels)
		if !ok || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s%v = %v (found %v), want %v", tc.metric, tc.labels, got, ok, tc.want)
		}
	}
	if !strings.Contains(logs.String(), "input_tokens=20 output_tokens=30") {
		t.Errorf("the stream's log line has no usage:\n%s", logs.String())
	}
}

// TestMetricsOfRouting: fallbacks, retries and breakers as the engine reports them.
func TestMetricsOfRouting(t *testing.T) {
	f := newFixture(t, Options{})
	failing := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ int64) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(503)
		io.WriteString(w, `{"error":{"message":"down","type":"server_error"}}`)
	})
	ok := newUpstream(t, nil)
	cfg := fmt.Sprintf(`{"strategy":{"mode":"fallback"},"targets":[
		{"provider":"openai","api_key":"sk","custom_host":%q,"cb_config":{"failure_threshold":1,"cooldown_interval":60000}},
		{"provider":"openai","api_key":"sk","custom_host":%q}]}`, failing.URL+"/v1", ok.URL+"/v1")
	for i := 0; i < 2; i++ { // the first falls back past the failure; the second past the open breaker
		if a := f.chat(t, chatBody, HeaderConfig, cfg); a.status != 200 || a.header.Get(HeaderOptionIndex) != "config.targets[1]" {
			t.Fatalf("request %d: %d %s %s", i, a.status, a.header.Get(HeaderOptionIndex), a.body)
		}
	}
	if n := failing.calls.Load(); n != 1 {
		t.Errorf("the failing target was called %d times, want 1 (its breaker opens after one failure)", n)
	}
	reg := f.srv.Metrics().Registry()
	if v, _ := metricValue(t, reg, "gateway_fallbacks_total", nil); v != 2 {
		t.Errorf("fallbacks = %v, want 2", v)
	}
	if v, found := metricValue(t, reg, "gateway_circuit_open", map[string]string{"target": "openai config.targets[0]"}); !found || v != 1 {
		t.Errorf("circuit_open = %v (found %v), want 1", v, found)
	}
	if v, _ := metricValue(t, reg, "gateway_upstream_duration_seconds", map[string]string{"provider": "openai"}); v != 2 {
		t.Errorf("upstream duration count = %v, want 2", v)
	}
}
