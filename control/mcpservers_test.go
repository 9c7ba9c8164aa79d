package control

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/netguard"
	"github.com/llmgw/gateway/storage"
)

// wantBadRequest asserts a 400 whose param is param, and that its message shows none of hidden.
func wantBadRequest(t *testing.T, err error, param string, hidden ...string) {
	t.Helper()
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Status != 400 || ge.Param != param {
		t.Fatalf("error %v (%#v), want a 400 naming %q", err, ge, param)
	}
	for _, h := range hidden {
		if strings.Contains(ge.Message, h) {
			t.Errorf("the message shows %q: %s", h, ge.Message)
		}
	}
}

// TestMCPServerValidation: each wrong field is a 400 naming it, on create; no message shows a header value or
// the url's password.
func TestMCPServerValidation(t *testing.T) {
	f := newFixture(t, Options{})
	long := strings.Repeat("t", MaxMCPToolNameLength+1)
	many := `"` + strings.Repeat(`x", "`, MaxMCPToolNames) + `x"`
	headers := make([]string, MaxMCPHeaders+1)
	for i := range headers {
		headers[i] = fmt.Sprintf(`"X-H%d": "v"`, i)
	}
	for _, tc := range []struct{ body, param string }{
		{`{"url": "https://mcp.example.com/mcp"}`, "id"},
		{`{"id": "bad id", "url": "https://mcp.example.com/mcp"}`, "id"},
		{`{"id": "a__b", "url": "https://mcp.example.com/mcp"}`, "id"},
		{`{"id": "s"}`, "url"},
		{`{"id": "s", "url": "ftp://u:hunter2@mcp.example.com/"}`, "url"},
		{`{"id": "s", "url": "https://u:hunter2@"}`, "url"},
		{`{"id": "s", "url": "http://u:hunter2@169.254.169.254/mcp"}`, "url"},
		{`{"id": "s", "url": "http://10.0.0.7:8080/mcp"}`, "url"},
		{`{"id": "s", "url": "http://[fe80::1]/mcp"}`, "url"},
		{`{"id": "s", "url": "http://127.1/mcp"}`, "url"},
		{`{"id": "s", "url": 3}`, "url"},
		{`{"id": "s", "url": "https://m.example.com", "headers": {"Bad Name": "hunter2-value"}}`, "headers.Bad Name"},
		{`{"id": "s", "url": "https://m.example.com", "headers": {"host": "hunter2-value"}}`, "headers.host"},
		{`{"id": "s", "url": "https://m.example.com", "headers": {"Mcp-Session-Id": "hunter2-value"}}`, "headers.Mcp-Session-Id"},
		{`{"id": "s", "url": "https://m.example.com", "headers": {"x-gateway-api-key": "hunter2-value"}}`, "headers.x-gateway-api-key"},
		{`{"id": "s", "url": "https://m.example.com", "headers": {"Authorization": "Bearer hunter2\r\nX: y"}}`, "headers.Authorization"},
		{`{"id": "s", "url": "https://m.example.com", "headers": {"Authorization": ""}}`, "headers.Authorization"},
		{`{"id": "s", "url": "https://m.example.com", "headers": {"Authorization": "` + strings.Repeat("h", MaxMCPHeaderValue+1) + `"}}`, "headers.Authorization"},
		{`{"id": "s", "url": "https://m.example.com", "headers": {"Authorization": 7}}`, "headers.Authorization"},
		{`{"id": "s", "url": "https://m.example.com", "headers": {"Authorization": "a-hunter2", "authorization": "b-hunter2"}}`, "headers.authorization"},
		{`{"id": "s", "url": "https://m.example.com", "headers": {` + strings.Join(headers, ", ") + `}}`, "headers"},
		{`{"id": "s", "url": "https://m.example.com", "headers": []}`, "headers"},
		{`{"id": "s", "url": "https://m.example.com", "allow_tools": ["ok", ""]}`, "allow_tools[1]"},
		{`{"id": "s", "url": "https://m.example.com", "deny_tools": ["` + long + `"]}`, "deny_tools[0]"},
		{`{"id": "s", "url": "https://m.example.com", "deny_tools": [3]}`, "deny_tools[0]"},
		{`{"id": "s", "url": "https://m.example.com", "allow_tools": [` + many + `]}`, "allow_tools"},
		{`{"id": "s", "url": "https://m.example.com", "workspace": "default"}`, "workspace"},
		{`{"id": "s", "url": "https://m.example.com", "cost_per_call": -0.01}`, "cost_per_call"},
		{`{"id": "s", "url": "https://m.example.com", "cost_per_call": "0.02"}`, "cost_per_call"},
		{`{"id": "s", "url": "https://m.example.com", "cost_per_call": 1000.01}`, "cost_per_call"},
		{`{"id": "s", "url": "https://m.example.com", "cost_per_call": 1e400}`, "cost_per_call"},
	} {
		_, err := f.plane.CreateMCPServer(ctx, f.caller, []byte(tc.body))
		wantBadRequest(t, err, tc.param, "hunter2")
	}
	if list, _ := f.store.MCPServers.List(f.caller.WorkspaceID); len(list) != 0 {
		t.Errorf("refused bodies were stored: %v", list)
	}
}

