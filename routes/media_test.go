package routes

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	_ "github.com/llmgw/gateway/runtime/providers/anthropic"
	_ "github.com/llmgw/gateway/runtime/providers/azure"
)

// mediaHeaders are the headers of a media call to the local upstream as an openai target.
func mediaHeaders(f *fixture, up *upstream, contentType string, more ...string) []string {
	return append([]string{HeaderAPIKey, f.plain, "Content-Type", contentType, HeaderProvider, "openai",
		"Authorization", "Bearer sk-caller", HeaderCustomHost, up.URL + "/v1"}, more...)
}

func TestMediaJSONEndpointsGoToOpenAI(t *testing.T) {
	tests := []struct {
		name, path, body, answer string
	}{
		{"images", "/v1/images/generations", `{"model":"gpt-image-1","prompt":"a cat","n":1}`, `{"created":1,"data":[{"b64_json":"aGk="}]}`},
		{"moderations", "/v1/moderations", `{"model":"omni-moderation-latest","input":"hello"}`, `{"id":"modr-1","results":[{"flagged":false}]}`},
		{"rerank", "/v1/rerank", `{"model":"rerank-1","query":"q","documents":["a","b"],"top_n":1}`, `{"results":[{"index":1,"relevance_score":0.9}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			up := newUpstream(t, status(200, tc.answer))
			a := f.do(t, "POST", tc.path, tc.body, mediaHeaders(f, up, "application/json")...)
			if a.status != 200 || string(a.body) != tc.answer {
				t.Fatalf("answer %d %s", a.status, a.body)
			}
			r, body := up.lastRequest()
			if r.URL.Path != tc.path || body != tc.body || r.Header.Get("Authorization") != "Bearer sk-caller" {
				t.Errorf("upstream got %s %q auth %q", r.URL.Path, body, r.Header.Get("Authorization"))
			}
			if a.header.Get(HeaderAnswerProvider) != "openai" || a.header.Get(HeaderCacheStatus) != "DISABLED" {
				t.Errorf("gateway headers %v", a.header)
			}
		})
	}
}

// multipartBody is a form with the given text fields and one file of random bytes (CR LF and dashes included).
func multipartBody(t *testing.T, fields map[string]string, fileField string, file []byte) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	fw, err := mw.CreateFormFile(fileField, "upload.bin")
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(file)
	mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

func randomFile(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	copy(b[100:], "\r\n--not-the-boundary\r\n")
	return b
}

func TestMediaUploadsArriveUnchanged(t *testing.T) {
	tests := []struct {
		name, path, fileField string
		fields                map[string]string
		answerType, answer    string
	}{
		{"image edit", "/v1/images/edits", "image", map[string]string{"model": "gpt-image-1", "prompt": "add a hat"},
			"application/json", `{"created":1,"data":[{"url":"https://x"}]}`},
		{"transcription as text", "/v1/audio/transcriptions", "file", map[string]string{"model": "whisper-1", "response_format": "text"},
			"text/plain; charset=utf-8", "hello world\n"},
		{"translation as srt", "/v1/audio/translations", "file", map[string]string{"model": "whisper-1", "response_format": "srt"},
			"application/x-subrip", "1\n00:00:00,000 --> 00:00:01,000\nhello\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			up := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ int64) {
				w.Header().Set("Content-Type", tc.answerType)
				io.WriteString(w, tc.answer)
			})
			file := randomFile(300 << 10)
			ct, body := multipartBody(t, tc.fields, tc.fileField, file)
			a := f.do(t, "POST", tc.path, string(body), mediaHeaders(f, up, ct)...)
			if a.status != 200 || string(a.body) != tc.answer || a.header.Get("Content-Type") != tc.answerType {
				t.Fatalf("answer %d %q %s", a.status, a.header.Get("Content-Type"), a.body)
			}
			r, got := up.lastRequest()
			if r.URL.Path != tc.path {
				t.Errorf("upstream path %s", r.URL.Path)
			}
			if r.Header.Get("Content-Type") != ct {
				t.Errorf("upstream content-type %q, want %q (the caller's boundary)", r.Header.Get("Content-Type"), ct)
			}
			if got != string(body) {
				t.Errorf("the upload changed on its way: %d bytes upstream, %d sent", len(got), len(body))
			}
		})
	}
}

func TestMediaUploadErrors(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, nil)
	var many strings.Builder
	for i := range maxFormParts + 1 {
		fmt.Fprintf(&many, "--b\r\nContent-Disposition: form-data; name=\"f%d\"\r\n\r\nx\r\n", i)
	}
	many.WriteString("--b--\r\n")
	long := "--b\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\n" + strings.Repeat("x", maxFormField+1) + "\r\n--b--\r\n"
	twice := "--b\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\na\r\n--b\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nb\r\n--b--\r\n"
	stream := "--b\r\nContent-Disposition: form-data; name=\"stream\"\r\n\r\ntrue\r\n--b--\r\n"
	const form = "multipart/form-data; boundary=b"
	tests := []struct {
		name, contentType, body string
		status                  int
		code                    string
		param                   any
	}{
		{"json to an upload", "application/json", `{"model":"whisper-1"}`, 415, "unsupported_media_type", "content-type"},
		{"no boundary", "multipart/form-data", "x", 400, "invalid_request", "content-type"},
		{"too many parts", form, many.String(), 400, "invalid_request", "body"},
		{"field too long", form, long, 400, "invalid_request", "prompt"},
		{"model twice", form, twice, 400, "invalid_request", "model"},
		{"stream", form, stream, 400, "invalid_request", "stream"},
		{"malformed", form, "--b\r\nno headers end", 400, "invalid_request", "body"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := f.do(t, "POST", "/v1/audio/transcriptions", tc.body, mediaHeaders(f, up, tc.contentType)...)
			checkError(t, a, tc.status, tc.code, tc.param)
		})
	}
	a := f.do(t, "POST", "/v1/images/generations", `{"prompt":"x","stream":true}`, mediaHeaders(f, up, "application/json")...)
	checkError(t, a, 400, "invalid_request", "stream")
	if up.calls.Load() != 0 {
		t.Errorf("the upstream was called %d times", up.calls.Load())
	}
}

// TestAudioSpeechIsStreamedThrough checks that speech arrives byte for byte with the provider's content type,
// and that its first bytes reach the caller while the provider is still sending.
func TestAudioSpeechIsStreamedThrough(t *testing.T) {
	f := newFixture(t, Options{})
	first, rest := randomFile(200<<10), randomFile(100<<10)
	firstRead := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ int64) {
		w.Header().Set("Content-Type", "audio/mpeg")
		w.Write(first)
		w.(http.Flusher).Flush()
		select { // the rest only once the caller has the first part
		case <-firstRead:
		case <-time.After(10 * time.Second):
			return
		}
		w.Write(rest)
	})
	base, _ := f.serve(t)
	req, _ := http.NewRequest("POST", base+"/v1/audio/speech", strings.NewReader(`{"model":"tts-1","input":"hi","voice":"alloy"}`))
	h := mediaHeaders(f, up, "application/json")
	for i := 0; i+1 < len(h); i += 2 {
		req.Header.Set(h[i], h[i+1])
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "audio/mpeg" || resp.Header.Get(HeaderAnswerProvider) != "openai" {
		t.Fatalf("answer %d %v", resp.StatusCode, resp.Header)
	}
	got := make([]byte, len(first))
	if _, err := io.ReadFull(resp.Body, got); err != nil {
		t.Fatalf("the first part did not arrive before the provider finished: %v", err)
	}
	close(firstRead)
	tail, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, first) || !bytes.Equal(tail, rest) {
		t.Errorf("the audio changed on its way: %d+%d bytes, want %d+%d", len(got), len(tail), len(first), len(rest))
	}
	r, _ := up.lastRequest()
	if r.URL.Path != "/v1/audio/speech" || r.Header.Get("Accept") != "*/*" {
		t.Errorf("upstream got %s accept %q", r.URL.Path, r.Header.Get("Accept"))
	}
}

func TestMediaProviderWithoutTheEndpoint(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, status(200, `{"created":1,"data":[]}`))
	body := `{"model":"m","prompt":"a cat"}`
	for _, tc := range []struct{ provider, path, want string }{
		{"anthropic", "/v1/images/generations", "anthropic does not serve /v1/images/generations"},
		{"groq", "/v1/images/generations", "groq does not serve /v1/images/generations"},
		{"deepseek", "/v1/moderations", "deepseek does not serve /v1/moderations"},
	} {
		a := f.do(t, "POST", tc.path, body, HeaderAPIKey, f.plain, "Content-Type", "application/json",
			HeaderProvider, tc.provider, "Authorization", "Bearer k", HeaderCustomHost, up.URL+"/v1")
		checkError(t, a, 400, "invalid_request", nil)
		if !strings.Contains(string(a.body), tc.want) {
			t.Errorf("%s: message does not name them: %s", tc.provider, a.body)
		}
	}
	if up.calls.Load() != 0 {
		t.Fatalf("the upstream was called")
	}
	// In a fallback, the gateway's own 400 moves on to the next target, as any failed target does.
	config := fmt.Sprintf(`{"strategy":{"mode":"fallback"},"targets":[{"provider":"anthropic","api_key":"k"},`+
		`{"provider":"openai","api_key":"k","custom_host":%q}]}`, up.URL+"/v1")
	a := f.do(t, "POST", "/v1/images/generations", body, HeaderAPIKey, f.plain, "Content-Type", "application/json", HeaderConfig, config)
	if a.status != 200 || a.header.Get(HeaderOptionIndex) != "config.targets[1]" {
		t.Fatalf("fallback past a provider without the endpoint: %d %s %s", a.status, a.header.Get(HeaderOptionIndex), a.body)
	}
}

func TestMediaOnAzureDeployments(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		if strings.HasSuffix(r.URL.Path, "/audio/speech") {
			w.Header().Set("Content-Type", "audio/wav")
			io.WriteString(w, "RIFF....WAVE")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"text":"hi"}`)
	})
	config := fmt.Sprintf(`{"provider":"azure-openai","api_key":"az-key","custom_host":%q,`+
		`"deployments":[{"deployment_id":"dalle-dep","alias":"dall-e-3","api_version":"2024-10-21"},`+
		`{"deployment_id":"whisper-dep","alias":"whisper","api_version":"2024-10-21"},`+
		`{"deployment_id":"tts-dep","alias":"tts","api_version":"2025-03-01-preview"}]}`, up.URL)
	h := func(ct string) []string {
		return []string{HeaderAPIKey, f.plain, "Content-Type", ct, HeaderConfig, config}
	}
	a := f.do(t, "POST", "/v1/images/generations", `{"model":"dall-e-3","prompt":"x"}`, h("application/json")...)
	r, _ := up.lastRequest()
	if r == nil {
		t.Fatalf("images on azure: %d %s", a.status, a.body)
	}
	if a.status != 200 || r.URL.Path != "/openai/deployments/dalle-dep/images/generations" || r.URL.Query().Get("api-version") != "2024-10-21" ||
		r.Header.Get("Api-Key") != "az-key" {
		t.Errorf("images: %d %s?%s", a.status, r.URL.Path, r.URL.RawQuery)
	}
	ct, body := multipartBody(t, map[string]string{"model": "whisper"}, "file", randomFile(1000))
	a = f.do(t, "POST", "/v1/audio/transcriptions", string(body), h(ct)...)
	r, got := up.lastRequest()
	if a.status != 200 || r.URL.Path != "/openai/deployments/whisper-dep/audio/transcriptions" || got != string(body) {
		t.Errorf("transcription: %d %s (the form's model picks the deployment)", a.status, r.URL.Path)
	}
	a = f.do(t, "POST", "/v1/audio/speech", `{"model":"tts","input":"hi","voice":"alloy"}`, h("application/json")...)
	r, _ = up.lastRequest()
	if a.status != 200 || string(a.body) != "RIFF....WAVE" || a.header.Get("Content-Type") != "audio/wav" ||
		r.URL.Path != "/openai/deployments/tts-dep/audio/speech" || r.URL.Query().Get("api-version") != "2025-03-01-preview" {
		t.Errorf("speech: %d %q %s %s", a.status, a.body, a.header.Get("Content-Type"), r.URL)
	}
	a = f.do(t, "POST", "/v1/moderations", `{"input":"x"}`, h("application/json")...)
	checkError(t, a, 400, "invalid_request", nil)
	if !strings.Contains(string(a.body), "azure-openai does not serve /v1/moderations") {
		t.Errorf("moderations on azure: %s", a.body)
	}
}

