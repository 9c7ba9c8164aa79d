package routes

import (
	"strings"
	"testing"
)

// TestConsoleOddMethodsAndPaths: whatever the method or path under /console, the answer is the console's own,
// with its security headers (a 405 from the router had none); nothing outside web/ is ever served.
func TestConsoleOddMethodsAndPaths(t *testing.T) {
	f := newFixture(t, Options{})
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"POST", "/console", 405},
		{"POST", "/console/app.js", 405},
		{"OPTIONS", "/console/app.js", 405},
		{"PUT", "/console/", 405},
		{"DELETE", "/console/index.html", 405},
		{"TRACE", "/console", 405},
		{"PATCH", "/console/x", 404},
		{"GET", "/console/../go.mod", 404},
		{"GET", "/console/%2e%2e/go.mod", 404},
		{"GET", "/console/..%2fgo.mod", 404},
		{"GET", "/console/app.js/", 404},
		{"GET", "/console//app.js", 404},
		{"GET", "/console/vendor/", 404},
		{"GET", "/console/index.html%00", 404},
		{"GET", "/console/" + strings.Repeat("a", 60000), 404},
		{"HEAD", "/console/app.js", 200},
		{"GET", "/console/app.js?../../go.mod", 200},
	} {
		a := f.do(t, tc.method, tc.path, "")
		name := tc.method + " " + tc.path[:min(len(tc.path), 40)]
		if a.status != tc.status {
			t.Errorf("%s = %d, want %d", name, a.status, tc.status)
		}
		if !strings.Contains(a.header.Get("Content-Security-Policy"), "default-src 'none'") ||
			a.header.Get("X-Content-Type-Options") != "nosniff" || a.header.Get("X-Frame-Options") != "DENY" ||
			a.header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: security headers missing: %v", name, a.header)
		}
		if tc.status == 405 && a.header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: Allow %q", name, a.header.Get("Allow"))
		}
		if strings.Contains(string(a.body), "module github.com") {
			t.Errorf("%s served go.mod", name)
		}
	}
}
