package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmgw/gateway/internal/testservices"
)

// These tests run two gateway processes as replicas, sharing one PostgreSQL schema (--postgres) and one Redis
// (--redis), as DESIGN.md's "Several replicas" has them: what one replica is told, the other acts on.

// replicaMasterKey is the key both replicas seal secrets with: replicas share GATEWAY_MASTER_KEY.
const replicaMasterKey = "GATEWAY_MASTER_KEY=6d2c0b4f1e9a7d3c5b8e2f4a6c1d9e0b3a5f7c2e4d6b8a0c1e3f5a7b9d2c4e6f"

type replicaPair struct {
	a, b        *gatewayProc
	pg, redis   string
	dirA, dirB  string
	bootA       string
	extraEnv    []string
	commonFlags []string
}

// startReplicas starts replica a (with the bootstrap file) and then replica b over the same PostgreSQL schema
// and Redis.
func startReplicas(t *testing.T, bootstrap string, redisURL string, env ...string) *replicaPair {
	t.Helper()
	pg := testservices.PostgresSchemaURL(t)
	if redisURL == "" {
		redisURL = testservices.RedisURL(t)
	}
	dir := t.TempDir()
	r := &replicaPair{pg: pg, redis: redisURL, dirA: filepath.Join(dir, "a"), dirB: filepath.Join(dir, "b"),
		extraEnv: append([]string{replicaMasterKey}, env...)}
	r.bootA = writeFile(t, dir, "bootstrap.json", bootstrap)
	r.commonFlags = []string{"--listen", "127.0.0.1:0", "--postgres", pg, "--redis", redisURL}
	r.a = startGateway(t, r.extraEnv, append(r.commonFlags, "--data", r.dirA, "--bootstrap", r.bootA)...)
	if r.a.base == "" {
		t.Fatalf("replica a did not start: %v\n%s", r.a.err, r.a.stderr)
	}
	r.b = r.startB(t)
	return r
}

func (r *replicaPair) startB(t *testing.T) *gatewayProc {
	t.Helper()
	b := startGateway(t, r.extraEnv, append(r.commonFlags, "--data", r.dirB)...)
	if b.base == "" {
		t.Fatalf("replica b did not start: %v\n%s", b.err, b.stderr)
	}
	return b
}

