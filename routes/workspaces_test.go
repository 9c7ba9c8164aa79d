package routes

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/storage"
)

// orgAdmin makes an organisation admin key in the fixture's default workspace and returns its secret.
func (f *fixture) orgAdmin(t *testing.T) string {
	t.Helper()
	secret := storage.NewAPIKeySecret()
	if _, _, err := f.store.APIKeys.Put(secret, &storage.APIKey{WorkspaceID: f.ws.ID, Name: "org", Admin: true,
		OrganisationAdmin: true}); err != nil {
		t.Fatal(err)
	}
	return secret
}

func (f *fixture) sendJSON(t *testing.T, key, method, path, body string) answer {
	t.Helper()
	return f.do(t, method, path, body, HeaderAPIKey, key, "Content-Type", "application/json")
}

func TestWorkspaceCRUD(t *testing.T) {
	f := newFixture(t, Options{})
	org := f.orgAdmin(t)

	a := f.sendJSON(t, org, "POST", "/v1/workspaces", `{"slug":"team-a","name":"Team A"}`)
	if a.status != 200 {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	ws := a.json(t)
	id, _ := ws["id"].(string)
	if ws["object"] != "workspace" || ws["slug"] != "team-a" || ws["name"] != "Team A" ||
		ws["organisation_id"] != f.ws.OrganisationID || len(id) != 36 || ws["created_at"] == "" || len(ws) != 6 {
		t.Fatalf("created workspace: %s", a.body)
	}
	if st, err := f.store.Workspaces.Get(id); err != nil || st.Slug != "team-a" {
		t.Fatalf("stored: %+v %v", st, err)
	}

	given := "0b7c9f6e-2d0f-4b0e-9a55-6c1f2d3e4f50"
	a = f.sendJSON(t, org, "POST", "/v1/workspaces", `{"slug":"team-b","id":"`+given+`","organisation_id":"`+f.other.OrganisationID+`"}`)
	if a.status != 200 || a.json(t)["id"] != given || a.json(t)["organisation_id"] != f.other.OrganisationID {
		t.Fatalf("create with id: %d %s", a.status, a.body)
	}

	for _, ref := range []string{id, "team-a"} {
		a = f.getJSON(t, org, "/v1/workspaces/"+ref)
		if a.status != 200 || a.json(t)["id"] != id {
			t.Fatalf("get %s: %d %s", ref, a.status, a.body)
		}
	}

	var list struct {
		Object  string           `json:"object"`
		Data    []map[string]any `json:"data"`
		HasMore bool             `json:"has_more"`
	}
	a = f.getJSON(t, org, "/v1/workspaces")
	if err := json.Unmarshal(a.body, &list); err != nil || a.status != 200 || list.Object != "list" || len(list.Data) != 4 || list.HasMore {
		t.Fatalf("list: %d %s", a.status, a.body)
	}
	var seen []string
	after := ""
	for {
		a = f.getJSON(t, org, "/v1/workspaces?limit=3&after="+after)
		if err := json.Unmarshal(a.body, &list); err != nil || a.status != 200 {
			t.Fatalf("page: %d %s", a.status, a.body)
		}
		for _, d := range list.Data {
			seen = append(seen, d["id"].(string))
		}
		if !list.HasMore {
			break
		}
		after = seen[len(seen)-1]
	}
	if len(seen) != 4 || seen[0] >= seen[1] || seen[2] >= seen[3] {
		t.Fatalf("pages: %v", seen)
	}

	a = f.sendJSON(t, org, "PUT", "/v1/workspaces/team-a", `{"slug":"team-z","name":"Zed"}`)
	if a.status != 200 || a.json(t)["slug"] != "team-z" || a.json(t)["name"] != "Zed" || a.json(t)["id"] != id {
		t.Fatalf("rename: %d %s", a.status, a.body)
	}
	checkError(t, f.getJSON(t, org, "/v1/workspaces/team-a"), 404, gwerr.CodeNotFound, nil)
	a = f.sendJSON(t, org, "PUT", "/v1/workspaces/"+id, `{"name":"Zed 2"}`)
	if a.status != 200 || a.json(t)["slug"] != "team-z" || a.json(t)["name"] != "Zed 2" {
		t.Fatalf("rename name only: %d %s", a.status, a.body)
	}

	a = f.do(t, "DELETE", "/v1/workspaces/team-z", "", HeaderAPIKey, org)
	if a.status != 200 || a.json(t)["deleted"] != true || a.json(t)["id"] != id {
		t.Fatalf("delete: %d %s", a.status, a.body)
	}
	checkError(t, f.getJSON(t, org, "/v1/workspaces/"+id), 404, gwerr.CodeNotFound, nil)
	checkError(t, f.do(t, "DELETE", "/v1/workspaces/team-z", "", HeaderAPIKey, org), 404, gwerr.CodeNotFound, nil)
	// the slug is free again
	if a = f.sendJSON(t, org, "POST", "/v1/workspaces", `{"slug":"team-z"}`); a.status != 200 {
		t.Fatalf("slug reuse: %d %s", a.status, a.body)
	}
}

func TestWorkspaceErrors(t *testing.T) {
	f := newFixture(t, Options{})
	org := f.orgAdmin(t)
	tests := []struct {
		name, method, path, body string
		status                   int
		code                     string
		param                    any
	}{
		{"taken slug", "POST", "/v1/workspaces", `{"slug":"other"}`, 409, gwerr.CodeConflict, "slug"},
		{"taken id", "POST", "/v1/workspaces", `{"slug":"new","id":"` + f.other.ID + `"}`, 409, gwerr.CodeConflict, "slug"},
		{"no slug", "POST", "/v1/workspaces", `{"name":"x"}`, 400, gwerr.CodeInvalidRequest, "slug"},
		{"bad slug", "POST", "/v1/workspaces", `{"slug":"a/b"}`, 400, gwerr.CodeInvalidRequest, "slug"},
		{"bad id", "POST", "/v1/workspaces", `{"slug":"ok","id":"nope"}`, 400, gwerr.CodeInvalidRequest, "id"},
		{"bad organisation", "POST", "/v1/workspaces", `{"slug":"ok","organisation_id":"x"}`, 400, gwerr.CodeInvalidRequest, "organisation_id"},
		{"bad name", "POST", "/v1/workspaces", `{"slug":"ok","name":"a\u0007"}`, 400, gwerr.CodeInvalidRequest, "name"},
		{"unknown field", "POST", "/v1/workspaces", `{"slug":"ok","colour":"red"}`, 400, gwerr.CodeInvalidRequest, "colour"},
		{"rename to taken", "PUT", "/v1/workspaces/other", `{"slug":"default"}`, 409, gwerr.CodeConflict, "slug"},
		{"rename bad slug", "PUT", "/v1/workspaces/other", `{"slug":""}`, 400, gwerr.CodeInvalidRequest, "slug"},
		{"rename unknown", "PUT", "/v1/workspaces/nope", `{"name":"x"}`, 404, gwerr.CodeNotFound, nil},
		{"bad limit", "GET", "/v1/workspaces?limit=0", "", 400, gwerr.CodeInvalidRequest, "limit"},
		{"bad force", "DELETE", "/v1/workspaces/other?force=maybe", "", 400, gwerr.CodeInvalidRequest, "force"},
		{"own workspace", "DELETE", "/v1/workspaces/default?force=true", "", 409, gwerr.CodeConflict, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkError(t, f.sendJSON(t, org, tc.method, tc.path, tc.body), tc.status, tc.code, tc.param)
		})
	}
}

