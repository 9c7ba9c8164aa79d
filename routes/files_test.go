package routes

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmgw/gateway/control"
	gwruntime "github.com/llmgw/gateway/runtime"
	"github.com/llmgw/gateway/storage"
)

// newFileFixture is newFixture whose control plane has the file limit given (0: the default).
func newFileFixture(t *testing.T, opts Options, fileLimit int64) *fixture {
	t.Helper()
	f := newFixture(t, opts)
	opts.Logger = f.srv.log
	opts.Plane = control.New(f.store, f.srv.engine, control.Options{FileLimit: fileLimit, Logger: f.srv.log})
	f.srv = New(f.store, f.srv.engine, opts)
	return f
}

// formPart is one part of an upload form: a file part when filename is set (or file is true).
type formPart struct {
	name, filename, value string
	file                  bool
}

// uploadForm builds a multipart/form-data body of parts, in order.
func uploadForm(t *testing.T, parts ...formPart) (body []byte, contentType string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, p := range parts {
		var pw io.Writer
		var err error
		if p.file || p.filename != "" {
			pw, err = w.CreateFormFile(p.name, p.filename)
		} else {
			pw, err = w.CreateFormField(p.name)
		}
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(pw, p.value)
	}
	w.Close()
	return b.Bytes(), w.FormDataContentType()
}

// upload sends an upload form through the fiber app.
func (f *fixture) upload(t *testing.T, key string, parts ...formPart) answer {
	t.Helper()
	body, ct := uploadForm(t, parts...)
	return f.do(t, "POST", "/v1/files", string(body), HeaderAPIKey, key, "Content-Type", ct)
}

// checkNoFiles asserts that the workspace holds no file, and that no upload was left half written.
func (f *fixture) checkNoFiles(t *testing.T, ws string) {
	t.Helper()
	files, _, err := f.store.Files.List(ws, storage.FileList{})
	if err != nil || len(files) != 0 {
		t.Fatalf("files stored: %v %v", files, err)
	}
	if n, err := f.store.Files.SweepPending(); n != 0 || err != nil {
		t.Fatalf("%d uploads left pending (%v): an aborted upload was not dropped", n, err)
	}
}

func TestFileUploadErrors(t *testing.T) {
	f := newFileFixture(t, Options{}, 0)
	file := formPart{name: "file", filename: "in.jsonl", value: `{"a":1}`}
	purpose := formPart{name: "purpose", value: "batch"}
	tests := []struct {
		name        string
		contentType string // "": the form's
		parts       []formPart
		raw         string // a body of its own instead of the parts'
		status      int
		code        string
		param       any
		mention     string
	}{
		{"not multipart", "application/json", nil, `{"purpose":"batch"}`, 415, "unsupported_media_type", "content-type", "multipart/form-data"},
		{"no content type", "-", nil, `x`, 415, "unsupported_media_type", "content-type", "multipart/form-data"},
		{"no boundary", "multipart/form-data", nil, `x`, 415, "unsupported_media_type", "content-type", "boundary"},
		{"missing purpose", "", []formPart{file}, "", 400, "invalid_request", "purpose", "required"},
		{"empty purpose", "", []formPart{file, {name: "purpose"}}, "", 400, "invalid_request", "purpose", "required"},
		{"unknown purpose after the file", "", []formPart{file, {name: "purpose", value: "vision"}}, "", 400, "invalid_request", "purpose", `"vision"`},
		{"unknown purpose before the file", "", []formPart{{name: "purpose", value: "nope"}, file}, "", 400, "invalid_request", "purpose", `"nope"`},
		{"long purpose", "", []formPart{{name: "purpose", value: strings.Repeat("b", 2000)}, file}, "", 400, "invalid_request", "purpose", "longer"},
		{"missing file", "", []formPart{purpose}, "", 400, "invalid_request", "file", "required"},
		{"empty form", "", nil, "", 400, "invalid_request", "file", "required"},
		{"file without a filename", "", []formPart{purpose, {name: "file", value: "x", file: true}}, "", 400, "invalid_request", "file", "filename"},
		{"control characters in the filename", "", []formPart{purpose, {name: "file", filename: "a\tb", value: "x"}}, "", 400, "invalid_request", "file", "control"},
		{"long filename", "", []formPart{purpose, {name: "file", filename: strings.Repeat("n", 600), value: "x"}}, "", 400, "invalid_request", "file", "512"},
		{"file twice", "", []formPart{file, file, purpose}, "", 400, "invalid_request", "file", "more than once"},
		{"purpose twice", "", []formPart{purpose, file, purpose}, "", 400, "invalid_request", "purpose", "more than once"},
		{"unknown field", "", []formPart{purpose, file, {name: "expires_after[seconds]", value: "3600"}}, "", 400, "invalid_request", "expires_after[seconds]", "unknown form field"},
		{"unterminated form", "multipart/form-data; boundary=XX", nil, "--XX\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--XX\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nabc", 400, "invalid_request", nil, "malformed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body, ct := uploadForm(t, tc.parts...)
			if tc.raw != "" {
				body = []byte(tc.raw)
			}
			switch tc.contentType {
			case "":
			case "-":
				ct = ""
			default:
				ct = tc.contentType
			}
			headers := []string{HeaderAPIKey, f.plain}
			if ct != "" {
				headers = append(headers, "Content-Type", ct)
			}
			a := f.do(t, "POST", "/v1/files", string(body), headers...)
			checkError(t, a, tc.status, tc.code, tc.param)
			if msg := a.json(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, tc.mention) {
				t.Errorf("message %q does not mention %q", msg, tc.mention)
			}
			f.checkNoFiles(t, f.ws.ID)
		})
	}
}

