package main

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMediaThroughTheBinary runs the built gateway with a stored provider at a local upstream: an image edit's
// multipart upload arrives upstream byte for byte (its boundary included), and speech comes back byte for byte
// with the provider's content type.
func TestMediaThroughTheBinary(t *testing.T) {
	speech := make([]byte, 256<<10)
	rand.Read(speech)
	var mu sync.Mutex
	var gotBody []byte
	var gotType, gotPath string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		gotBody, gotType, gotPath = body, r.Header.Get("Content-Type"), r.URL.Path
		mu.Unlock()
		if r.URL.Path == "/v1/audio/speech" {
			w.Header().Set("Content-Type", "audio/mpeg")
			w.Write(speech[:1000])
			w.(http.Flusher).Flush()
			w.Write(speech[1000:])
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"created":1,"data":[{"b64_json":"aGk="}]}`)
	}))
	defer up.Close()

	dir := t.TempDir()
	boot := writeFile(t, dir, "bootstrap.json", fmt.Sprintf(`{
  "api_keys": [{"key": "gw-e2e-media-1"}],
  "providers": [{"slug": "mock", "provider": "openai", "api_key": "sk-stored", "custom_host": %q}]
}`, up.URL+"/v1"))
	p := startGateway(t, nil, "--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--bootstrap", boot)
	if p.base == "" {
		t.Fatalf("gateway did not start: %v", p.err)
	}
	post := func(path, contentType string, body []byte) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("POST", p.base+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("x-gateway-api-key", "gw-e2e-media-1")
		req.Header.Set("x-gateway-virtual-key", "mock")
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}

	image := make([]byte, 512<<10)
	rand.Read(image)
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	mw.WriteField("model", "gpt-image-1")
	mw.WriteField("prompt", "add a hat")
	fw, _ := mw.CreateFormFile("image", "cat.png")
	fw.Write(image)
	mw.Close()
	resp, body := post("/v1/images/edits", mw.FormDataContentType(), form.Bytes())
	mu.Lock()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "b64_json") {
		t.Errorf("image edit: %d %s", resp.StatusCode, body)
	}
	if gotPath != "/v1/images/edits" || gotType != mw.FormDataContentType() || !bytes.Equal(gotBody, form.Bytes()) {
		t.Errorf("the upload changed on its way: %s %q, %d bytes of %d", gotPath, gotType, len(gotBody), form.Len())
	}
	mu.Unlock()

	resp, body = post("/v1/audio/speech", "application/json", []byte(`{"model":"tts-1","input":"hi","voice":"alloy"}`))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "audio/mpeg" || !bytes.Equal(body, speech) {
		t.Errorf("speech: %d %q, %d bytes of %d", resp.StatusCode, resp.Header.Get("Content-Type"), len(body), len(speech))
	}
	if resp.Header.Get("x-gateway-provider") != "openai" {
		t.Errorf("speech headers: %v", resp.Header)
	}
}
