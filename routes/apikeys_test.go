package routes

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestAPIKeyAdmin(t *testing.T) {
	f := newFixture(t, Options{})
	jsonAs := func(key string) []string {
		return []string{HeaderAPIKey, key, "Content-Type", "application/json"}
	}

	t.Run("plain keys cannot manage keys", func(t *testing.T) {
		checkError(t, f.do(t, "GET", "/v1/api-keys", "", HeaderAPIKey, f.plain), 403, "forbidden", nil)
		checkError(t, f.do(t, "POST", "/v1/api-keys", `{}`, jsonAs(f.plain)...), 403, "forbidden", nil)
		checkError(t, f.do(t, "DELETE", "/v1/api-keys/x", "", HeaderAPIKey, f.plain), 403, "forbidden", nil)
	})

	t.Run("a key cannot be made for another workspace", func(t *testing.T) {
		for _, ref := range []string{"other", f.other.ID, "no-such-workspace"} {
			checkError(t, f.do(t, "POST", "/v1/api-keys", `{"workspace": "`+ref+`"}`, jsonAs(f.admin)...), 403, "forbidden", nil)
		}
	})

	t.Run("create, use, list, get, delete", func(t *testing.T) {
		a := f.do(t, "POST", "/v1/api-keys", `{"name": "ci runner", "workspace": "default"}`, jsonAs(f.admin)...)
		if a.status != 200 {
			t.Fatalf("create: %d %s", a.status, a.body)
		}
		created := a.json(t)
		secret, _ := created["key"].(string)
		id, _ := created["id"].(string)
		if !strings.HasPrefix(secret, "gw-") || id == "" || created["admin"] != false || created["workspace_id"] != f.ws.ID {
			t.Fatalf("create answered %s", a.body)
		}
		if created["hint"] != secret[len(secret)-4:] {
			t.Errorf("hint %v is not the key's last four characters", created["hint"])
		}

		// The new key authenticates, but is not an admin.
		checkError(t, f.do(t, "GET", "/v1/api-keys", "", HeaderAPIKey, secret), 403, "forbidden", nil)

		list := f.do(t, "GET", "/v1/api-keys", "", HeaderAPIKey, f.admin)
		if list.status != 200 {
			t.Fatalf("list: %d %s", list.status, list.body)
		}
		if strings.Contains(string(list.body), secret) || strings.Contains(string(list.body), f.admin) {
			t.Fatal("list shows a secret")
		}
		data := list.json(t)["data"].([]any)
		if len(data) != 3 { // admin, plain, and the new one; not the other workspace's
			t.Fatalf("list has %d keys, want 3: %s", len(data), list.body)
		}
		for _, item := range data {
			if item.(map[string]any)["workspace_id"] != f.ws.ID {
				t.Errorf("list shows a key of another workspace: %v", item)
			}
		}

		got := f.do(t, "GET", "/v1/api-keys/"+id, "", HeaderAPIKey, f.admin)
		if got.status != 200 || got.json(t)["name"] != "ci runner" || got.json(t)["key"] != nil {
			t.Fatalf("get: %d %s", got.status, got.body)
		}
		// Another workspace's admin sees nothing of it.
		checkError(t, f.do(t, "GET", "/v1/api-keys/"+id, "", HeaderAPIKey, f.otherKey), 404, "not_found", nil)
		checkError(t, f.do(t, "DELETE", "/v1/api-keys/"+id, "", HeaderAPIKey, f.otherKey), 404, "not_found", nil)

		del := f.do(t, "DELETE", "/v1/api-keys/"+id, "", HeaderAPIKey, f.admin)
		if del.status != 200 || del.json(t)["deleted"] != true {
			t.Fatalf("delete: %d %s", del.status, del.body)
		}
		// A deleted key stops working at once.
		checkError(t, f.do(t, "GET", "/v1/api-keys", "", HeaderAPIKey, secret), 401, "invalid_api_key", HeaderAPIKey)
		checkError(t, f.do(t, "DELETE", "/v1/api-keys/"+id, "", HeaderAPIKey, f.admin), 404, "not_found", nil)
	})

	t.Run("bad names", func(t *testing.T) {
		checkError(t, f.do(t, "POST", "/v1/api-keys", `{"name": "`+strings.Repeat("n", 201)+`"}`, jsonAs(f.admin)...), 400, "invalid_request", "name")
		checkError(t, f.do(t, "POST", "/v1/api-keys", `{"name": "a\u0000b"}`, jsonAs(f.admin)...), 400, "invalid_request", "name")
	})
}

// The admin lists page like the others: limit (1 to 100) and after, with has_more.
func TestAdminListsPage(t *testing.T) {
	f := newFixture(t, Options{})
	key := []string{HeaderAPIKey, f.admin}
	for _, path := range []string{"/v1/api-keys", "/v1/guardrails", "/v1/plugins"} {
		checkError(t, f.do(t, "GET", path+"?limit=0", "", key...), 400, "invalid_request", "limit")
		checkError(t, f.do(t, "GET", path+"?limit=101", "", key...), 400, "invalid_request", "limit")
	}
	// The workspace has two keys (admin and plain): one a page.
	var seen []string
	after := ""
	for range 3 {
		a := f.do(t, "GET", "/v1/api-keys?limit=1&after="+after, "", key...)
		var page struct {
			Data    []struct{ ID string } `json:"data"`
			HasMore bool                  `json:"has_more"`
		}
		if a.status != 200 || json.Unmarshal(a.body, &page) != nil || len(page.Data) > 1 {
			t.Fatalf("page after %q: %d %s", after, a.status, a.body)
		}
		if len(page.Data) == 0 {
			break
		}
		seen = append(seen, page.Data[0].ID)
		after = page.Data[0].ID
		if !page.HasMore {
			break
		}
	}
	if len(seen) != 2 || seen[0] >= seen[1] {
		t.Errorf("pages gave %v, want the two keys in ID order", seen)
	}
}
