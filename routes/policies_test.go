package routes

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/llmgw/gateway/storage"
)

const policiesPath = "/v1/policies/rate-limits"

// policyJSON sends a JSON body with key.
func (f *fixture) policyJSON(t *testing.T, method, path, key, body string) answer {
	t.Helper()
	return f.do(t, method, path, body, HeaderAPIKey, key, "Content-Type", "application/json")
}

// newPolicy creates a policy with key and returns its view.
func (f *fixture) newPolicy(t *testing.T, key, body string) map[string]any {
	t.Helper()
	a := f.policyJSON(t, "POST", policiesPath, key, body)
	if a.status != 200 {
		t.Fatalf("POST %s %s: %d %s", policiesPath, body, a.status, a.body)
	}
	return a.json(t)
}

// listPolicies lists with the query and key, and returns the ids of the page and the total.
func (f *fixture) listPolicies(t *testing.T, key, query string) (ids []string, total float64) {
	t.Helper()
	a := f.do(t, "GET", policiesPath+query, "", HeaderAPIKey, key)
	if a.status != 200 {
		t.Fatalf("GET %s%s: %d %s", policiesPath, query, a.status, a.body)
	}
	m := a.json(t)
	if m["object"] != "list" {
		t.Fatalf("list object = %v", m["object"])
	}
	for _, item := range m["data"].([]any) {
		p := item.(map[string]any)
		checkPolicyShape(t, p)
		ids = append(ids, p["id"].(string))
	}
	total, _ = m["total"].(float64)
	return ids, total
}

// checkPolicyShape asserts SPEC.md's policy fields, and only those.
func checkPolicyShape(t *testing.T, p map[string]any) {
	t.Helper()
	var keys []string
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{"conditions", "created_at", "group_by", "id", "last_updated_at", "name", "object", "organisation_id",
		"status", "type", "unit", "value", "workspace_id"}
	if !reflect.DeepEqual(keys, want) {
		t.Fatalf("policy keys = %v, want %v", keys, want)
	}
	if p["object"] != "policy_rate_limits" {
		t.Errorf("object = %v", p["object"])
	}
	if _, err := uuid.Parse(p["id"].(string)); err != nil {
		t.Errorf("id %v is not a UUID", p["id"])
	}
	for _, k := range []string{"created_at", "last_updated_at"} {
		s, _ := p[k].(string)
		if _, err := time.Parse(time.RFC3339, s); err != nil || !strings.HasSuffix(s, "Z") {
			t.Errorf("%s = %v, want an RFC 3339 UTC time", k, p[k])
		}
	}
	if _, ok := p["value"].(float64); !ok {
		t.Errorf("value = %v, want a number", p["value"])
	}
	if _, ok := p["conditions"].([]any); !ok {
		t.Errorf("conditions = %v, want an array", p["conditions"])
	}
	if _, ok := p["group_by"].([]any); !ok {
		t.Errorf("group_by = %v, want an array", p["group_by"])
	}
}

