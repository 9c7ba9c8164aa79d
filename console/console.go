package console

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
)

//go:embed web
var web embed.FS

// ContentSecurityPolicy is the policy of every answer: the page may load scripts, styles, images, fonts and
// data from the gateway's own origin only (images also as data: URLs), may not be framed, and has no inline
// script or style to run.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// contentTypes are the types of the files the console ships, by extension: fixed here rather than read from
// the system's MIME database, which differs between machines (a .js served as text/plain is refused under
// nosniff).
var contentTypes = map[string]string{
	".html":  "text/html; charset=utf-8",
	".js":    "text/javascript; charset=utf-8",
	".mjs":   "text/javascript; charset=utf-8",
	".css":   "text/css; charset=utf-8",
	".json":  "application/json",
	".map":   "application/json",
	".svg":   "image/svg+xml",
	".png":   "image/png",
	".ico":   "image/x-icon",
	".woff2": "font/woff2",
	".txt":   "text/plain; charset=utf-8",
}

// file is one embedded file, ready to serve.
type file struct {
	body        []byte
	contentType string
	etag        string
}

// files are web/'s files by their path under it ("app.js", "vendor/uPlot.min.js"), read once.
var files = func() map[string]file {
	m := map[string]file{}
	err := fs.WalkDir(web, "web", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := web.ReadFile(p)
		if err != nil {
			return err
		}
		ct, ok := contentTypes[path.Ext(p)]
		switch {
		case ok:
		case path.Ext(p) == "": // a vendored library's LICENSE
			ct = "text/plain; charset=utf-8"
		default:
			ct = "application/octet-stream"
		}
		sum := sha256.Sum256(body)
		m[strings.TrimPrefix(p, "web/")] = file{body: body, contentType: ct,
			etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`}
		return nil
	})
	if err != nil { // the files are compiled in: a failure here is a build that cannot work
		panic("console: read the embedded files: " + err.Error())
	}
	return m
}()

// Handler serves the console under prefix ("/console"): prefix and prefix+"/" answer index.html,
// prefix+"/<file>" that file of web/, anything else 404. Only GET and HEAD are answered (405 otherwise). Every
// answer, errors included, carries the security headers.
func Handler(prefix string) http.Handler {
	prefix = strings.TrimSuffix(prefix, "/")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		name, ok := strings.CutPrefix(r.URL.Path, prefix)
		if !ok || (name != "" && name[0] != '/') { // "/consolex" is not ours
			notFound(w)
			return
		}
		name = strings.TrimPrefix(name, "/")
		if name == "" {
			name = "index.html"
		}
		f, ok := files[name] // exact names only: no directory listing, no "..", no path cleaning to get around
		if !ok {
			notFound(w)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", f.etag)
		if match := r.Header.Get("If-None-Match"); match != "" && etagMatches(match, f.etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Type", f.contentType)
		h.Set("Content-Length", strconv.Itoa(len(f.body)))
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(f.body)
		}
	})
}

// etagMatches reads If-None-Match: a list of entity tags, or "*".
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

func notFound(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, "404 page not found", http.StatusNotFound)
}