// Only an organisation admin manages workspaces: a workspace admin and a plain key get 403 on every endpoint.
func TestWorkspaceRoles(t *testing.T) {
	f := newFixture(t, Options{})
	for _, key := range []string{f.admin, f.plain, f.otherKey} {
		for _, r := range []struct{ method, path, body string }{
			{"GET", "/v1/workspaces", ""}, {"POST", "/v1/workspaces", `{"slug":"x"}`}, {"GET", "/v1/workspaces/other", ""},
			{"PUT", "/v1/workspaces/other", `{"name":"x"}`}, {"DELETE", "/v1/workspaces/other?force=true", ""},
		} {
			checkError(t, f.sendJSON(t, key, r.method, r.path, r.body), 403, gwerr.CodeForbidden, nil)
		}
	}
	if _, err := f.store.Workspaces.Get(f.other.ID); err != nil {
		t.Fatal(err)
	}
}

func TestAPIKeyOrganisationAdmin(t *testing.T) {
	f := newFixture(t, Options{})
	org := f.orgAdmin(t)

	// a workspace admin can neither grant organisation_admin nor make a key of another workspace
	checkError(t, f.sendJSON(t, f.admin, "POST", "/v1/api-keys", `{"admin":true,"organisation_admin":true}`), 403, gwerr.CodeForbidden, nil)
	checkError(t, f.sendJSON(t, f.admin, "POST", "/v1/api-keys", `{"workspace":"other"}`), 403, gwerr.CodeForbidden, nil)
	checkError(t, f.sendJSON(t, f.plain, "POST", "/v1/api-keys", `{"admin":true,"organisation_admin":true}`), 403, gwerr.CodeForbidden, nil)
	// organisation_admin needs admin
	checkError(t, f.sendJSON(t, org, "POST", "/v1/api-keys", `{"organisation_admin":true}`), 400, gwerr.CodeInvalidRequest, "organisation_admin")

	a := f.sendJSON(t, org, "POST", "/v1/api-keys", `{"name":"second org","admin":true,"organisation_admin":true}`)
	if a.status != 200 || a.json(t)["organisation_admin"] != true || a.json(t)["workspace_id"] != f.ws.ID {
		t.Fatalf("grant: %d %s", a.status, a.body)
	}
	granted := a.json(t)["key"].(string)
	if a = f.getJSON(t, granted, "/v1/workspaces"); a.status != 200 {
		t.Fatalf("granted key lists workspaces: %d %s", a.status, a.body)
	}

	// an organisation admin makes a key of a new workspace, which works there and only there
	if a = f.sendJSON(t, org, "POST", "/v1/workspaces", `{"slug":"team-a"}`); a.status != 200 {
		t.Fatalf("create workspace: %d %s", a.status, a.body)
	}
	wsID := a.json(t)["id"].(string)
	a = f.sendJSON(t, org, "POST", "/v1/api-keys", `{"name":"team-a admin","admin":true,"workspace":"team-a"}`)
	if a.status != 200 || a.json(t)["workspace_id"] != wsID || a.json(t)["organisation_admin"] != false {
		t.Fatalf("key of another workspace: %d %s", a.status, a.body)
	}
	teamKey := a.json(t)["key"].(string)
	a = f.getJSON(t, teamKey, "/v1/api-keys")
	if a.status != 200 || !strings.Contains(string(a.body), `"name":"team-a admin"`) || strings.Contains(string(a.body), f.ws.ID) {
		t.Fatalf("team key lists its workspace's keys: %d %s", a.status, a.body)
	}
	checkError(t, f.getJSON(t, teamKey, "/v1/workspaces"), 403, gwerr.CodeForbidden, nil)
	checkError(t, f.sendJSON(t, org, "POST", "/v1/api-keys", `{"workspace":"nope"}`), 404, gwerr.CodeNotFound, nil)
	if a = f.sendJSON(t, org, "POST", "/v1/api-keys", `{"workspace":"`+wsID+`"}`); a.status != 200 || a.json(t)["workspace_id"] != wsID {
		t.Fatalf("by id: %d %s", a.status, a.body)
	}
}

