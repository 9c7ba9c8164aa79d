package main

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRateLimitsAndCacheThroughTheBinary runs the built gateway with a bootstrap file holding a requests
// policy (3 a day per API key) and a saved config with the simple cache, and checks that a day's counters and
// the cached answers survive a restart, a clean one and a kill -9 alike.
func TestRateLimitsAndCacheThroughTheBinary(t *testing.T) {
	var calls atomicCounter
	up := newChatUpstream(t, &calls)
	dir := t.TempDir()
	boot := writeFile(t, dir, "bootstrap.json", fmt.Sprintf(`{
  "api_keys": [{"key": "gw-limits-key-1", "admin": true}],
  "providers": [{"slug": "mock", "provider": "openai", "api_key": "sk-stored", "custom_host": %q}],
  "configs": [{"id": "cached", "config": {"provider": "@mock", "cache": {"mode": "simple", "max_age": 3600}}}],
  "rate_limit_policies": [{"id": "44444444-4444-4444-8444-444444444444", "type": "requests", "unit": "rpd", "value": 3,
      "group_by": [{"key": "api_key"}]}]
}`, up.URL+"/v1"))
	data := filepath.Join(dir, "data")
	start := func() *gatewayProc {
		p := startGateway(t, nil, "--listen", "127.0.0.1:0", "--data", data, "--bootstrap", boot)
		if p.base == "" {
			t.Fatalf("gateway did not start: %v", p.err)
		}
		return p
	}
	chat := func(p *gatewayProc, question string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", p.base+"/v1/chat/completions",
			strings.NewReader(`{"model":"m","messages":[{"role":"user","content":`+strconvQuote(question)+`}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-gateway-api-key", "gw-limits-key-1")
		req.Header.Set("x-gateway-config", "cached")
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	expect := func(resp *http.Response, status int, cache, remaining string) {
		t.Helper()
		if resp.StatusCode != status || resp.Header.Get("x-gateway-cache-status") != cache || resp.Header.Get("x-ratelimit-remaining") != remaining {
			t.Fatalf("answer %d, cache %q, remaining %q; want %d, %q, %q", resp.StatusCode,
				resp.Header.Get("x-gateway-cache-status"), resp.Header.Get("x-ratelimit-remaining"), status, cache, remaining)
		}
	}

	p := start()
	expect(chat(p, "one"), 200, "MISS", "2")
	expect(chat(p, "one"), 200, "HIT", "1") // a cached answer is still a request
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code %d", code)
	}

	p = start()
	expect(chat(p, "one"), 200, "HIT", "0") // the cache and the day's count survived the restart
	time.Sleep(1500 * time.Millisecond)     // the limiter saves its counters every second
	p.stop(t, syscall.SIGKILL)

	p = start()
	resp := chat(p, "two")
	if resp.StatusCode != 429 || resp.Header.Get("retry-after") == "" || resp.Header.Get("x-ratelimit-limit") != "3" {
		t.Fatalf("after kill -9: %d %v; want 429 with retry-after", resp.StatusCode, resp.Header)
	}
	if calls.n.Load() != 1 {
		t.Fatalf("upstream called %d times, want 1", calls.n.Load())
	}
}