// A file over the limit is refused with 413 naming the limit, whether the body declares its length (refused
// before it is read, or once the content passes the limit) or is chunked; nothing of it stays stored, and a
// file of exactly the limit is taken.
func TestFileUploadOverLimit(t *testing.T) {
	const limit = 64 << 10
	f := newFileFixture(t, Options{}, limit)
	base, _ := f.serve(t)
	tests := []struct {
		name    string
		size    int
		chunked bool
	}{
		{"declared length far over", 5 * limit, false},
		{"declared length one byte over", limit + 1, false},
		{"chunked", 5 * limit, true},
		{"chunked, one byte over", limit + 1, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := postUpload(t, base, f.plain, "purpose", "batch", "big.bin", bytes.Repeat([]byte("z"), tc.size), tc.chunked)
			checkError(t, a, 413, "request_too_large", nil)
			if msg := a.json(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, fmt.Sprint(limit)) {
				t.Errorf("message %q does not name the limit", msg)
			}
			f.checkNoFiles(t, f.ws.ID)
		})
	}
	a := postUpload(t, base, f.plain, "purpose", "batch", "full.bin", bytes.Repeat([]byte("z"), limit), true)
	if a.status != 200 || a.json(t)["bytes"] != float64(limit) {
		t.Fatalf("a file of exactly the limit: %d %s", a.status, a.body)
	}
}