func TestPolicyLifecycle(t *testing.T) {
	f := newFixture(t, Options{})

	created := f.newPolicy(t, f.admin, `{"type": "requests", "unit": "rpm", "value": 60}`)
	checkPolicyShape(t, created)
	id := created["id"].(string)
	want := map[string]any{"type": "requests", "unit": "rpm", "value": 60.0, "status": "active", "workspace_id": f.ws.ID,
		"organisation_id": f.ws.OrganisationID, "name": nil}
	for k, v := range want {
		if created[k] != v {
			t.Errorf("created %s = %v, want %v", k, created[k], v)
		}
	}
	if len(created["conditions"].([]any)) != 0 || len(created["group_by"].([]any)) != 0 {
		t.Errorf("conditions and group_by = %v %v, want []", created["conditions"], created["group_by"])
	}

	got := f.do(t, "GET", policiesPath+"/"+id, "", HeaderAPIKey, f.admin)
	if got.status != 200 || !reflect.DeepEqual(got.json(t), created) {
		t.Fatalf("get = %d %s, want %v", got.status, got.body, created)
	}

	t.Run("a chosen id, name, conditions and group_by", func(t *testing.T) {
		chosen := uuid.NewString()
		p := f.newPolicy(t, f.admin, `{"id": "`+strings.ToUpper(chosen)+`", "type": "tokens", "unit": "rpd", "value": 1000,
			"name": "team a", "conditions": [{"key": "metadata.team", "value": "a"}], "group_by": [{"key": "api_key"}]}`)
		if p["id"] != chosen || p["name"] != "team a" || p["type"] != "tokens" || p["unit"] != "rpd" {
			t.Fatalf("created %v; want id %s in lower case", p, chosen)
		}
		if fmt.Sprint(p["conditions"]) != "[map[key:metadata.team value:a]]" || fmt.Sprint(p["group_by"]) != "[map[key:api_key]]" {
			t.Fatalf("conditions %v, group_by %v", p["conditions"], p["group_by"])
		}
		// The id is taken, in this workspace and in any other.
		for _, key := range []string{f.admin, f.otherKey} {
			checkError(t, f.policyJSON(t, "POST", policiesPath, key, `{"id": "`+chosen+`", "type": "requests", "unit": "rpm", "value": 1}`),
				409, "conflict", "id")
		}
	})

	t.Run("partial updates", func(t *testing.T) {
		a := f.policyJSON(t, "PUT", policiesPath+"/"+id, f.admin, `{"value": 10}`)
		if a.status != 200 {
			t.Fatalf("put value: %d %s", a.status, a.body)
		}
		p := a.json(t)
		if p["value"] != 10.0 || p["type"] != "requests" || p["unit"] != "rpm" || p["status"] != "active" || p["created_at"] != created["created_at"] {
			t.Fatalf("after PUT {value: 10}: %v", p)
		}
		a = f.policyJSON(t, "PUT", policiesPath+"/"+id, f.admin, `{"id": "`+id+`", "name": "n", "group_by": [{"key": "model"}]}`)
		if p := a.json(t); a.status != 200 || p["name"] != "n" || p["value"] != 10.0 || fmt.Sprint(p["group_by"]) != "[map[key:model]]" {
			t.Fatalf("put name: %d %s", a.status, a.body)
		}
		// A null resets the field to its default.
		a = f.policyJSON(t, "PUT", policiesPath+"/"+id, f.admin, `{"name": null, "group_by": null}`)
		if p := a.json(t); a.status != 200 || p["name"] != nil || len(p["group_by"].([]any)) != 0 {
			t.Fatalf("put nulls: %d %s", a.status, a.body)
		}
		// An empty body changes nothing.
		if a := f.policyJSON(t, "PUT", policiesPath+"/"+id, f.admin, `{}`); a.status != 200 || a.json(t)["value"] != 10.0 {
			t.Fatalf("put {}: %d %s", a.status, a.body)
		}
	})

	t.Run("archive", func(t *testing.T) {
		a := f.policyJSON(t, "PUT", policiesPath+"/"+id, f.admin, `{"status": "archived"}`)
		if a.status != 200 || a.json(t)["status"] != "archived" {
			t.Fatalf("archive: %d %s", a.status, a.body)
		}
		checkError(t, f.do(t, "GET", policiesPath+"/"+id, "", HeaderAPIKey, f.admin), 404, "not_found", nil)
		checkError(t, f.do(t, "GET", policiesPath+"/"+id+"?status=active", "", HeaderAPIKey, f.admin), 404, "not_found", nil)
		if a := f.do(t, "GET", policiesPath+"/"+id+"?status=archived", "", HeaderAPIKey, f.admin); a.status != 200 || a.json(t)["id"] != id {
			t.Fatalf("get archived: %d %s", a.status, a.body)
		}
		if ids, _ := f.listPolicies(t, f.admin, ""); slices.Contains(ids, id) {
			t.Fatalf("the default list shows the archived policy: %v", ids)
		}
		if ids, total := f.listPolicies(t, f.admin, "?status=archived"); !reflect.DeepEqual(ids, []string{id}) || total != 1 {
			t.Fatalf("archived list = %v (total %v)", ids, total)
		}
		// And back.
		if a := f.policyJSON(t, "PUT", policiesPath+"/"+id, f.admin, `{"status": "active"}`); a.status != 200 {
			t.Fatalf("unarchive: %d %s", a.status, a.body)
		}
		if a := f.do(t, "GET", policiesPath+"/"+id, "", HeaderAPIKey, f.admin); a.status != 200 {
			t.Fatalf("get after unarchive: %d %s", a.status, a.body)
		}
	})

	t.Run("delete", func(t *testing.T) {
		a := f.do(t, "DELETE", policiesPath+"/"+id, "", HeaderAPIKey, f.admin)
		if a.status != 200 || !reflect.DeepEqual(a.json(t), map[string]any{"id": id, "object": "policy_rate_limits", "deleted": true}) {
			t.Fatalf("delete: %d %s", a.status, a.body)
		}
		checkError(t, f.do(t, "GET", policiesPath+"/"+id+"?status=archived", "", HeaderAPIKey, f.admin), 404, "not_found", nil)
		checkError(t, f.do(t, "GET", policiesPath+"/"+id, "", HeaderAPIKey, f.admin), 404, "not_found", nil)
		checkError(t, f.do(t, "DELETE", policiesPath+"/"+id, "", HeaderAPIKey, f.admin), 404, "not_found", nil)
		checkError(t, f.policyJSON(t, "PUT", policiesPath+"/"+id, f.admin, `{"value": 1}`), 404, "not_found", nil)
		// Its id is free again.
		f.newPolicy(t, f.admin, `{"id": "`+id+`", "type": "requests", "unit": "rpm", "value": 1}`)
	})
}