func chatThrough(t *testing.T, base, key string, headers map[string]string, content string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":`+strconvQuote(content)+`}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-gateway-api-key", key)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// TestReplicasShareRecordsLimitsAndPlugins: a provider created on one replica is used by the other at once; a
// rate limit of N a minute holds across both; a plugin pushed to one serves on the other; a guardrail changed on
// one applies on the other.
func TestReplicasShareRecordsLimitsAndPlugins(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL-backed replicas and builds a wasm guest")
	}
	var calls atomicCounter
	up := newChatUpstream(t, &calls)
	const admin = "gw-replica-admin"
	r := startReplicas(t, `{"api_keys": [{"key": "`+admin+`", "admin": true}]}`, "")

	// A provider created on a is used through b at once.
	status, body, _ := call(t, "POST", r.a.base+"/v1/providers", admin,
		fmt.Sprintf(`{"slug":"mock","provider":"openai","api_key":"sk-replica-secret","custom_host":%q}`, up.URL+"/v1"))
	if status != 200 {
		t.Fatalf("create provider on a: %d %v", status, body)
	}
	vk := map[string]string{"x-gateway-virtual-key": "mock"}
	if status, text, _ := chatThrough(t, r.b.base, admin, vk, "hello"); status != 200 {
		t.Fatalf("provider created on a, used on b: %d %s", status, text)
	}

	// Its deletion on b reaches a's cached copy: a no longer routes to it.
	if status, body, _ := call(t, "DELETE", r.b.base+"/v1/providers/mock", admin, ""); status != 200 {
		t.Fatalf("delete provider on b: %d %v", status, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, _, _ := chatThrough(t, r.a.base, admin, vk, "hello")
		if status != 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a still uses the provider b deleted")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status, body, _ := call(t, "POST", r.b.base+"/v1/providers", admin,
		fmt.Sprintf(`{"slug":"mock","provider":"openai","api_key":"sk-replica-secret","custom_host":%q}`, up.URL+"/v1")); status != 200 {
		t.Fatalf("create provider on b: %d %v", status, body)
	}

	// A limit of 4 requests a minute holds across both replicas.
	status, body, _ = call(t, "POST", r.a.base+"/v1/policies/rate-limits", admin,
		`{"type":"requests","unit":"rpm","value":4,"conditions":[{"key":"virtual_key","value":"mock"}],"group_by":[]}`)
	if status != 200 {
		t.Fatalf("create policy: %d %v", status, body)
	}
	policyID, _ := body["id"].(string)
	ok, limited := 0, 0
	for i := range 8 {
		base := r.a.base
		if i%2 == 1 {
			base = r.b.base
		}
		status, text, h := chatThrough(t, base, admin, vk, fmt.Sprintf("limited %d", i))
		switch status {
		case 200:
			ok++
		case 429:
			limited++
			if h.Get("retry-after") == "" {
				t.Errorf("429 without retry-after: %s", text)
			}
		default:
			t.Fatalf("request %d: %d %s", i, status, text)
		}
	}
	if ok != 4 || limited != 4 {
		t.Fatalf("a limit of 4 rpm across two replicas admitted %d and refused %d of 8", ok, limited)
	}
	if status, body, _ := call(t, "DELETE", r.a.base+"/v1/policies/rate-limits/"+policyID, admin, ""); status != 200 {
		t.Fatalf("delete policy: %d %v", status, body)
	}

	// A plugin pushed to a serves on b: b loads it when a's write reaches it.
	denylist := buildExample(t, "denylist")
	if status, body := putPlugin(t, r.a.base, admin, "denylist", denylist); status != 200 {
		t.Fatalf("upload on a: %d %v", status, body)
	}
	pushed := time.Now()
	waitFor(t, r.b, `msg="replica: plugin loaded (changed on another replica)"`, 2*time.Minute)
	t.Logf("the plugin served on b %v after a stored it (b compiles an upload while a checks it, so it loads from its compilation cache)", time.Since(pushed).Round(time.Millisecond))
	guarded := map[string]string{"x-gateway-virtual-key": "mock",
		"x-gateway-config": `{"input_guardrails":[{"id":"words","deny":true,"denylist.check":{"words":["forbidden"]}}]}`}
	if status, text, _ := chatThrough(t, r.b.base, admin, guarded, "this is forbidden talk"); status != 446 {
		t.Fatalf("the plugin pushed to a does not deny on b: %d %s", status, text)
	}

	// A saved guardrail changed on a applies on b at once: b drops the hooks it compiled from the old one.
	putGuardrail := func(base, words string) {
		t.Helper()
		status, body, _ := call(t, "PUT", base+"/v1/guardrails/words-saved", admin, `{"deny":true,"denylist.check":{"words":[`+words+`]}}`)
		if status != 200 {
			t.Fatalf("save guardrail: %d %v", status, body)
		}
	}
	saved := map[string]string{"x-gateway-virtual-key": "mock", "x-gateway-config": `{"input_guardrails":["words-saved"]}`}
	putGuardrail(r.a.base, `"banana"`)
	if status, text, _ := chatThrough(t, r.b.base, admin, saved, "a banana"); status != 446 {
		t.Fatalf("the guardrail saved on a does not deny on b: %d %s", status, text)
	}
	putGuardrail(r.a.base, `"apple"`)
	deadline = time.Now().Add(10 * time.Second)
	for {
		status, _, _ := chatThrough(t, r.b.base, admin, saved, "an apple")
		if status == 446 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b still applies the guardrail a replaced")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status, text, _ := chatThrough(t, r.b.base, admin, saved, "a banana"); status != 200 {
		t.Fatalf("b still denies by the old guardrail: %d %s", status, text)
	}

	// A plugin deleted on b goes away on a too.
	if status, body, _ := call(t, "DELETE", r.b.base+"/v1/plugins/denylist", admin, ""); status != 200 {
		t.Fatalf("delete plugin on b: %d %v", status, body)
	}
	waitFor(t, r.a, `msg="replica: plugin removed (changed on another replica)"`, 30*time.Second)
	r.a.stop(t, syscall.SIGTERM)
	r.b.stop(t, syscall.SIGTERM)
}