// postUpload sends an upload over HTTP: the purpose part first when purposeFirst is "purpose", else after the
// file; chunked hides the length.
func postUpload(t *testing.T, base, key, purposeFirst, purpose, filename string, content []byte, chunked bool) answer {
	t.Helper()
	parts := []formPart{{name: "file", filename: filename, value: string(content)}}
	if purposeFirst == "purpose" {
		parts = slices.Insert(parts, 0, formPart{name: "purpose", value: purpose})
	} else {
		parts = append(parts, formPart{name: "purpose", value: purpose})
	}
	body, ct := uploadForm(t, parts...)
	var r io.Reader = bytes.NewReader(body)
	if chunked {
		r = io.MultiReader(r) // hides the length from net/http
	}
	req, _ := http.NewRequest("POST", base+"/v1/files", r)
	req.Header.Set("Content-Type", ct)
	req.Header.Set(HeaderAPIKey, key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return readAnswer(t, resp)
}

func (f *fixture) getJSON(t *testing.T, key, path string) answer {
	t.Helper()
	return f.do(t, "GET", path, "", HeaderAPIKey, key)
}

// A file of several chunks, random (so that it does not compress), comes back byte for byte through a real
// listener, with the parts of its form in either order; its metadata reads back as it was answered.
func TestFileRoundTrip(t *testing.T) {
	f := newFileFixture(t, Options{}, 0)
	base, _ := f.serve(t)
	content := make([]byte, 3<<20+12345)
	rand.Read(content)
	for _, order := range []string{"purpose", "file"} {
		t.Run(order+" first", func(t *testing.T) {
			a := postUpload(t, base, f.plain, order, "fine-tune", "train.jsonl", content, order == "file")
			if a.status != 200 {
				t.Fatalf("upload: %d %s", a.status, a.body)
			}
			created := a.json(t)
			id, _ := created["id"].(string)
			if !strings.HasPrefix(id, "file-") || created["object"] != "file" || created["bytes"] != float64(len(content)) ||
				created["filename"] != "train.jsonl" || created["purpose"] != "fine-tune" || len(created) != 6 {
				t.Fatalf("file object %s", a.body)
			}
			if _, ok := created["created_at"].(float64); !ok {
				t.Errorf("created_at is not a number: %s", a.body)
			}
			got := f.getJSON(t, f.plain, "/v1/files/"+id)
			if got.status != 200 || !bytes.Equal(got.body, a.body) {
				t.Fatalf("GET %s: %d %s, want %s", id, got.status, got.body, a.body)
			}
			req, _ := http.NewRequest("GET", base+"/v1/files/"+id+"/content", nil)
			req.Header.Set(HeaderAPIKey, f.admin) // any key of the workspace
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			c := readAnswer(t, resp)
			if c.status != 200 || !bytes.Equal(c.body, content) {
				t.Fatalf("content: %d, %d bytes, equal %v", c.status, len(c.body), bytes.Equal(c.body, content))
			}
			if ct, cl := c.header.Get("Content-Type"), c.header.Get("Content-Length"); ct != "application/octet-stream" || cl != fmt.Sprint(len(content)) {
				t.Errorf("content-type %q, content-length %q", ct, cl)
			}
		})
	}
	// An empty file is a file.
	a := postUpload(t, base, f.plain, "purpose", "user_data", "empty.txt", nil, false)
	if a.status != 200 || a.json(t)["bytes"] != float64(0) {
		t.Fatalf("empty file: %d %s", a.status, a.body)
	}
	c := f.getJSON(t, f.plain, "/v1/files/"+a.json(t)["id"].(string)+"/content")
	if c.status != 200 || len(c.body) != 0 {
		t.Fatalf("empty content: %d %q", c.status, c.body)
	}
}

type fileListAnswer struct {
	Object  string           `json:"object"`
	Data    []map[string]any `json:"data"`
	HasMore bool             `json:"has_more"`
	FirstID *string          `json:"first_id"`
	LastID  *string          `json:"last_id"`
}

func (f *fixture) listFiles(t *testing.T, key, query string) (ids []string, l fileListAnswer) {
	t.Helper()
	a := f.getJSON(t, key, "/v1/files"+query)
	if a.status != 200 {
		t.Fatalf("list %s: %d %s", query, a.status, a.body)
	}
	if err := json.Unmarshal(a.body, &l); err != nil || l.Object != "list" || l.Data == nil {
		t.Fatalf("list %s: %v %s", query, err, a.body)
	}
	for _, d := range l.Data {
		ids = append(ids, d["id"].(string))
	}
	if len(ids) > 0 && (l.FirstID == nil || *l.FirstID != ids[0] || l.LastID == nil || *l.LastID != ids[len(ids)-1]) {
		t.Errorf("first_id, last_id %v %v for %v", l.FirstID, l.LastID, ids)
	}
	if len(ids) == 0 && (l.FirstID != nil || l.LastID != nil) {
		t.Errorf("first_id, last_id of an empty page: %v %v", l.FirstID, l.LastID)
	}
	return ids, l
}

func TestFileList(t *testing.T) {
	f := newFileFixture(t, Options{}, 0)
	purposes := []string{"batch", "fine-tune", "batch", "user_data", "batch"}
	var batch []string
	for i, p := range purposes {
		a := f.upload(t, f.plain, formPart{name: "purpose", value: p}, formPart{name: "file", filename: fmt.Sprintf("f%d", i), value: "x"})
		if a.status != 200 {
			t.Fatalf("upload: %d %s", a.status, a.body)
		}
		if p == "batch" {
			batch = append(batch, a.json(t)["id"].(string))
		}
	}
	desc, l := f.listFiles(t, f.plain, "")
	if len(desc) != len(purposes) || l.HasMore || !sort.IsSorted(sort.Reverse(sort.StringSlice(desc))) {
		t.Fatalf("default list %v (has_more %v): want every file, newest first", desc, l.HasMore)
	}
	asc, _ := f.listFiles(t, f.plain, "?order=asc")
	if !slices.Equal(asc, reversed(desc)) {
		t.Fatalf("asc %v, desc %v", asc, desc)
	}
	if got, _ := f.listFiles(t, f.plain, "?order=desc"); !slices.Equal(got, desc) {
		t.Fatalf("order=desc %v", got)
	}

	// Pages of two, the way the SDKs walk them: after = the last id of the page.
	var walked []string
	after := ""
	for pages := 0; ; pages++ {
		ids, l := f.listFiles(t, f.plain, "?limit=2"+after)
		walked = append(walked, ids...)
		if !l.HasMore {
			if len(ids) != 1 || pages != 2 {
				t.Fatalf("last page %v after %d pages", ids, pages)
			}
			break
		}
		if len(ids) != 2 {
			t.Fatalf("page %v has_more with fewer than limit", ids)
		}
		after = "&after=" + ids[1]
	}
	if !slices.Equal(walked, desc) {
		t.Fatalf("paged %v, want %v", walked, desc)
	}

	slices.Sort(batch)
	if got, _ := f.listFiles(t, f.plain, "?purpose=batch&order=asc"); !slices.Equal(got, batch) {
		t.Fatalf("purpose=batch %v, want %v", got, batch)
	}
	if got, l := f.listFiles(t, f.plain, "?purpose=batch&order=asc&limit=2&after="+batch[0]); !slices.Equal(got, batch[1:]) || l.HasMore {
		t.Fatalf("purpose=batch after the first %v (has_more %v)", got, l.HasMore)
	}
	if got, _ := f.listFiles(t, f.plain, "?purpose=assistants"); len(got) != 0 {
		t.Fatalf("purpose=assistants %v", got)
	}
	if got, _ := f.listFiles(t, f.plain, "?limit=10000"); len(got) != len(purposes) {
		t.Fatalf("limit=10000 %v", got)
	}

	for _, tc := range []struct{ query, param string }{
		{"?limit=0", "limit"}, {"?limit=10001", "limit"}, {"?limit=ten", "limit"}, {"?limit=-1", "limit"},
		{"?order=newest", "order"}, {"?purpose=vision", "purpose"}, {"?after=not%20an%20id", "after"},
	} {
		checkError(t, f.getJSON(t, f.plain, "/v1/files"+tc.query), 400, "invalid_request", tc.param)
	}
}

func reversed(s []string) []string {
	r := slices.Clone(s)
	slices.Reverse(r)
	return r
}

// Another workspace's files are not found by any route, and never listed.
func TestFilesOfAnotherWorkspace(t *testing.T) {
	f := newFileFixture(t, Options{}, 0)
	a := f.upload(t, f.plain, formPart{name: "purpose", value: "batch"}, formPart{name: "file", filename: "mine", value: "secret"})
	id := a.json(t)["id"].(string)
	theirs := f.upload(t, f.otherKey, formPart{name: "purpose", value: "batch"}, formPart{name: "file", filename: "theirs", value: "x"})
	if theirs.status != 200 {
		t.Fatalf("upload in the other workspace: %d %s", theirs.status, theirs.body)
	}
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/files/" + id}, {"GET", "/v1/files/" + id + "/content"}, {"DELETE", "/v1/files/" + id},
	} {
		checkError(t, f.do(t, r.method, r.path, "", HeaderAPIKey, f.otherKey), 404, "not_found", nil)
	}
	if ids, _ := f.listFiles(t, f.otherKey, ""); !slices.Equal(ids, []string{theirs.json(t)["id"].(string)}) {
		t.Fatalf("the other workspace lists %v", ids)
	}
	if ids, _ := f.listFiles(t, f.plain, ""); !slices.Equal(ids, []string{id}) {
		t.Fatalf("the owner lists %v", ids)
	}
	if c := f.getJSON(t, f.plain, "/v1/files/"+id+"/content"); c.status != 200 || string(c.body) != "secret" {
		t.Fatalf("the owner's content after the other workspace's attempts: %d %s", c.status, c.body)
	}
	checkError(t, f.do(t, "GET", "/v1/files/"+id, ""), 401, "missing_api_key", HeaderAPIKey)
}