func TestPolicyListFilters(t *testing.T) {
	f := newFixture(t, Options{})
	mk := func(key, typ, unit, status string) string {
		return f.newPolicy(t, key, fmt.Sprintf(`{"type": %q, "unit": %q, "value": 5, "status": %q}`, typ, unit, status))["id"].(string)
	}
	reqRPM := mk(f.admin, "requests", "rpm", "active")
	tokRPM := mk(f.admin, "tokens", "rpm", "active")
	reqRPD := mk(f.admin, "requests", "rpd", "active")
	archived := mk(f.admin, "requests", "rpm", "archived")
	mk(f.otherKey, "requests", "rpm", "active") // never shown to the first workspace

	tests := []struct {
		query string
		want  []string
	}{
		{"", []string{reqRPM, tokRPM, reqRPD}},
		{"?status=active", []string{reqRPM, tokRPM, reqRPD}},
		{"?status=archived", []string{archived}},
		{"?type=requests", []string{reqRPM, reqRPD}},
		{"?type=tokens", []string{tokRPM}},
		{"?unit=rpm", []string{reqRPM, tokRPM}},
		{"?unit=rph", nil},
		{"?type=requests&unit=rpm&status=archived", []string{archived}},
		{"?workspace_id=" + f.ws.ID, []string{reqRPM, tokRPM, reqRPD}},
		{"?workspace_id=default&type=tokens", []string{tokRPM}},
		{"?status=&type=", []string{reqRPM, tokRPM, reqRPD}}, // empty means absent
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			for _, key := range []string{f.admin, f.plain} {
				ids, total := f.listPolicies(t, key, tc.query)
				if !reflect.DeepEqual(ids, tc.want) || total != float64(len(tc.want)) {
					t.Fatalf("ids = %v (total %v), want %v in creation order", ids, total, tc.want)
				}
			}
		})
	}

	t.Run("another workspace", func(t *testing.T) {
		// Another workspace reads as an unknown one (see TestWorkspaceNamesCannotBeProbed).
		for _, ref := range []string{"other", f.other.ID, "nope", uuid.NewString()} {
			checkError(t, f.do(t, "GET", policiesPath+"?workspace_id="+ref, "", HeaderAPIKey, f.plain), 404, "not_found", "workspace_id")
		}
		if ids, _ := f.listPolicies(t, f.otherKey, ""); len(ids) != 1 || slices.Contains(ids, reqRPM) {
			t.Fatalf("the other workspace lists %v", ids)
		}
	})

	t.Run("bad filters", func(t *testing.T) {
		for query, param := range map[string]string{"?status=paused": "status", "?type=bytes": "type", "?unit=rps": "unit",
			"?status=ACTIVE": "status"} {
			checkError(t, f.do(t, "GET", policiesPath+query, "", HeaderAPIKey, f.plain), 400, "invalid_request", param)
		}
	})
}

