package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFilesThroughTheBinary runs the built gateway with --file-limit and a small --body-limit: a file larger
// than the body limit round-trips byte for byte, one over the file limit is a 413 that names it, and an upload
// cut short by kill -9 is swept at the next start while the files acknowledged before it stay whole.
func TestFilesThroughTheBinary(t *testing.T) {
	const fileLimit = 40 << 20
	const key = "gw-files-key-1"
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	boot := writeFile(t, dir, "bootstrap.json", `{"api_keys": [{"key": "`+key+`", "admin": false}]}`)
	args := []string{"--listen", "127.0.0.1:0", "--data", data, "--bootstrap", boot, "--body-limit", "1MiB",
		"--file-limit", fmt.Sprint(fileLimit)}
	p := startGateway(t, nil, args...)
	if p.base == "" {
		t.Fatalf("gateway did not start: %v", p.err)
	}

	content := make([]byte, 3<<20+777)
	rand.Read(content)
	status, body := uploadStream(t, p.base, key, "data.jsonl", bytes.NewReader(content))
	if status != 200 || !strings.Contains(body, `"bytes":3146505`) {
		t.Fatalf("upload of more than the body limit: %d %s", status, body)
	}
	id := fileID(t, body)
	checkContent(t, p.base, key, id, content)

	status, body = uploadStream(t, p.base, key, "big.bin", io.LimitReader(zeros{}, fileLimit+1))
	if status != 413 || !strings.Contains(body, `"code":"request_too_large"`) || !strings.Contains(body, fmt.Sprint(fileLimit)) {
		t.Fatalf("upload over the file limit: %d %s", status, body)
	}

	// An upload the gateway is part way through when it is killed: its declared length is never reached.
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := "--b\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n" +
		"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"cut.bin\"\r\n\r\n"
	fmt.Fprintf(conn, "POST /v1/files HTTP/1.1\r\nHost: gw\r\nx-gateway-api-key: %s\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: %d\r\n\r\n%s",
		key, len(head)+38<<20, head)
	block := content[:64<<10]
	// More than socket buffers hold: once written, the gateway has read most of it into the store.
	for sent := 0; sent < 32<<20; sent += len(block) {
		if _, err := conn.Write(block); err != nil {
			t.Fatal(err)
		}
	}
	// A committed upload syncs the store's log, and with it everything written before (the cut upload's start).
	status, body = uploadStream(t, p.base, key, "small.txt", strings.NewReader("small"))
	if status != 200 {
		t.Fatalf("small upload: %d %s", status, body)
	}
	small := fileID(t, body)
	p.stop(t, syscall.SIGKILL)

	p2 := startGateway(t, nil, args...)
	if p2.base == "" {
		t.Fatalf("restart after kill -9 failed: %v", p2.err)
	}
	if !strings.Contains(p2.stderr.String(), `msg="dropped files a crash left half written" files=1`) {
		t.Errorf("the cut upload was not swept at start:\n%s", p2.stderr)
	}
	status, list, _ := call(t, "GET", p2.base+"/v1/files?order=asc", key, "")
	var ids []any
	for _, f := range list["data"].([]any) {
		ids = append(ids, f.(map[string]any)["id"])
	}
	if status != 200 || len(ids) != 2 || ids[0] != id || ids[1] != small {
		t.Fatalf("files after kill -9: %d %v, want %s and %s", status, ids, id, small)
	}
	checkContent(t, p2.base, key, id, content)
	p2.stop(t, syscall.SIGTERM)
}

// uploadStream uploads content as purpose batch with the form written as it is sent (chunked, no length).
func uploadStream(t *testing.T, base, key, filename string, content io.Reader) (int, string) {
	t.Helper()
	pr, pw := io.Pipe()
	form := multipart.NewWriter(pw)
	go func() {
		err := form.WriteField("purpose", "batch")
		var part io.Writer
		if err == nil {
			part, err = form.CreateFormFile("file", filename)
		}
		if err == nil {
			_, err = io.Copy(part, content)
		}
		if err == nil {
			err = form.Close()
		}
		pw.CloseWithError(err)
	}()
	req, _ := http.NewRequest("POST", base+"/v1/files", pr)
	req.Header.Set("Content-Type", form.FormDataContentType())
	req.Header.Set("x-gateway-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func fileID(t *testing.T, body string) string {
	t.Helper()
	_, rest, ok := strings.Cut(body, `"id":"`)
	id, _, ok2 := strings.Cut(rest, `"`)
	if !ok || !ok2 || !strings.HasPrefix(id, "file-") {
		t.Fatalf("no file id in %s", body)
	}
	return id
}

// checkContent downloads a file and compares it with want, byte for byte.
func checkContent(t *testing.T, base, key, id string, want []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/v1/files/"+id+"/content", nil)
	req.Header.Set("x-gateway-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(bufio.NewReader(resp.Body))
	if err != nil || resp.StatusCode != 200 || !bytes.Equal(got, want) {
		t.Fatalf("content of %s: %d, %d bytes (want %d), equal %v, %v", id, resp.StatusCode, len(got), len(want), bytes.Equal(got, want), err)
	}
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