func TestFileDelete(t *testing.T) {
	f := newFileFixture(t, Options{}, 0)
	a := f.upload(t, f.plain, formPart{name: "purpose", value: "batch"}, formPart{name: "file", filename: "a", value: strings.Repeat("q", 300<<10)})
	id := a.json(t)["id"].(string)
	d := f.do(t, "DELETE", "/v1/files/"+id, "", HeaderAPIKey, f.plain)
	if d.status != 200 {
		t.Fatalf("delete: %d %s", d.status, d.body)
	}
	var got map[string]any
	json.Unmarshal(d.body, &got)
	if len(got) != 3 || got["id"] != id || got["object"] != "file" || got["deleted"] != true {
		t.Fatalf("delete answer %s", d.body)
	}
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/files/" + id}, {"GET", "/v1/files/" + id + "/content"}, {"DELETE", "/v1/files/" + id},
	} {
		checkError(t, f.do(t, r.method, r.path, "", HeaderAPIKey, f.plain), 404, "not_found", nil)
	}
	if ids, _ := f.listFiles(t, f.plain, ""); len(ids) != 0 {
		t.Fatalf("listed after delete: %v", ids)
	}
	checkError(t, f.do(t, "GET", "/v1/files/file-nope", "", HeaderAPIKey, f.plain), 404, "not_found", nil)
}