func TestPolicyPagination(t *testing.T) {
	f := newFixture(t, Options{})
	var all []string
	for i := range 5 {
		all = append(all, f.newPolicy(t, f.admin, fmt.Sprintf(`{"type": "requests", "unit": "rpm", "value": %d}`, i+1))["id"].(string))
	}
	f.newPolicy(t, f.admin, `{"type": "requests", "unit": "rpm", "value": 1, "status": "archived"}`) // not counted

	tests := []struct {
		query string
		want  []string
	}{
		{"", all},
		{"?page_size=2", all[0:2]},
		{"?page_size=2&current_page=0", all[0:2]},
		{"?page_size=2&current_page=1", all[2:4]},
		{"?page_size=2&current_page=2", all[4:5]},
		{"?page_size=2&current_page=3", nil},
		{"?page_size=5", all},
		{"?page_size=100", all},
		{"?page_size=0", nil}, // an empty page, but the total is counted
		{"?page_size=0&current_page=7", nil},
		{"?current_page=0", all},
		{"?current_page=1", nil}, // without page_size page 0 holds everything
		{"?page_size=9223372036854775807&current_page=9223372036854775807", nil},
		{"?page_size=1&current_page=9223372036854775807", nil},
		{"?page_size=9223372036854775807", all},
		{"?page_size=02&current_page=01", all[2:4]},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			ids, total := f.listPolicies(t, f.plain, tc.query)
			if !reflect.DeepEqual(ids, tc.want) || total != 5 {
				t.Fatalf("ids = %v (total %v), want %v (total 5)", ids, total, tc.want)
			}
		})
	}
	for _, bad := range []struct{ query, param string }{
		{"?page_size=-1", "page_size"},
		{"?page_size=two", "page_size"},
		{"?page_size=1.5", "page_size"},
		{"?page_size=99999999999999999999", "page_size"},
		{"?current_page=-1", "current_page"},
		{"?page_size=2&current_page=x", "current_page"},
	} {
		checkError(t, f.do(t, "GET", policiesPath+bad.query, "", HeaderAPIKey, f.plain), 400, "invalid_request", bad.param)
	}
}

func TestPolicyGetErrors(t *testing.T) {
	f := newFixture(t, Options{})
	mine := f.newPolicy(t, f.admin, `{"type": "requests", "unit": "rpm", "value": 1}`)["id"].(string)
	theirs := f.newPolicy(t, f.otherKey, `{"type": "requests", "unit": "rpm", "value": 1}`)["id"].(string)

	for _, id := range []string{"nope", "123", "0c9d8e7f-6a5b-4c3d-9e1f-123456789ab"} {
		checkError(t, f.do(t, "GET", policiesPath+"/"+id, "", HeaderAPIKey, f.plain), 400, "invalid_request", "rateLimitsPolicyId")
		checkError(t, f.policyJSON(t, "PUT", policiesPath+"/"+id, f.admin, `{}`), 400, "invalid_request", "rateLimitsPolicyId")
		checkError(t, f.do(t, "DELETE", policiesPath+"/"+id, "", HeaderAPIKey, f.admin), 400, "invalid_request", "rateLimitsPolicyId")
	}
	checkError(t, f.do(t, "GET", policiesPath+"/"+uuid.NewString(), "", HeaderAPIKey, f.plain), 404, "not_found", nil)
	checkError(t, f.do(t, "GET", policiesPath+"/"+mine+"?status=paused", "", HeaderAPIKey, f.plain), 400, "invalid_request", "status")

	// Another workspace's policy is unknown here, for every method.
	checkError(t, f.do(t, "GET", policiesPath+"/"+theirs, "", HeaderAPIKey, f.plain), 404, "not_found", nil)
	checkError(t, f.do(t, "GET", policiesPath+"/"+theirs+"?status=archived", "", HeaderAPIKey, f.plain), 404, "not_found", nil)
	checkError(t, f.policyJSON(t, "PUT", policiesPath+"/"+theirs, f.admin, `{"status": "archived"}`), 404, "not_found", nil)
	checkError(t, f.do(t, "DELETE", policiesPath+"/"+theirs, "", HeaderAPIKey, f.admin), 404, "not_found", nil)
	if a := f.do(t, "GET", policiesPath+"/"+theirs, "", HeaderAPIKey, f.otherKey); a.status != 200 {
		t.Fatalf("the owner cannot read its policy: %d %s", a.status, a.body)
	}

	// An upper-case UUID in the path names the same policy.
	if a := f.do(t, "GET", policiesPath+"/"+strings.ToUpper(mine), "", HeaderAPIKey, f.plain); a.status != 200 || a.json(t)["id"] != mine {
		t.Fatalf("upper-case id: %d %s", a.status, a.body)
	}
	// A bootstrap file may have stored an upper-case id: it is found by the lower-case one.
	upper := strings.ToUpper(uuid.NewString())
	if _, err := f.store.Policies.Put(f.ws.ID, upper, &storage.RateLimitPolicy{ID: upper, WorkspaceID: f.ws.ID,
		OrganisationID: f.ws.OrganisationID, Type: "requests", Unit: "rpm", Value: 1, Status: "active"}); err != nil {
		t.Fatal(err)
	}
	if a := f.do(t, "GET", policiesPath+"/"+strings.ToLower(upper), "", HeaderAPIKey, f.plain); a.status != 200 || a.json(t)["id"] != upper {
		t.Fatalf("stored upper-case id: %d %s", a.status, a.body)
	}
	checkError(t, f.policyJSON(t, "POST", policiesPath, f.admin, `{"id": "`+strings.ToLower(upper)+`", "type": "requests", "unit": "rpm", "value": 1}`),
		409, "conflict", "id")
}

