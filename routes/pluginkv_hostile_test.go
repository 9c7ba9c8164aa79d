package routes

import (
	"strings"
	"testing"
)

// TestPluginKVHostileKeys probes /v1/plugin-kv with keys a client may craft in the path and with odd paging
// parameters, logging each answer; see the assertions for what must hold.
func TestPluginKVHostileKeys(t *testing.T) {
	f := newFixture(t, Options{})
	body := `{"value": "v"}`
	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/v1/plugin-kv/a%2Fb", 400},
		{"/v1/plugin-kv/a%00b", 400},
		{"/v1/plugin-kv/%E2%82%AC", 400},
		{"/v1/plugin-kv/a%252Fb", 201}, // "a%2Fb": one decoding only
		{"/v1/plugin-kv/%2E%2E", 201},
		{"/v1/plugin-kv/%2E", 201},
		{"/v1/plugin-kv/" + strings.Repeat("k", 256), 201},
		{"/v1/plugin-kv/" + strings.Repeat("k", 257), 400},
		{"/v1/plugin-kv/" + strings.Repeat("%6B", 257), 400},
	} {
		a := f.adminJSON(t, "PUT", tc.path, f.admin, body)
		t.Logf("PUT %.60s: %d %.200s", tc.path, a.status, a.body)
		if a.status != tc.status {
			t.Errorf("PUT %.60s = %d %s, want %d", tc.path, a.status, a.body, tc.status)
		}
		if tc.status == 201 {
			if g := f.do(t, "GET", tc.path, "", HeaderAPIKey, f.admin); g.status != 200 {
				t.Errorf("GET %.60s = %d %s", tc.path, g.status, g.body)
			}
		}
	}
	for _, q := range []string{"limit=0", "limit=-1", "limit=99999999999999999999", "limit=abc", "after=%00", "after=" + strings.Repeat("z", 5000), "before=..", "limit=1&after=%2E"} {
		a := f.do(t, "GET", "/v1/plugin-kv?"+q, "", HeaderAPIKey, f.admin)
		t.Logf("GET ?%.40s: %d %.200s", q, a.status, a.body)
		if a.status >= 500 {
			t.Errorf("GET ?%.40s = %d %s", q, a.status, a.body)
		}
	}
	for _, b := range []string{`{"value": "` + strings.Repeat("\\u0000", 1<<20) + `"}`, `{"value": "x"` + strings.Repeat(" ", 4<<20) + `}`, `{"value": "x", "value": "y"}`, `[` + strings.Repeat("[", 100000), `{"value": "\ud800"}`} {
		a := f.adminJSON(t, "PUT", "/v1/plugin-kv/body", f.admin, b)
		t.Logf("PUT body %.30q (%d bytes): %d %.200s", b, len(b), a.status, a.body)
		if a.status >= 500 {
			t.Errorf("PUT body %.30q = %d %s", b, a.status, a.body)
		}
	}
}
