package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// walkthroughTitle is the heading of README.md's walkthrough, which TestWalkthrough follows.
const walkthroughTitle = "### Walkthrough: from a mock provider to a denying wasm guardrail"

// walkthroughBlocks returns the code blocks of README.md's walkthrough (indented by 7 spaces, inside list items),
// without their indentation.
func walkthroughBlocks(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, s, ok := strings.Cut(string(b), "\n"+walkthroughTitle+"\n")
	if !ok {
		t.Fatalf("README.md has no heading %q", walkthroughTitle)
	}
	if i := regexp.MustCompile(`(?m)^#{1,3} `).FindStringIndex(s); i != nil {
		s = s[:i[0]]
	}
	var blocks []string
	var cur []string
	flush := func() {
		if cur != nil {
			blocks = append(blocks, strings.TrimRight(strings.Join(cur, "\n"), "\n")+"\n")
			cur = nil
		}
	}
	for _, line := range strings.Split(s, "\n") {
		switch {
		case strings.HasPrefix(line, "       "):
			cur = append(cur, line[7:])
		case strings.TrimSpace(line) == "" && cur != nil:
			cur = append(cur, "")
		default:
			flush()
		}
	}
	flush()
	return blocks
}

// blockWith returns the first block that contains all of subs, failing t when none does.
func blockWith(t *testing.T, blocks []string, subs ...string) string {
	t.Helper()
next:
	for _, b := range blocks {
		for _, sub := range subs {
			if !strings.Contains(b, sub) {
				continue next
			}
		}
		return b
	}
	t.Fatalf("README.md's walkthrough has no block with %q", subs)
	return ""
}

// dataArg returns the argument of a curl command's -d '...'.
func dataArg(t *testing.T, block string) string {
	t.Helper()
	m := regexp.MustCompile(`-d '([^']*)'`).FindStringSubmatch(block)
	if m == nil {
		t.Fatalf("no -d '...' in\n%s", block)
	}
	return m[1]
}

// executionTime matches the timings of hook_results, which tests never compare.
var executionTime = regexp.MustCompile(`"execution_time":\d+`)

// compact joins a README output block's lines and zeroes its timings.
func compact(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		b.WriteString(strings.TrimSpace(line))
	}
	return executionTime.ReplaceAllString(b.String(), `"execution_time":0`)
}