// An upload far larger than the memory it may use: 64 MiB through a real TCP connection raises the heap by a
// small fraction of that, both in use and allocated in all; so does reading it back.
func TestFileUploadMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB upload")
	}
	if raceDetector() {
		t.Skip("the race detector makes sync.Pool drop what it is given: allocations are not the program's")
	}
	const size = 64 << 20
	f := newDiskFixture(t)
	base, _ := f.serve(t)
	addr := strings.TrimPrefix(base, "http://")

	// The client writes the form by hand from one small buffer, so that its own allocations stay out of the
	// figures.
	const boundary = "memtestboundary"
	head := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n" +
		"--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.bin\"\r\n" +
		"Content-Type: application/octet-stream\r\n\r\n"
	tail := "\r\n--" + boundary + "--\r\n"
	block := make([]byte, 64<<10)
	rand.Read(block)

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)

	// A first upload pays what is paid once (the store's codecs, its log's buffers); the big one is measured.
	if a := postUpload(t, base, f.plain, "purpose", "batch", "warm", block, false); a.status != 200 {
		t.Fatalf("warm-up upload: %d %s", a.status, a.body)
	}
	before := memStats()
	fmt.Fprintf(conn, "POST /v1/files HTTP/1.1\r\nHost: gw\r\n%s: %s\r\nContent-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n\r\n%s",
		HeaderAPIKey, f.plain, boundary, len(head)+size+len(tail), head)
	for sent := 0; sent < size; sent += len(block) {
		if _, err := conn.Write(block); err != nil {
			t.Fatal(err)
		}
	}
	io.WriteString(conn, tail)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := readAnswer(t, resp)
	after := memStats()
	if a.status != 200 || a.json(t)["bytes"] != float64(size) {
		t.Fatalf("upload: %d %s", a.status, a.body)
	}
	checkMemory(t, "upload", before, after, size)

	// Reading it back streams it out chunk by chunk.
	id := a.json(t)["id"].(string)
	before = memStats()
	fmt.Fprintf(conn, "GET /v1/files/%s/content HTTP/1.1\r\nHost: gw\r\n%s: %s\r\n\r\n", id, HeaderAPIKey, f.plain)
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.CopyBuffer(io.Discard, resp.Body, block)
	resp.Body.Close()
	after = memStats()
	if err != nil || n != size || resp.StatusCode != 200 {
		t.Fatalf("content: %d, %d bytes, %v", resp.StatusCode, n, err)
	}
	checkMemory(t, "download", before, after, size)
}

