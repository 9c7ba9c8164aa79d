package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestRequestBoundsThroughTheBinary runs the built gateway with --max-upstream-attempts and --request-deadline
// and checks that one request stays bounded: a 16 × 16 saved config with retries makes exactly the capped
// number of upstream calls, a hanging provider gets a 408 at the deadline, a caller that hangs up has its
// upstream call cancelled, and SIGTERM cancels a request still running when the grace period ends.
func TestRequestBoundsThroughTheBinary(t *testing.T) {
	var failing atomic.Int64
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := failing.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(500)
		fmt.Fprintf(w, `{"error":{"message":"down %d"}}`, n)
	}))
	defer down.Close()
	var hanging atomic.Int64
	entered, cancelled, stop := make(chan struct{}, 16), make(chan struct{}, 16), make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hanging.Add(1)
		io.Copy(io.Discard, r.Body) // net/http notices the gateway hanging up only once the body is read
		entered <- struct{}{}
		select {
		case <-r.Context().Done():
			cancelled <- struct{}{}
		case <-stop:
		}
	}))
	defer hang.Close()
	defer close(stop) // before hang.Close, which waits for the calls to end

	var groups []string
	for i := 0; i < 16; i++ {
		var leaves []string
		for j := 0; j < 16; j++ {
			leaves = append(leaves, fmt.Sprintf(`{"provider":"openai","api_key":"sk-%d-%d","custom_host":%q}`, i, j, down.URL+"/v1"))
		}
		groups = append(groups, `{"strategy":{"mode":"fallback"},"targets":[`+strings.Join(leaves, ",")+`]}`)
	}
	fanout := `{"strategy":{"mode":"fallback"},"retry":{"attempts":1},"targets":[` + strings.Join(groups, ",") + `]}`
	dir := t.TempDir()
	boot := writeFile(t, dir, "bootstrap.json", fmt.Sprintf(`{
  "api_keys": [{"key": "gw-bounds-key-1", "admin": true}],
  "providers": [{"slug": "hang", "provider": "openai", "api_key": "sk-hang", "custom_host": %q}],
  "configs": [{"id": "fanout", "config": %s},
              {"id": "hang", "config": {"provider": "@hang", "request_timeout": 60000, "retry": {"attempts": 5, "on_status_codes": [408]}}}]
}`, hang.URL+"/v1", fanout))
	p := startGateway(t, nil, "--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--bootstrap", boot,
		"--max-upstream-attempts", "5", "--request-deadline", "3s", "--shutdown-grace", "200ms")
	if p.base == "" {
		t.Fatalf("gateway did not start: %v", p.err)
	}
	chat := func(config string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", p.base+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-gateway-api-key", "gw-bounds-key-1")
		req.Header.Set("x-gateway-config", config)
		resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal(what)
		}
	}

	// The fan-out: 16 × 16 targets with a retry each would be 512 calls; the cap allows 5.
	status, body := chat("fanout")
	if n := failing.Load(); n != 5 {
		t.Fatalf("the upstream saw %d calls, want the cap of 5", n)
	}
	if want := `{"error":{"message":"down 5"}}`; status != 500 || body != want {
		t.Fatalf("answer %d %s, want the last attempt's: 500 %s", status, body, want)
	}
	for logged := time.After(10 * time.Second); !strings.Contains(p.stderr.String(), "upstream attempt cap reached"); {
		select { // the log is copied from the process's stderr as it comes
		case <-logged:
			t.Fatalf("the log does not say why the request stopped:\n%s", p.stderr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if log := p.stderr.String(); !strings.Contains(log, "cap=5") || !strings.Contains(log, "attempts=5") {
		t.Errorf("the log does not give the cap and the attempts made:\n%s", log)
	}

	// The deadline: a provider that never answers, retried on 408 with a 60 s request_timeout.
	status, body = chat("hang")
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	json.Unmarshal([]byte(body), &e)
	if status != 408 || e.Error.Code != "request_timeout" {
		t.Fatalf("answer %d %s, want 408 request_timeout", status, body)
	}
	wait(entered, "the hanging provider was never called")
	wait(cancelled, "the hanging call was not cancelled at the deadline")
	if n := hanging.Load(); n != 1 {
		t.Fatalf("the hanging provider was called %d times; nothing should be tried after the deadline", n)
	}

	// A caller that hangs up: its upstream call is cancelled well before the deadline.
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	reqBody := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nx-gateway-api-key: gw-bounds-key-1\r\n"+
		"x-gateway-config: hang\r\nContent-Length: %d\r\n\r\n%s", len(reqBody), reqBody)
	wait(entered, "the hanging provider was never called for the caller that hangs up")
	conn.Close()
	wait(cancelled, "the upstream call was not cancelled after the caller hung up")

	// SIGTERM with a request in flight: after the 200 ms grace period the request is cancelled and answers 503.
	conn, err = net.Dial("tcp", strings.TrimPrefix(p.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nx-gateway-api-key: gw-bounds-key-1\r\n"+
		"x-gateway-config: hang\r\nContent-Length: %d\r\n\r\n%s", len(reqBody), reqBody)
	wait(entered, "the hanging provider was never called for the request in flight at shutdown")
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	wait(cancelled, "the request in flight was not cancelled at shutdown")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the request in flight at shutdown got no answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Fatalf("the request in flight at shutdown answered %d, want 503", resp.StatusCode)
	}
}
