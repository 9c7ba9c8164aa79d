package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	pathpkg "path"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, path string, headers ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w.Result()
}

func checkSecurityHeaders(t *testing.T, path string, resp *http.Response) {
	t.Helper()
	want := map[string]string{
		"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
			"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
		"X-Content-Type-Options": "nosniff",
		"Referrer-Policy":        "no-referrer",
	}
	for name, v := range want {
		if got := resp.Header.Get(name); got != v {
			t.Errorf("%s: %s = %q, want %q", path, name, got, v)
		}
	}
}

func TestIndex(t *testing.T) {
	h := Handler("/console")
	index, _ := web.ReadFile("web/index.html")
	for _, path := range []string{"/console", "/console/", "/console/index.html", "/console/?x=1"} {
		resp := get(t, h, "GET", path)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(body) != string(index) {
			t.Fatalf("GET %s = %d, %d bytes; want index.html's %d", path, resp.StatusCode, len(body), len(index))
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q", path, ct)
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "no-cache" {
			t.Errorf("GET %s: Cache-Control %q, want no-cache (file names are not content-hashed)", path, cc)
		}
		checkSecurityHeaders(t, path, resp)
	}
}

// TestEveryFile: every embedded file is served, with the Content-Type of its kind (nosniff refuses a script
// of another type), its ETag, and 304 when the browser has it.
func TestEveryFile(t *testing.T) {
	h := Handler("/console/") // a trailing slash is the same prefix
	want := map[string]string{".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
	if len(files) == 0 {
		t.Fatal("no embedded files")
	}
	for name, f := range files {
		path := "/console/" + name
		resp := get(t, h, "GET", path)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(body) != string(f.body) {
			t.Fatalf("GET %s = %d", path, resp.StatusCode)
		}
		if prefix, ok := want[pathpkg.Ext(name)]; ok && !strings.HasPrefix(resp.Header.Get("Content-Type"), prefix) {
			t.Errorf("GET %s: Content-Type %q, want %s", path, resp.Header.Get("Content-Type"), prefix)
		}
		checkSecurityHeaders(t, path, resp)
		etag := resp.Header.Get("ETag")
		if !strings.HasPrefix(etag, `"`) {
			t.Fatalf("GET %s: ETag %q", path, etag)
		}
		if again := get(t, h, "GET", path, "If-None-Match", etag); again.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with its ETag = %d, want 304", path, again.StatusCode)
		}
		if other := get(t, h, "GET", path, "If-None-Match", `"stale"`); other.StatusCode != 200 {
			t.Errorf("GET %s with another ETag = %d, want 200", path, other.StatusCode)
		}
		head := get(t, h, "HEAD", path)
		if b, _ := io.ReadAll(head.Body); head.StatusCode != 200 || len(b) != 0 {
			t.Errorf("HEAD %s = %d with %d bytes", path, head.StatusCode, len(b))
		}
	}
}

func TestNotServed(t *testing.T) {
	h := Handler("/console")
	for _, path := range []string{"/console/nope.js", "/console/vendor", "/console/vendor/", "/console/../console.go",
		"/console//index.html", "/console/web/index.html", "/consolex", "/other", "/console/.hidden"} {
		resp := get(t, h, "GET", path)
		if resp.StatusCode != 404 {
			t.Errorf("GET %s = %d, want 404", path, resp.StatusCode)
		}
		checkSecurityHeaders(t, path, resp)
	}
	resp := get(t, h, "POST", "/console/")
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /console/ = %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

// TestIndexLoadsOnlyItself: index.html loads nothing from another origin, and has no inline script, style
// attribute or event handler, which the policy would block (the browser test checks the page as it runs).
func TestIndexLoadsOnlyItself(t *testing.T) {
	index := string(files["index.html"].body)
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)(src|href|action)\s*=\s*["']?\s*(https?:)?//`),
		regexp.MustCompile(`(?i)\sstyle\s*=`),
		regexp.MustCompile(`(?i)\son[a-z]+\s*=`),
		regexp.MustCompile(`(?i)javascript:`),
		regexp.MustCompile(`(?i)<script(\s[^>]*)?>\s*[^<\s]`), // a script with a body
	} {
		if m := bad.FindString(index); m != "" {
			t.Errorf("index.html has %q", m)
		}
	}
}
