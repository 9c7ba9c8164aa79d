package routes

import (
	"fmt"
	"strings"
	"testing"
)

// The admin API of the MCP server registry, through the whole gateway.

func TestMCPServersAdminAPI(t *testing.T) {
	f := newFixture(t, Options{})
	const token, urlPass = "Bearer mcp-secret-token-4b7e", "urlpass-77"
	body := fmt.Sprintf(`{"id": "docs", "url": "https://bot:%s@mcp.example.com/mcp", "headers": {"Authorization": %q},
		"allow_tools": ["search", "fetch"]}`, urlPass, token)
	var answers []answer
	record := func(a answer) answer { answers = append(answers, a); return a }

	// Non-admin keys are refused on every operation.
	for _, m := range [][2]string{{"GET", "/v1/mcp-servers"}, {"POST", "/v1/mcp-servers"}, {"GET", "/v1/mcp-servers/docs"},
		{"PUT", "/v1/mcp-servers/docs"}, {"DELETE", "/v1/mcp-servers/docs"}} {
		checkError(t, f.adminJSON(t, m[0], m[1], f.plain, body), 403, "forbidden", nil)
	}

	created := okJSON(t, record(f.adminJSON(t, "POST", "/v1/mcp-servers", f.admin, body)))
	if created["object"] != "mcp_server" || created["id"] != "docs" || created["workspace_id"] != f.ws.ID ||
		created["url"] != "https://***@mcp.example.com/mcp" || fmt.Sprint(created["headers"]) != "map[Authorization:…4b7e]" ||
		fmt.Sprint(created["allow_tools"]) != "[search fetch]" || fmt.Sprint(created["deny_tools"]) != "[]" ||
		created["cost_per_call"] != 0.0 || created["created_at"] == nil || created["updated_at"] == nil {
		t.Errorf("created %v", created)
	}
	checkError(t, record(f.adminJSON(t, "POST", "/v1/mcp-servers", f.admin, body)), 409, "conflict", nil)

	got := okJSON(t, record(f.do(t, "GET", "/v1/mcp-servers/docs", "", HeaderAPIKey, f.admin)))
	if fmt.Sprint(got["headers"]) != "map[Authorization:…4b7e]" {
		t.Errorf("read %v", got)
	}
	list := okJSON(t, record(f.do(t, "GET", "/v1/mcp-servers", "", HeaderAPIKey, f.admin)))
	if ids := listSlugs(list, "id"); ids != "docs" || list["object"] != "list" {
		t.Errorf("list %v", list)
	}

	// Another workspace's admin key sees nothing and changes nothing.
	if l := okJSON(t, f.do(t, "GET", "/v1/mcp-servers", "", HeaderAPIKey, f.otherKey)); len(l["data"].([]any)) != 0 {
		t.Errorf("other workspace lists %v", l)
	}
	checkError(t, f.do(t, "GET", "/v1/mcp-servers/docs", "", HeaderAPIKey, f.otherKey), 404, "not_found", nil)
	checkError(t, f.adminJSON(t, "PUT", "/v1/mcp-servers/docs", f.otherKey, body), 404, "not_found", nil)
	checkError(t, f.do(t, "DELETE", "/v1/mcp-servers/docs", "", HeaderAPIKey, f.otherKey), 404, "not_found", nil)

	// Refused addresses and headers name their field.
	for _, tc := range []struct{ body, code, param string }{
		{`{"id": "meta", "url": "http://169.254.169.254/latest"}`, "host_not_allowed", "url"},
		{`{"id": "lan", "url": "http://10.1.2.3/mcp"}`, "host_not_allowed", "url"},
		{`{"id": "ftp", "url": "ftp://mcp.example.com/"}`, "invalid_request", "url"},
		{`{"id": "h", "url": "https://mcp.example.com/mcp", "headers": {"Connection": "close-it-now"}}`, "invalid_request", "headers.Connection"},
		{`{"id": "h", "url": "https://mcp.example.com/mcp", "headers": {"X-Gateway-Api-Key": "` + f.admin + `"}}`, "invalid_request", "headers.X-Gateway-Api-Key"},
		{`{"id": "c", "url": "https://mcp.example.com/mcp", "cost_per_call": -0.02}`, "invalid_request", "cost_per_call"},
		{`{"id": "c", "url": "https://mcp.example.com/mcp", "cost_per_call": "0.02"}`, "invalid_request", "cost_per_call"},
	} {
		checkError(t, record(f.adminJSON(t, "POST", "/v1/mcp-servers", f.admin, tc.body)), 400, tc.code, tc.param)
	}

	// PUT: the masked header sent back keeps the stored value (the store holds the token still).
	replaced := okJSON(t, record(f.adminJSON(t, "PUT", "/v1/mcp-servers/docs", f.admin,
		`{"url": "https://mcp.example.com/v2", "headers": {"Authorization": "…4b7e"}, "deny_tools": ["drop"], "cost_per_call": 0.02}`)))
	if fmt.Sprint(replaced["headers"]) != "map[Authorization:…4b7e]" || replaced["url"] != "https://mcp.example.com/v2" ||
		replaced["cost_per_call"] != 0.02 ||
		fmt.Sprint(replaced["allow_tools"]) != "[]" || fmt.Sprint(replaced["deny_tools"]) != "[drop]" {
		t.Errorf("replaced %v", replaced)
	}
	if srv, err := f.store.MCPServers.Get(f.ws.ID, "docs"); err != nil || srv.Headers["Authorization"] != token || srv.CostPerCall != 0.02 {
		t.Errorf("stored after PUT: %+v, %v", srv, err)
	}
	checkError(t, f.adminJSON(t, "PUT", "/v1/mcp-servers/nope", f.admin, `{"url": "https://mcp.example.com/mcp"}`), 404, "not_found", nil)

	okJSON(t, f.do(t, "DELETE", "/v1/mcp-servers/docs", "", HeaderAPIKey, f.admin))
	checkError(t, f.do(t, "GET", "/v1/mcp-servers/docs", "", HeaderAPIKey, f.admin), 404, "not_found", nil)
	checkError(t, f.do(t, "DELETE", "/v1/mcp-servers/docs", "", HeaderAPIKey, f.admin), 404, "not_found", nil)

	for _, a := range answers {
		for _, secret := range []string{"mcp-secret-token", urlPass, f.admin} {
			if strings.Contains(string(a.body), secret) {
				t.Fatalf("%q in an answer: %s", secret, a.body)
			}
		}
	}
}
