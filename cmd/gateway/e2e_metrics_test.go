package main

import (
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

var metricsLine = regexp.MustCompile(`msg="metrics listening" addr=(http://\S+)`)

// TestMetricsListener serves /metrics without a key on --metrics-listen, while the main listener keeps
// asking for an organisation admin key, and closes the metrics listener at shutdown.
func TestMetricsListener(t *testing.T) {
	dir := t.TempDir()
	env := []string{"GATEWAY_LISTEN=127.0.0.1:0", "GATEWAY_DATA_DIR=" + filepath.Join(dir, "data"), "GATEWAY_MASTER_KEY=" + strings.Repeat("ab", 32),
		"GATEWAY_BOOTSTRAP=" + writeFile(t, dir, "b.json", `{"api_keys": [{"key": "gw-metrics-key-1", "admin": true}]}`)}
	p := startGateway(t, env, "--metrics-listen", "127.0.0.1:0")
	if p.base == "" {
		t.Fatalf("start failed: %v", p.err)
	}
	m := metricsLine.FindStringSubmatch(p.stderr.String())
	if m == nil {
		t.Fatalf("no metrics listener in the log:\n%s", p.stderr)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "# TYPE go_goroutines gauge") {
		t.Fatalf("metrics listener: %d %s", resp.StatusCode, body)
	}
	if status, body, _ := call(t, "GET", p.base+"/metrics", "", ""); status != 401 {
		t.Errorf("main listener without a key: %d %v", status, body)
	}
	if status, body, _ := call(t, "GET", p.base+"/metrics", "gw-metrics-key-1", ""); status != 403 {
		t.Errorf("main listener with a workspace admin key: %d %v", status, body)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if _, err := client.Get(m[1]); err == nil {
		t.Error("the metrics listener still answers after shutdown")
	}
}