// A workspace that holds resources is refused with a 409 naming them; ?force=true removes them all, and its keys
// stop working at once.
func TestWorkspaceDeleteForce(t *testing.T) {
	f := newFixture(t, Options{})
	org := f.orgAdmin(t)
	if a := f.getJSON(t, f.otherKey, "/v1/api-keys"); a.status != 200 {
		t.Fatalf("other key before: %d %s", a.status, a.body)
	}
	if a := f.sendJSON(t, f.otherKey, "PUT", "/v1/guardrails/g1", `{"checks":[{"id":"default.regexMatch","parameters":{"rule":"x"}}]}`); a.status != 200 {
		t.Logf("guardrail not made (%d %s); the key alone is held", a.status, a.body)
	}
	if _, err := f.store.Configs.Put(f.other.ID, "c1", &storage.Config{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Configs.Get(f.other.ID, "c1"); err != nil { // now cached
		t.Fatal(err)
	}
	a := f.do(t, "DELETE", "/v1/workspaces/other", "", HeaderAPIKey, org)
	checkError(t, a, 409, gwerr.CodeConflict, "force")
	msg := string(a.body)
	for _, want := range []string{"1 api_keys", "1 configs", "force=true"} {
		if !strings.Contains(msg, want) {
			t.Errorf("409 does not name %q: %s", want, msg)
		}
	}
	if a := f.getJSON(t, f.otherKey, "/v1/api-keys"); a.status != 200 {
		t.Fatalf("other key after a refused delete: %d %s", a.status, a.body)
	}

	a = f.do(t, "DELETE", "/v1/workspaces/other?force=true", "", HeaderAPIKey, org)
	if a.status != 200 || a.json(t)["id"] != f.other.ID {
		t.Fatalf("forced delete: %d %s", a.status, a.body)
	}
	checkError(t, f.getJSON(t, f.otherKey, "/v1/api-keys"), 401, gwerr.CodeInvalidAPIKey, HeaderAPIKey)
	if _, err := f.store.Configs.Get(f.other.ID, "c1"); err == nil {
		t.Fatal("config of the deleted workspace still readable")
	}
	if held, err := f.store.Workspaces.Holdings(f.other.ID); err != nil || len(held) != 0 {
		t.Fatalf("left behind: %v %v", held, err)
	}
	// a new workspace can take the slug, and starts empty
	a = f.sendJSON(t, org, "POST", "/v1/workspaces", `{"slug":"other"}`)
	if a.status != 200 {
		t.Fatalf("recreate: %d %s", a.status, a.body)
	}
	if a := f.do(t, "DELETE", "/v1/workspaces/other", "", HeaderAPIKey, org); a.status != 200 {
		t.Fatalf("delete of an empty workspace: %d %s", a.status, a.body)
	}
}