// TestReplicasBatchTakeover starts a batch on replica a, kills a with SIGKILL in the middle, and sees replica b
// take the batch over and finish it with exactly one result per line.
func TestReplicasBatchTakeover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL-backed replicas")
	}
	const lines = 120
	var mu sync.Mutex
	calls := map[string]int{}
	up := newCountingChatUpstream(t, &mu, calls)
	r := startReplicas(t, fmt.Sprintf(`{"api_keys": [{"key": "gw-batch-key"}],
  "providers": [{"slug": "mock", "provider": "openai", "api_key": "sk-stored", "custom_host": %q}]}`, up.URL+"/v1"),
		"", "GATEWAY_BATCH_LEASE=2s")

	var input strings.Builder
	for i := range lines {
		id := fmt.Sprintf("line-%03d", i)
		fmt.Fprintf(&input, `{"custom_id":%q,"method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"user","content":%q}]}}`+"\n", id, id)
	}
	fileID := uploadBatchFile(t, r.a.base, "gw-batch-key", input.String())
	created := createBatch(t, r.a.base, fmt.Sprintf(`{"input_file_id":%q,"endpoint":"/v1/chat/completions","completion_window":"immediate"}`, fileID))
	id, _ := created["id"].(string)
	if id == "" {
		t.Fatalf("create batch: %v", created)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		b := getBatch(t, r.a.base, id)
		counts, _ := b["request_counts"].(map[string]any)
		done, _ := counts["completed"].(float64)
		if done >= lines/6 {
			if b["status"] != "in_progress" {
				t.Fatalf("the batch went too far before the kill: %v", b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch did not progress on a: %v", b)
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.a.stop(t, syscall.SIGKILL)

	var final map[string]any
	deadline = time.Now().Add(2 * time.Minute)
	for {
		final = getBatch(t, r.b.base, id)
		if final["status"] == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b did not finish the batch a left: %v\n%s", final, r.b.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	counts := final["request_counts"].(map[string]any)
	if counts["completed"].(float64) != lines || counts["failed"].(float64) != 0 {
		t.Fatalf("counts after the takeover: %v", counts)
	}
	out := string(fileContent(t, r.b.base, final["output_file_id"].(string)))
	for i := range lines {
		id := fmt.Sprintf("line-%03d", i)
		if n := strings.Count(out, `"custom_id":"`+id+`"`); n != 1 {
			t.Fatalf("%s has %d results in the output", id, n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	reran := 0
	for _, n := range calls {
		if n > 1 {
			reran++
		}
	}
	// A line a was running when it died has no result and runs again on b; no finished line runs twice.
	if reran > 8 {
		t.Fatalf("%d lines were sent upstream more than once; only those in flight at the kill may be", reran)
	}
	r.b.stop(t, syscall.SIGTERM)
}

// newCountingChatUpstream answers chat completions with the first message's content, counting calls by it.
func newCountingChatUpstream(t *testing.T, mu *sync.Mutex, calls map[string]int) *httptest.Server {
	return newDelayedChatUpstream(t, mu, calls, 20*time.Millisecond)
}

func newDelayedChatUpstream(t *testing.T, mu *sync.Mutex, calls map[string]int, delay time.Duration) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		id := ""
		if i := strings.Index(string(raw), `"content":"`); i >= 0 {
			id, _, _ = strings.Cut(string(raw[i+len(`"content":"`):]), `"`)
		}
		mu.Lock()
		calls[id]++
		mu.Unlock()
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}]}`, id)
	}))
	t.Cleanup(up.Close)
	return up
}

// TestReplicaKeepsServingWithoutRedis stops the replicas' Redis in the middle of a run: requests are still
// answered (limits counted locally), the log says so, and gateway_redis_up reads 0.
func TestReplicaKeepsServingWithoutRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a redis-server of its own")
	}
	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("GATEWAY_REQUIRE_SERVICES") == "1" {
			t.Fatal("redis-server is not installed (Debian package redis-server)")
		}
		t.Skip("redis-server is not installed (Debian package redis-server)")
	}
	port := freePort(t)
	dir := t.TempDir()
	srv := exec.Command(redisBin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			srv.Process.Kill()
			srv.Wait()
		}
	})
	waitListening(t, port)

	var calls atomicCounter
	up := newChatUpstream(t, &calls)
	const key = "gw-redis-lost"
	r := startReplicas(t, fmt.Sprintf(`{"api_keys": [{"key": %q, "admin": true, "organisation_admin": true}],
  "providers": [{"slug": "mock", "provider": "openai", "api_key": "sk-stored", "custom_host": %q}],
  "rate_limit_policies": [{"id": "55555555-5555-4555-8555-555555555555", "type": "requests", "unit": "rpm", "value": 1000, "group_by": []}]}`,
		key, up.URL+"/v1"), fmt.Sprintf("redis://127.0.0.1:%d/0", port))
	vk := map[string]string{"x-gateway-virtual-key": "mock"}
	for _, p := range []*gatewayProc{r.a, r.b} {
		if status, text, _ := chatThrough(t, p.base, key, vk, "before"); status != 200 {
			t.Fatalf("with redis: %d %s", status, text)
		}
	}
	srv.Process.Kill()
	srv.Wait()
	stopped = true
	for i := range 6 {
		p := r.a
		if i%2 == 1 {
			p = r.b
		}
		status, text, h := chatThrough(t, p.base, key, vk, fmt.Sprintf("after %d", i))
		if status != 200 || h.Get("x-ratelimit-limit") == "" {
			t.Fatalf("without redis, request %d: %d %s (limit header %q)", i, status, text, h.Get("x-ratelimit-limit"))
		}
	}
	waitFor(t, r.a, `msg="redis: lost; falling back to local state`, 10*time.Second)
	if m := scrapeMetrics(t, r.a.base, key); !strings.Contains(m, "gateway_redis_up 0") {
		t.Fatalf("metrics do not say redis is down:\n%s", grepLines(m, "gateway_redis"))
	}

	// Redis back on its port: the probe finds it, the replica says so and uses it again.
	srv = exec.Command(redisBin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	stopped = false
	waitListening(t, port)
	waitFor(t, r.a, `msg="redis: reachable again; shared state restored"`, 20*time.Second)
	if status, text, _ := chatThrough(t, r.a.base, key, vk, "back"); status != 200 {
		t.Fatalf("with redis back: %d %s", status, text)
	}
	if m := scrapeMetrics(t, r.a.base, key); !strings.Contains(m, "gateway_redis_up 1") {
		t.Fatalf("metrics do not say redis is back:\n%s", grepLines(m, "gateway_redis"))
	}
}

func scrapeMetrics(t *testing.T, base, key string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("x-gateway-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	return string(text)
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func waitListening(t *testing.T, port int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("nothing listens on port %d", port)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