func TestPolicyValidation(t *testing.T) {
	f := newFixture(t, Options{})
	const ok = `"type": "requests", "unit": "rpm", "value": 1`
	tests := []struct {
		name, body string
		code       string
		param      any
		message    string // part of the error's message
	}{
		{"value zero", `{"type": "requests", "unit": "rpm", "value": 0}`, "invalid_request", "value", "value: must be greater than 0"},
		{"value a string", `{"type": "requests", "unit": "rpm", "value": "1"}`, "invalid_request", "value", "value: must be a number, not string"},
		{"missing type", `{"unit": "rpm", "value": 1}`, "invalid_request", "type", "type: is required"},
		{"unknown unit", `{"type": "requests", "unit": "rps", "value": 1}`, "invalid_request", "unit", `unit: must be one of rpm, rph, rpd, not "rps"`},
		{"unknown status", `{` + ok + `, "status": "paused"}`, "invalid_request", "status", "status: must be one of active, archived"},
		{"id not a UUID", `{` + ok + `, "id": "pol-1"}`, "invalid_request", "id", `id: "pol-1" is not a UUID`},
		{"unknown condition key", `{` + ok + `, "conditions": [{"key": "colour", "value": "red"}]}`, "invalid_request", "conditions[0].key", `conditions[0].key: unknown key "colour"`},
		{"group_by without key", `{` + ok + `, "group_by": [{"key": "model"}, {}]}`, "invalid_request", "group_by[1].key", "group_by[1].key: is required"},
		{"unknown field", `{` + ok + `, "colour": "red"}`, "invalid_request", "colour", "colour: unknown field"},
		{"every problem is named", `{"type": "x", "unit": "rpm", "value": -1}`, "invalid_request", "type", "; value: must be greater than 0"},
		{"workspace", `{` + ok + `, "workspace": "default"}`, "invalid_request", "workspace", "workspace of the API key"},
		{"workspace_id", `{` + ok + `, "workspace_id": "x"}`, "invalid_request", "workspace_id", "caller's workspace"},
		{"an array", `[1]`, "invalid_json", nil, "must be an object"},
		{"null", `null`, "invalid_json", nil, "not null"},
		{"malformed", `{"type": `, "invalid_json", nil, "malformed JSON"},
		{"trailing data", `{` + ok + `} {}`, "invalid_json", nil, "malformed JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := f.policyJSON(t, "POST", policiesPath, f.admin, tc.body)
			checkError(t, a, 400, tc.code, tc.param)
			if msg := a.json(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, tc.message) {
				t.Fatalf("message %q does not say %q", msg, tc.message)
			}
		})
	}
	checkError(t, f.do(t, "POST", policiesPath, `{`+ok+`}`, HeaderAPIKey, f.admin), 415, "unsupported_media_type", "content-type")
	checkError(t, f.do(t, "POST", policiesPath, `{`+ok+`}`, HeaderAPIKey, f.admin, "Content-Type", "text/plain"), 415, "unsupported_media_type", "content-type")
	checkError(t, f.policyJSON(t, "POST", policiesPath, f.admin, ""), 400, "invalid_json", nil)
	if ids, _ := f.listPolicies(t, f.admin, "?status=active"); len(ids) != 0 {
		t.Fatalf("a refused body stored a policy: %v", ids)
	}

	t.Run("updates are checked whole", func(t *testing.T) {
		id := f.newPolicy(t, f.admin, `{`+ok+`, "conditions": [{"key": "model", "value": "m"}]}`)["id"].(string)
		path := policiesPath + "/" + id
		checkError(t, f.policyJSON(t, "PUT", path, f.admin, `{"value": -1}`), 400, "invalid_request", "value")
		checkError(t, f.policyJSON(t, "PUT", path, f.admin, `{"value": null}`), 400, "invalid_request", "value")
		checkError(t, f.policyJSON(t, "PUT", path, f.admin, `{"unit": "rps"}`), 400, "invalid_request", "unit")
		checkError(t, f.policyJSON(t, "PUT", path, f.admin, `{"conditions": [{"key": "nope", "value": "x"}]}`), 400, "invalid_request", "conditions[0].key")
		checkError(t, f.policyJSON(t, "PUT", path, f.admin, `{"colour": "red"}`), 400, "invalid_request", "colour")
		checkError(t, f.policyJSON(t, "PUT", path, f.admin, `{"id": "`+uuid.NewString()+`"}`), 400, "invalid_request", "id")
		checkError(t, f.policyJSON(t, "PUT", path, f.admin, `{"id": 7}`), 400, "invalid_request", "id")
		checkError(t, f.policyJSON(t, "PUT", path, f.admin, `{"workspace": "other"}`), 400, "invalid_request", "workspace")
		checkError(t, f.policyJSON(t, "PUT", path, f.admin, `{"workspace_id": "`+f.other.ID+`"}`), 400, "invalid_request", "workspace_id")
		checkError(t, f.do(t, "PUT", path, `{"value": 2}`, HeaderAPIKey, f.admin, "Content-Type", "text/plain"), 415, "unsupported_media_type", "content-type")
		// Nothing of the refused updates was stored.
		p := f.do(t, "GET", path, "", HeaderAPIKey, f.admin).json(t)
		if p["value"] != 1.0 || p["unit"] != "rpm" || fmt.Sprint(p["conditions"]) != "[map[key:model value:m]]" {
			t.Fatalf("after refused updates: %v", p)
		}
		// The id in the body may be spelled in upper case.
		if a := f.policyJSON(t, "PUT", path, f.admin, `{"id": "`+strings.ToUpper(id)+`", "value": 2}`); a.status != 200 || a.json(t)["id"] != id {
			t.Fatalf("put with the same id: %d %s", a.status, a.body)
		}
	})
}