// Input checks see a rerank's query and an image edit's prompt field; an audio upload has no text for them.
func TestMediaInputChecks(t *testing.T) {
	f := newFixture(t, Options{})
	up := newUpstream(t, status(200, `{"results":[]}`))
	config := fmt.Sprintf(`{"provider":"openai","api_key":"k","custom_host":%q,`+
		`"input_guardrails":[{"default.contains":{"operator":"none","words":["secret"]},"deny":true}]}`, up.URL+"/v1")
	h := func(ct string) []string {
		return []string{HeaderAPIKey, f.plain, "Content-Type", ct, HeaderConfig, config}
	}
	a := f.do(t, "POST", "/v1/rerank", `{"model":"r","query":"the secret","documents":["a"]}`, h("application/json")...)
	if a.status != 446 {
		t.Errorf("rerank query with the word: %d %s", a.status, a.body)
	}
	ct, body := multipartBody(t, map[string]string{"model": "gpt-image-1", "prompt": "a secret cat"}, "image", randomFile(100))
	if a = f.do(t, "POST", "/v1/images/edits", string(body), h(ct)...); a.status != 446 {
		t.Errorf("image edit prompt with the word: %d %s", a.status, a.body)
	}
	ct, body = multipartBody(t, map[string]string{"model": "whisper-1"}, "file", []byte("secret"))
	if a = f.do(t, "POST", "/v1/audio/transcriptions", string(body), h(ct)...); a.status != 200 {
		t.Errorf("audio upload: %d %s", a.status, a.body)
	}
	if a = f.do(t, "POST", "/v1/rerank", `{"model":"r","query":"fine","documents":["a"]}`, h("application/json")...); a.status != 200 {
		t.Errorf("rerank without the word: %d %s", a.status, a.body)
	}
}
