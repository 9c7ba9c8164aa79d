package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestBatchSurvivesKillDashNine runs a 300-line immediate batch through the binary against a slow local
// upstream, kills the gateway with SIGKILL in the middle, starts it again over the same data folder, and
// checks that the batch completes with every line's result exactly once, the counts exact, and the lines
// finished before the kill not sent again (only those in flight at the kill may be).
func TestBatchSurvivesKillDashNine(t *testing.T) {
	const lines, concurrency = 300, 4
	var mu sync.Mutex
	calls := map[string]int{}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			User     string `json:"user"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		raw, _ := io.ReadAll(r.Body)
		json.Unmarshal(raw, &body)
		id := ""
		if len(body.Messages) > 0 {
			id = body.Messages[0].Content
		}
		mu.Lock()
		calls[id]++
		mu.Unlock()
		select {
		case <-time.After(15 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if body.User == "fail" {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"message":"refused by the upstream"}}`)
			return
		}
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}]}`, id)
	}))
	defer up.Close()

	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	boot := writeFile(t, dir, "bootstrap.json", fmt.Sprintf(`{"api_keys": [{"key": "gw-batch-key"}],
  "providers": [{"slug": "mock", "provider": "openai", "api_key": "sk-stored", "custom_host": %q}]}`, up.URL+"/v1"))
	args := []string{"--listen", "127.0.0.1:0", "--data", data, "--bootstrap", boot, "--batch-concurrency", fmt.Sprint(concurrency)}
	p := startGateway(t, nil, args...)
	if p.base == "" {
		t.Fatalf("gateway did not start: %v", p.err)
	}

	var input strings.Builder
	var ids []string
	failing := 0
	for i := range lines {
		id, user := fmt.Sprintf("line-%03d", i), ""
		if i%9 == 4 {
			user, failing = "fail", failing+1
		}
		ids = append(ids, id)
		fmt.Fprintf(&input, `{"custom_id":%q,"method":"POST","url":"/v1/chat/completions","body":{"model":"m","user":%q,"messages":[{"role":"user","content":%q}]}}`+"\n",
			id, user, id)
	}
	fileID := uploadBatchFile(t, p.base, "gw-batch-key", input.String())
	created := createBatch(t, p.base, fmt.Sprintf(`{"input_file_id":%q,"endpoint":"/v1/chat/completions","completion_window":"immediate"}`, fileID))
	if created["status"] != "validating" {
		t.Fatalf("created batch: %v", created)
	}
	id := created["id"].(string)

	// Kill it in the middle: once a fifth of the lines are done, well before the end.
	deadline := time.Now().Add(30 * time.Second)
	for {
		b := getBatch(t, p.base, id)
		counts := b["request_counts"].(map[string]any)
		if done := counts["completed"].(float64) + counts["failed"].(float64); done >= lines/5 {
			if b["status"] != "in_progress" || done >= lines-concurrency {
				t.Fatalf("the batch went too far before the kill: %v", b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch did not progress: %v", b)
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.stop(t, syscall.SIGKILL)
	mu.Lock()
	beforeKill := map[string]int{}
	for k, v := range calls {
		beforeKill[k] = v
	}
	mu.Unlock()

	p2 := startGateway(t, nil, args...)
	if p2.base == "" {
		t.Fatalf("restart after kill -9 failed: %v", p2.err)
	}
	var b map[string]any
	deadline = time.Now().Add(60 * time.Second)
	for {
		b = getBatch(t, p2.base, id)
		if b["status"] != "validating" && b["status"] != "in_progress" && b["status"] != "finalizing" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch did not finish after the restart: %v", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	counts := b["request_counts"].(map[string]any)
	if b["status"] != "completed" || counts["total"] != float64(lines) || counts["completed"] != float64(lines-failing) || counts["failed"] != float64(failing) {
		t.Fatalf("batch after the restart: %v", b)
	}
	seen := map[string]int{}
	for _, file := range []string{b["output_file_id"].(string), b["error_file_id"].(string)} {
		sc := bufio.NewScanner(bytes.NewReader(fileContent(t, p2.base, file)))
		for sc.Scan() {
			var res struct {
				CustomID string `json:"custom_id"`
				Response struct {
					StatusCode int `json:"status_code"`
				} `json:"response"`
			}
			if err := json.Unmarshal(sc.Bytes(), &res); err != nil {
				t.Fatalf("result line %s: %v", sc.Bytes(), err)
			}
			seen[res.CustomID]++
			want := 200
			if file == b["error_file_id"] {
				want = 400
			}
			if res.Response.StatusCode != want {
				t.Errorf("%s: status %d in file %s, want %d", res.CustomID, res.Response.StatusCode, file, want)
			}
		}
	}
	for _, cid := range ids {
		if seen[cid] != 1 {
			t.Errorf("custom_id %s has %d results, want exactly 1", cid, seen[cid])
		}
	}
	if len(seen) != lines {
		t.Errorf("the result files hold %d custom_ids, want %d", len(seen), lines)
	}
	// A line sent both before and after the kill was in flight at the kill: at most the concurrency of them.
	mu.Lock()
	again := 0
	for k, n := range calls {
		if beforeKill[k] > 0 && n > beforeKill[k] {
			again++
		}
	}
	mu.Unlock()
	if again > concurrency {
		t.Errorf("%d lines were sent again after the restart; only the %d in flight at the kill may be", again, concurrency)
	}
	p2.stop(t, syscall.SIGTERM)
}

// uploadBatchFile uploads content to /v1/files with purpose batch and returns the file's ID.
func uploadBatchFile(t *testing.T, base, key, content string) string {
	t.Helper()
	var form bytes.Buffer
	w := multipart.NewWriter(&form)
	w.WriteField("purpose", "batch")
	part, _ := w.CreateFormFile("file", "input.jsonl")
	io.WriteString(part, content)
	w.Close()
	req, _ := http.NewRequest("POST", base+"/v1/files", &form)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("x-gateway-api-key", key)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var f struct {
		ID string `json:"id"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || json.Unmarshal(raw, &f) != nil || f.ID == "" {
		t.Fatalf("upload: %d %s", resp.StatusCode, raw)
	}
	return f.ID
}

// createBatch makes a batch through the binary with the test's key and virtual key.
func createBatch(t *testing.T, base, body string) map[string]any {
	t.Helper()
	return batchCall(t, "POST", base+"/v1/batches", body)
}

// getBatch reads a batch, with the virtual key SPEC.md requires on every batch endpoint.
func getBatch(t *testing.T, base, id string) map[string]any {
	t.Helper()
	return batchCall(t, "GET", base+"/v1/batches/"+id, "")
}

func batchCall(t *testing.T, method, url, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("x-gateway-api-key", "gw-batch-key")
	req.Header.Set("x-gateway-virtual-key", "mock")
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%s %s: %d %v %v", method, url, resp.StatusCode, m, err)
	}
	return m
}

func fileContent(t *testing.T, base, id string) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/v1/files/"+id+"/content", nil)
	req.Header.Set("x-gateway-api-key", "gw-batch-key")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("file %s content: %d %s", id, resp.StatusCode, raw)
	}
	return raw
}