// TestMCPServerAddressPolicy: the operator's policy decides which literal addresses a url may have; a host
// name is left to the connection's check.
func TestMCPServerAddressPolicy(t *testing.T) {
	strict := newFixture(t, Options{})
	open := newFixture(t, Options{HostPolicy: &netguard.Policy{AllowPrivate: true}})
	for _, tc := range []struct {
		url          string
		strict, open bool // accepted
	}{
		{"http://127.0.0.1:3000/mcp", true, true},
		{"https://mcp.example.com/mcp", true, true},
		{"http://192.168.1.20/mcp", false, true},
		{"http://169.254.169.254/latest", false, false},
		{"http://0.0.0.0/mcp", false, false},
	} {
		for _, p := range []struct {
			f    *fixture
			want bool
		}{{strict, tc.strict}, {open, tc.open}} {
			_, err := p.f.plane.UpsertMCPServer(ctx, p.f.caller, &storage.MCPServer{ID: "s", URL: tc.url})
			if p.want && err != nil {
				t.Errorf("%s: refused: %v", tc.url, err)
			}
			if !p.want {
				wantBadRequest(t, err, "url")
			}
		}
	}
}

// TestMCPServerLifecycle: create, 409 on a taken id, replace keeping a masked header and dropping one left
// out, a masked value that is not the stored one refused, upsert idempotent, delete then 404; headers are
// stored under canonical names.
func TestMCPServerLifecycle(t *testing.T) {
	f := newFixture(t, Options{})
	const token = "Bearer upstream-token-9c2f"
	body := fmt.Sprintf(`{"id": "docs", "url": "https://mcp.example.com/mcp", "headers": {"authorization": %q, "X-Team": "team-blue-42"},
		"allow_tools": ["search"], "deny_tools": ["drop"]}`, token)
	srv, err := f.plane.CreateMCPServer(ctx, f.caller, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if srv.Headers["Authorization"] != token || srv.WorkspaceID != f.caller.WorkspaceID || srv.AllowTools[0] != "search" {
		t.Fatalf("created %+v", srv)
	}
	if got := MaskMCPHeaders(srv); got["Authorization"] != "…9c2f" || got["X-Team"] != "…e-42" {
		t.Errorf("masked %v", got)
	}
	_, err = f.plane.CreateMCPServer(ctx, f.caller, []byte(body))
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Status != 409 {
		t.Fatalf("second create: %v", err)
	}

	// The masked Authorization is kept; X-Team, left out, is gone; the id comes from the path.
	srv, err = f.plane.ReplaceMCPServer(ctx, f.caller, "docs", []byte(`{"url": "https://mcp2.example.com/mcp", "headers": {"Authorization": "…9c2f"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if srv.Headers["Authorization"] != token || len(srv.Headers) != 1 || srv.URL != "https://mcp2.example.com/mcp" || srv.AllowTools != nil {
		t.Errorf("replaced %+v", srv)
	}
	_, err = f.plane.ReplaceMCPServer(ctx, f.caller, "docs", []byte(`{"url": "https://mcp2.example.com/mcp", "headers": {"Authorization": "…0000"}}`))
	wantBadRequest(t, err, "headers.Authorization")
	_, err = f.plane.ReplaceMCPServer(ctx, f.caller, "docs", []byte(`{"id": "other", "url": "https://mcp2.example.com/mcp"}`))
	wantBadRequest(t, err, "id")
	if _, err = f.plane.ReplaceMCPServer(ctx, f.caller, "nope", []byte(`{"url": "https://mcp2.example.com/mcp"}`)); !errors.As(err, &ge) || ge.Status != 404 {
		t.Errorf("replace of a missing server: %v", err)
	}

	entry := &storage.MCPServer{ID: "boot", URL: "http://127.0.0.1:9/mcp", Headers: map[string]string{"x-api-key": "key-0123456789"}}
	for i, want := range []bool{true, false} {
		if changed, err := f.plane.UpsertMCPServer(ctx, f.caller, entry); err != nil || changed != want {
			t.Errorf("upsert %d = %v, %v; want %v", i, changed, err, want)
		}
	}
	if got, _ := f.plane.GetMCPServer(ctx, f.caller, "boot"); got.Headers["X-Api-Key"] != "key-0123456789" {
		t.Errorf("upserted %+v", got)
	}
	list, more, err := f.plane.ListMCPServers(ctx, f.caller, Page{Limit: 1})
	if err != nil || len(list) != 1 || list[0].ID != "boot" || !more {
		t.Errorf("list = %v, %v, %v", list, more, err)
	}

	if err := f.plane.DeleteMCPServer(ctx, f.caller, "docs"); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{f.plane.DeleteMCPServer(ctx, f.caller, "docs"), func() error { _, err := f.plane.GetMCPServer(ctx, f.caller, "docs"); return err }()} {
		if !errors.As(err, &ge) || ge.Status != 404 {
			t.Errorf("after delete: %v", err)
		}
	}
}

// TestMCPServerCostPerCall: cost_per_call is optional (0), kept through create, replace and upsert, and bounded on
// every path, bootstrap entries included.
func TestMCPServerCostPerCall(t *testing.T) {
	f := newFixture(t, Options{})
	srv, err := f.plane.CreateMCPServer(ctx, f.caller, []byte(`{"id": "free", "url": "https://m.example.com/mcp", "cost_per_call": null}`))
	if err != nil || srv.CostPerCall != 0 {
		t.Fatalf("created %+v, %v", srv, err)
	}
	srv, err = f.plane.CreateMCPServer(ctx, f.caller, []byte(`{"id": "paid", "url": "https://m.example.com/mcp", "cost_per_call": 0.02}`))
	if err != nil || srv.CostPerCall != 0.02 {
		t.Fatalf("created %+v, %v", srv, err)
	}
	srv, err = f.plane.ReplaceMCPServer(ctx, f.caller, "paid", []byte(`{"url": "https://m.example.com/mcp", "cost_per_call": 1000}`))
	if err != nil || srv.CostPerCall != 1000 {
		t.Fatalf("replaced %+v, %v", srv, err)
	}
	_, err = f.plane.ReplaceMCPServer(ctx, f.caller, "paid", []byte(`{"url": "https://m.example.com/mcp", "cost_per_call": -1}`))
	wantBadRequest(t, err, "cost_per_call")
	srv, err = f.plane.ReplaceMCPServer(ctx, f.caller, "paid", []byte(`{"url": "https://m.example.com/mcp"}`))
	if err != nil || srv.CostPerCall != 0 {
		t.Fatalf("replaced without cost_per_call: %+v, %v (PUT replaces the whole record)", srv, err)
	}
	for _, bad := range []float64{-0.5, 1000.5, math.NaN(), math.Inf(1)} {
		_, err := f.plane.UpsertMCPServer(ctx, f.caller, &storage.MCPServer{ID: "boot", URL: "https://m.example.com/mcp", CostPerCall: bad})
		wantBadRequest(t, err, "cost_per_call")
	}
	if _, err := f.plane.UpsertMCPServer(ctx, f.caller, &storage.MCPServer{ID: "boot", URL: "https://m.example.com/mcp", CostPerCall: 0.5}); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.plane.GetMCPServer(ctx, f.caller, "boot"); got.CostPerCall != 0.5 {
		t.Errorf("upserted %+v", got)
	}
}