// newDiskFixture is a server over a store on disk, with one workspace and its key in f.plain: an in-memory
// store keeps its files in the heap, which the memory test measures.
func newDiskFixture(t *testing.T) *fixture {
	t.Helper()
	st, err := storage.Open(t.TempDir(), storage.Options{MasterKey: bytes.Repeat([]byte{1}, storage.MasterKeySize)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{store: st, ws: &storage.Workspace{ID: uuid.NewString(), Slug: "default", OrganisationID: uuid.NewString()}}
	if _, err := st.Workspaces.Put(f.ws); err != nil {
		t.Fatal(err)
	}
	if f.plain, _, err = st.APIKeys.Create(f.ws.ID, "test", false); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	f.srv = New(st, gwruntime.New(st, gwruntime.Options{Logger: logger}), Options{Logger: logger})
	return f
}

// raceDetector tells whether the test binary was built with -race.
func raceDetector() bool {
	info, ok := debug.ReadBuildInfo()
	return ok && slices.ContainsFunc(info.Settings, func(s debug.BuildSetting) bool { return s.Key == "-race" && s.Value == "true" })
}

type heapFigures struct{ inUse, total uint64 }

func memStats() heapFigures {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return heapFigures{inUse: m.HeapInuse, total: m.TotalAlloc}
}

// checkMemory fails when the heap grew by more than a quarter of size (in use, or allocated in all) between
// before and after. A 64 MiB upload allocates about 6 MiB, most of it pebble's (its log's blocks, flushes); a
// store or server that held the file, or a buffer per chunk, passes the bound.
func checkMemory(t *testing.T, what string, before, after heapFigures, size int64) {
	t.Helper()
	bound := uint64(size / 4)
	allocated := after.total - before.total
	grown := int64(after.inUse) - int64(before.inUse)
	t.Logf("%s of %d MiB: %.1f MiB allocated, heap in use %+.1f MiB", what, size>>20, float64(allocated)/(1<<20), float64(grown)/(1<<20))
	if allocated > bound || grown > int64(bound) {
		t.Errorf("%s of %d MiB allocated %d bytes, heap in use grew %d bytes: want under %d each", what, size>>20, allocated, grown, bound)
	}
}

// The official SDK uploads, reads, downloads, pages through and deletes files unchanged.
func TestOpenAISDKFiles(t *testing.T) {
	f := newFileFixture(t, Options{}, 0)
	base, _ := f.serve(t)
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("sk-unused"), option.WithMaxRetries(0),
		option.WithHeader(HeaderAPIKey, f.plain))
	ctx := context.Background()
	content := make([]byte, 700<<10)
	rand.Read(content)

	var ids []string
	for i := range 3 {
		obj, err := client.Files.New(ctx, openai.FileNewParams{
			File:    openai.File(bytes.NewReader(content[i:]), fmt.Sprintf("in%d.jsonl", i), "application/jsonl"),
			Purpose: openai.FilePurposeBatch,
		})
		if err != nil {
			t.Fatal(err)
		}
		if obj.Bytes != int64(len(content)-i) || obj.Filename != fmt.Sprintf("in%d.jsonl", i) || obj.Purpose != "batch" ||
			!obj.JSON.CreatedAt.Valid() {
			t.Fatalf("created %+v", obj)
		}
		ids = append(ids, obj.ID)
	}

	got, err := client.Files.Get(ctx, ids[1])
	if err != nil || got.ID != ids[1] || got.Bytes != int64(len(content)-1) {
		t.Fatalf("get: %+v %v", got, err)
	}
	resp, err := client.Files.Content(ctx, ids[2])
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !bytes.Equal(body, content[2:]) {
		t.Fatalf("content: %d bytes, %v", len(body), err)
	}

	// The auto-pager walks pages of one through has_more and after.
	var listed []string
	pager := client.Files.ListAutoPaging(ctx, openai.FileListParams{Limit: openai.Int(1), Order: openai.FileListParamsOrderAsc})
	for pager.Next() {
		listed = append(listed, pager.Current().ID)
	}
	slices.Sort(ids) // IDs sort by creation time, to the millisecond
	if err := pager.Err(); err != nil || !slices.Equal(listed, ids) {
		t.Fatalf("auto-paged %v (%v), want %v", listed, err, ids)
	}

	deleted, err := client.Files.Delete(ctx, ids[0])
	if err != nil || !deleted.Deleted || deleted.ID != ids[0] {
		t.Fatalf("delete: %+v %v", deleted, err)
	}
	_, err = client.Files.Get(ctx, ids[0])
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("get after delete: %v", err)
	}
	_, err = client.Files.New(ctx, openai.FileNewParams{File: openai.File(strings.NewReader("x"), "a", "text/plain"), Purpose: "nonsense"})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "purpose" {
		t.Fatalf("bad purpose: %v", err)
	}
}