func TestPolicyWritesNeedAnAdminKey(t *testing.T) {
	f := newFixture(t, Options{})
	id := f.newPolicy(t, f.admin, `{"type": "requests", "unit": "rpm", "value": 1}`)["id"].(string)
	path := policiesPath + "/" + id

	checkError(t, f.policyJSON(t, "POST", policiesPath, f.plain, `{"type": "requests", "unit": "rpm", "value": 1}`), 403, "forbidden", nil)
	checkError(t, f.policyJSON(t, "PUT", path, f.plain, `{"status": "archived"}`), 403, "forbidden", nil)
	checkError(t, f.do(t, "DELETE", path, "", HeaderAPIKey, f.plain), 403, "forbidden", nil)
	// Refused before the body or the id is looked at.
	checkError(t, f.policyJSON(t, "POST", policiesPath, f.plain, `{"value": 0}`), 403, "forbidden", nil)
	checkError(t, f.do(t, "DELETE", policiesPath+"/nope", "", HeaderAPIKey, f.plain), 403, "forbidden", nil)

	// Any key of the workspace reads.
	if ids, total := f.listPolicies(t, f.plain, ""); !reflect.DeepEqual(ids, []string{id}) || total != 1 {
		t.Fatalf("plain list = %v (total %v)", ids, total)
	}
	if a := f.do(t, "GET", path, "", HeaderAPIKey, f.plain); a.status != 200 || a.json(t)["status"] != "active" {
		t.Fatalf("plain get: %d %s", a.status, a.body)
	}
	// And without a key, nothing.
	checkError(t, f.do(t, "GET", policiesPath, ""), 401, "missing_api_key", HeaderAPIKey)
	checkError(t, f.do(t, "GET", path, ""), 401, "missing_api_key", HeaderAPIKey)
}

// A policy read with GET can be sent back changed: the fields the gateway fills are ignored.
func TestPolicyReadModifyWrite(t *testing.T) {
	f := newFixture(t, Options{})
	p := f.newPolicy(t, f.admin, `{"type": "requests", "unit": "rpm", "value": 5}`)
	p["value"] = 9.0
	p["created_at"] = "1999-01-01T00:00:00Z"
	body, _ := json.Marshal(p)
	a := f.policyJSON(t, "PUT", policiesPath+"/"+p["id"].(string), f.admin, string(body))
	if a.status != 200 {
		t.Fatalf("PUT of a read policy: %d %s", a.status, a.body)
	}
	got := a.json(t)
	if got["value"] != 9.0 || got["created_at"] == "1999-01-01T00:00:00Z" {
		t.Fatalf("after PUT: %v", got)
	}
}
