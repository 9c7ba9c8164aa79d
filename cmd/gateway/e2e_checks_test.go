package main

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCheckErrorsThroughTheBinary runs a deny guardrail whose check errors (a webhook to a host outside
// --webhook-hosts: no network is needed) under both --check-errors settings, and sees each error logged with
// its trace ID and check id. It also sees a guardrail naming a missing plugin refused.
func TestCheckErrorsThroughTheBinary(t *testing.T) {
	var calls atomicCounter
	up := newChatUpstream(t, &calls)
	config := `{"provider":"openai","api_key":"sk","custom_host":"` + up.URL + `/v1",` +
		`"input_guardrails":[{"id":"audit","deny":true,"default.webhook":{"webhookURL":"http://127.0.0.1:9/hook"}}]}`
	tests := []struct {
		name      string
		args      []string
		status    int
		countedAs string
	}{
		{"default: pass", nil, 200, "pass"},
		{"--check-errors fail", []string{"--check-errors", "fail"}, 446, "fail"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			boot := writeFile(t, dir, "b.json", `{"api_keys": [{"key": "gw-checks-admin", "admin": true}]}`)
			p := startGateway(t, nil, append([]string{"--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"),
				"--bootstrap", boot}, tc.args...)...)
			body := `{"model":"m","messages":[{"role":"user","content":"e2e-private-words"}]}`
			req, _ := http.NewRequest("POST", p.base+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("x-gateway-api-key", "gw-checks-admin")
			req.Header.Set("x-gateway-config", config)
			req.Header.Set("x-gateway-trace-id", "trace-e2e-checks")
			resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			waitFor(t, p, "trace_id=trace-e2e-checks", 10*time.Second)
			var line string
			for _, l := range strings.Split(p.stderr.String(), "\n") {
				if strings.Contains(l, "trace_id=trace-e2e-checks") && strings.Contains(l, `msg="check errored"`) {
					line = l
				}
			}
			for _, want := range []string{"level=WARN", "check=default.webhook", "hook=audit", "counted_as=" + tc.countedAs} {
				if !strings.Contains(line, want) {
					t.Errorf("log line lacks %s: %q", want, line)
				}
			}
			if strings.Contains(p.stderr.String(), "e2e-private-words") {
				t.Error("the log carries the request's content")
			}

			status, m, _ := call(t, "PUT", p.base+"/v1/guardrails/g", "gw-checks-admin", `{"deny": true, "piii.detect": {}}`)
			if errObj, _ := m["error"].(map[string]any); status != 400 || errObj["param"] != "piii.detect" ||
				!strings.Contains(errObj["message"].(string), `no plugin "piii" exists`) {
				t.Errorf("guardrail naming a missing plugin: %d %v", status, m)
			}
			p.stop(t, syscall.SIGTERM)
		})
	}
}

// TestBootstrapNamingAMissingPluginStopsTheStart: a saved config whose guardrail names a plugin that neither the
// file nor the store has stops the start, naming the check's place in the file.
func TestBootstrapNamingAMissingPluginStopsTheStart(t *testing.T) {
	dir := t.TempDir()
	boot := writeFile(t, dir, "b.json", `{"api_keys": [{"key": "gw-checks-admin", "admin": true}],
  "configs": [{"id": "c", "config": {"input_guardrails": [{"deny": true, "piii.detect": {}}]}}]}`)
	p := startGateway(t, nil, "--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--bootstrap", boot)
	if code := p.wait(t); code == 0 {
		t.Fatal("gateway started with a config naming a missing plugin")
	}
	out := p.stderr.String()
	for _, want := range []string{"configs[0].config.input_guardrails[0].piii.detect", `no plugin "piii" exists`} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr does not say %s:\n%s", want, out)
		}
	}
}