// TestWalkthrough follows README.md's walkthrough against the binary, with its bootstrap file, guardrail and
// requests taken from the README: the mock provider (examples/mockprovider), the denylist example plugin
// uploaded, the guardrail saved, a request that passes (200) and one that is denied (446) without reaching the
// provider, their hook_results being the ones the README shows.
func TestWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a wasm guest")
	}
	blocks := walkthroughBlocks(t)
	dir := t.TempDir()

	// Step 1: the mock provider, on a free port.
	blockWith(t, blocks, "go run ./examples/mockprovider")
	mockBin := filepath.Join(dir, "mockprovider")
	if out, err := exec.Command("go", "build", "-o", mockBin, "../../examples/mockprovider").CombinedOutput(); err != nil {
		t.Fatalf("build the mock provider: %v\n%s", err, out)
	}
	mock := exec.Command(mockBin, "-listen", "127.0.0.1:0")
	mockLog := &syncBuffer{}
	mock.Stderr = mockLog
	if err := mock.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mock.Process.Kill(); mock.Wait() })
	var mockURL string
	for deadline := time.Now().Add(20 * time.Second); mockURL == ""; time.Sleep(20 * time.Millisecond) {
		if m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(mockLog.String()); m != nil {
			mockURL = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("the mock provider did not start:\n%s", mockLog)
		}
	}

	// Step 2: the README's bootstrap file, pointed at the mock's port; the gateway.
	start := blockWith(t, blocks, "<<'JSON'", "go run ./cmd/gateway")
	_, rest, _ := strings.Cut(start, "<<'JSON'\n")
	bootstrap, _, ok := strings.Cut(rest, "\nJSON\n")
	if !ok || !strings.Contains(bootstrap, `"http://127.0.0.1:9911/v1"`) {
		t.Fatalf("README.md's bootstrap file is not where TestWalkthrough looks:\n%s", start)
	}
	boot := writeFile(t, dir, "bootstrap.json", strings.Replace(bootstrap, "http://127.0.0.1:9911", mockURL, 1))
	p := startGateway(t, nil, "--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--bootstrap", boot)
	if p.base == "" {
		t.Fatalf("gateway did not start: %v", p.err)
	}
	waitFor(t, p, `msg="bootstrap file applied"`, 10*time.Second)
	const key = "gw-walkthrough-admin"

	send := func(method, path, contentType string, body []byte, headers ...string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, p.base+path, strings.NewReader(string(body)))
		req.Header.Set("x-gateway-api-key", key)
		req.Header.Set("Content-Type", contentType)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}

	// Step 3: the gateway reaches the mock.
	hello := blockWith(t, blocks, "x-gateway-provider: @mock")
	if status, b := send("POST", "/v1/chat/completions", "application/json", []byte(dataArg(t, hello)), "x-gateway-provider", "@mock"); status != 200 ||
		!strings.Contains(string(b), `"content":"You said: Hello"`) {
		t.Fatalf("step 3: %d %s", status, b)
	}

	// Step 4: the denylist example, built and uploaded as plugin "denylist".
	blockWith(t, blocks, "cd examples/denylist && GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared", "/v1/plugins/denylist ")
	if status, body := putPlugin(t, p.base, key, "denylist", buildExample(t, "denylist")); status != 200 || body["id"] != "denylist" {
		t.Fatalf("step 4: %d %v", status, body)
	}

	// Step 5: the guardrail no-secrets.
	guardrail := dataArg(t, blockWith(t, blocks, "/v1/guardrails/no-secrets"))
	if status, b := send("PUT", "/v1/guardrails/no-secrets", "application/json", []byte(guardrail)); status != 200 {
		t.Fatalf("step 5: %d %s", status, b)
	}

	// Steps 6 and 7: through the config "guarded", a request that passes and one that is denied.
	var requests, outputs []string
	for _, b := range blocks {
		if strings.Contains(b, "x-gateway-config: guarded") {
			requests = append(requests, dataArg(t, b))
		}
		if strings.Contains(b, `"hook_results"`) {
			outputs = append(outputs, b)
		}
	}
	if len(requests) != 2 || len(outputs) != 2 {
		t.Fatalf("README.md's walkthrough has %d requests through the config guarded and %d answers, want 2 and 2", len(requests), len(outputs))
	}
	tests := []struct {
		name, status string
		code         int
		calls        int // upstream calls the request makes
		content      string
	}{
		{"passes", "status 200", 200, 1, `"content":"You said: What is the capital of France?"`},
		{"denied", "status 446", 446, 0, `"type":"hooks_failed"`},
	}
	// mark sends a request with a model of its own through the gateway and returns how many calls the mock had
	// logged before it. The mock logs a call before it answers, but its log reaches the test through a pipe,
	// maybe after the answer: counting up to a marked line counts every call made before it.
	mark := func(t *testing.T, name string) int {
		t.Helper()
		body := `{"model": "mark-` + name + `", "messages": [{"role": "user", "content": "mark"}]}`
		if status, b := send("POST", "/v1/chat/completions", "application/json", []byte(body), "x-gateway-provider", "@mock"); status != 200 {
			t.Fatalf("the request that marks the log: %d %s", status, b)
		}
		line := `model="mark-` + name + `"`
		for deadline := time.Now().Add(20 * time.Second); !strings.Contains(mockLog.String(), line); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the mock never logged the marked request:\n%s", mockLog)
			}
		}
		logged, _, _ := strings.Cut(mockLog.String(), line)
		return strings.Count(logged, "POST /v1/chat/completions") - 1 // the marked call's own line starts before line
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := mark(t, tc.name+"-start")
			status, b := send("POST", "/v1/chat/completions", "application/json", []byte(requests[i]), "x-gateway-config", "guarded")
			if status != tc.code || !strings.Contains(string(b), tc.content) {
				t.Fatalf("%d %s", status, b)
			}
			if got := mark(t, tc.name+"-end") - before - 1; got != tc.calls {
				t.Errorf("the provider was called %d times, want %d", got, tc.calls)
			}
			var answer struct {
				HookResults json.RawMessage `json:"hook_results"`
			}
			if err := json.Unmarshal(b, &answer); err != nil || answer.HookResults == nil {
				t.Fatalf("no hook_results in %s (%v)", b, err)
			}
			got := `"hook_results":` + executionTime.ReplaceAllString(string(answer.HookResults), `"execution_time":0`)
			if want := compact(outputs[i]); !strings.Contains(want, got) || !strings.Contains(outputs[i], tc.status) {
				t.Errorf("README.md shows\n%s\nbut the gateway answers %d with\n%s", outputs[i], status, got)
			}
		})
	}
	p.stop(t, syscall.SIGTERM)
}
