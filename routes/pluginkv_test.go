package routes

import (
	"net/url"
	"strings"
	"testing"
)

// TestPluginKVAdminAPI drives /v1/plugin-kv through the whole gateway: admin keys only; PUT answers 201 then 200
// without the value; GET shows the value; the list is ordered by key without values; a key with characters a
// path must escape round-trips; another workspace's admin key neither reads nor writes the entry; wrong keys and
// bodies are 400s naming "key" or "value"; DELETE answers {key, deleted} and then 404.
func TestPluginKVAdminAPI(t *testing.T) {
	f := newFixture(t, Options{})
	body := `{"value": "alpha\nbeta"}`
	for _, m := range [][2]string{{"GET", "/v1/plugin-kv"}, {"GET", "/v1/plugin-kv/banned"}, {"PUT", "/v1/plugin-kv/banned"},
		{"DELETE", "/v1/plugin-kv/banned"}} {
		checkError(t, f.adminJSON(t, m[0], m[1], f.plain, body), 403, "forbidden", nil)
	}

	a := f.adminJSON(t, "PUT", "/v1/plugin-kv/banned", f.admin, body)
	if a.status != 201 {
		t.Fatalf("first PUT: %d %s", a.status, a.body)
	}
	if m := a.json(t); m["key"] != "banned" || m["size"] != 10.0 || m["updated_at"] == nil || m["value"] != nil {
		t.Errorf("PUT answered %v", m)
	}
	replaced := okJSON(t, f.adminJSON(t, "PUT", "/v1/plugin-kv/banned", f.admin, `{"value": "gamma"}`))
	if replaced["size"] != 5.0 {
		t.Errorf("replace answered %v", replaced)
	}
	odd := "a%b?c#d:e"
	if a := f.adminJSON(t, "PUT", "/v1/plugin-kv/"+url.PathEscape(odd), f.admin, `{"value": ""}`); a.status != 201 {
		t.Fatalf("PUT of %q: %d %s", odd, a.status, a.body)
	}
	got := okJSON(t, f.do(t, "GET", "/v1/plugin-kv/banned", "", HeaderAPIKey, f.admin))
	if got["key"] != "banned" || got["value"] != "gamma" || got["size"] != 5.0 {
		t.Errorf("GET %v", got)
	}
	if got := okJSON(t, f.do(t, "GET", "/v1/plugin-kv/"+url.PathEscape(odd), "", HeaderAPIKey, f.admin)); got["key"] != odd {
		t.Errorf("GET of %q: %v", odd, got)
	}
	list := okJSON(t, f.do(t, "GET", "/v1/plugin-kv", "", HeaderAPIKey, f.admin))
	if keys := listSlugs(list, "key"); keys != odd+",banned" || list["object"] != "list" {
		t.Errorf("list %v", list)
	}
	for _, item := range list["data"].([]any) {
		if _, ok := item.(map[string]any)["value"]; ok {
			t.Errorf("the list shows a value: %v", item)
		}
	}

	if l := okJSON(t, f.do(t, "GET", "/v1/plugin-kv", "", HeaderAPIKey, f.otherKey)); len(l["data"].([]any)) != 0 {
		t.Errorf("other workspace lists %v", l)
	}
	checkError(t, f.do(t, "GET", "/v1/plugin-kv/banned", "", HeaderAPIKey, f.otherKey), 404, "not_found", nil)
	checkError(t, f.do(t, "DELETE", "/v1/plugin-kv/banned", "", HeaderAPIKey, f.otherKey), 404, "not_found", nil)
	if a := f.adminJSON(t, "PUT", "/v1/plugin-kv/banned", f.otherKey, `{"value": "theirs"}`); a.status != 201 {
		t.Fatalf("other workspace's PUT: %d %s", a.status, a.body)
	}
	if got := okJSON(t, f.do(t, "GET", "/v1/plugin-kv/banned", "", HeaderAPIKey, f.admin)); got["value"] != "gamma" {
		t.Errorf("another workspace's write changed this one's value: %v", got)
	}

	for _, tc := range []struct{ path, body, param string }{
		{"/v1/plugin-kv/a%2Fb", body, "key"},
		{"/v1/plugin-kv/a%20b", body, "key"},
		{"/v1/plugin-kv/" + strings.Repeat("k", 257), body, "key"},
		{"/v1/plugin-kv/k", `{"value": 1}`, "value"},
		{"/v1/plugin-kv/k", `{}`, "value"},
		{"/v1/plugin-kv/k", `{"value": "x", "extra": 1}`, "extra"},
	} {
		checkError(t, f.adminJSON(t, "PUT", tc.path, f.admin, tc.body), 400, "invalid_request", tc.param)
	}

	del := okJSON(t, f.do(t, "DELETE", "/v1/plugin-kv/banned", "", HeaderAPIKey, f.admin))
	if del["key"] != "banned" || del["deleted"] != true {
		t.Errorf("DELETE answered %v", del)
	}
	checkError(t, f.do(t, "GET", "/v1/plugin-kv/banned", "", HeaderAPIKey, f.admin), 404, "not_found", nil)
	checkError(t, f.do(t, "DELETE", "/v1/plugin-kv/banned", "", HeaderAPIKey, f.admin), 404, "not_found", nil)
}
