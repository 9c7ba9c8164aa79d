package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpHeaders sends a gateway key as a bearer token and gateway headers on every request of an MCP client, as
// Claude Code's --header or Cursor's "headers" do.
type mcpHeaders map[string]string

func (h mcpHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPGatewayThroughTheBinary: an upstream MCP server from the bootstrap file, the toolguard example uploaded
// as a plugin, and a saved config whose before_tool_call denies by the arguments and whose after_tool_call
// redacts. An SDK client lists and calls through /mcp; the denied call never reaches the server; the calls are in
// the request log and the metrics; another workspace sees none of it; a refused address is a 400 naming url.
func TestMCPGatewayThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a wasm guest")
	}
	toolguard := buildExample(t, "toolguard")

	var reads atomic.Int32
	upstream := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
	upstream.AddTool(&mcp.Tool{Name: "read_file", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			reads.Add(1)
			var args struct{ Path string }
			json.Unmarshal(req.Params.Arguments, &args)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: args.Path + ": card 4111-1111-1111-1111"}}}, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return upstream }, nil))
	defer up.Close()

	dir := t.TempDir()
	boot := writeFile(t, dir, "b.json", `{
		"workspaces": [{"id": "0b6b8c1e-7a51-4a77-9d55-1f0c2a4e7b10", "slug": "team", "organisation_id": "3d1f6a0e-2c4b-4b8e-8f6a-5e7d9c1b2a30"}],
		"api_keys": [{"key": "gw-mcp-admin", "admin": true}, {"key": "gw-mcp-team", "workspace": "team", "admin": true}],
		"mcp_servers": [{"id": "files", "url": "`+up.URL+`", "headers": {"Authorization": "Bearer upstream-secret-7"}}]
	}`)
	p := startGateway(t, nil, "--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--bootstrap", boot,
		"--metrics-listen", "127.0.0.1:0")
	if p.base == "" {
		t.Fatalf("start failed: %v", p.err)
	}
	if status, body := putPlugin(t, p.base, "gw-mcp-admin", "toolguard", toolguard); status != 200 {
		t.Fatalf("upload: %d %v", status, body)
	}
	if status, body, _ := call(t, "POST", p.base+"/v1/configs", "gw-mcp-admin", `{"id": "tools", "config": {
		"before_tool_call": [{"id": "no-etc", "checks": [{"id": "toolguard.args", "parameters": {"argument": "path", "deny": ["/etc/"]}}], "on_fail": {"deny": true}}],
		"after_tool_call": [{"id": "redact-cards", "checks": [{"id": "default.regexReplace", "parameters": {"rule": "\\d{4}-\\d{4}-\\d{4}-\\d{4}", "replacement": "[card]"}}]}]}}`); status != 200 && status != 201 {
		t.Fatalf("save config: %d %v", status, body)
	}
	if status, body, _ := call(t, "POST", p.base+"/v1/mcp-servers", "gw-mcp-admin", `{"id": "meta", "url": "http://169.254.169.254/mcp"}`); status != 400 ||
		body["error"].(map[string]any)["param"] != "url" {
		t.Errorf("metadata address: %d %v", status, body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func(headers mcpHeaders) *mcp.ClientSession {
		client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.base + "/mcp",
			HTTPClient: &http.Client{Transport: headers}, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	cs := connect(mcpHeaders{"Authorization": "Bearer gw-mcp-admin", "x-gateway-config": "tools"})
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "files__read_file" {
		t.Fatalf("tools/list: %v %+v", err, tools)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__read_file", Arguments: map[string]string{"path": "/etc/passwd"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `hook "no-etc"`) {
		t.Fatalf("call denied by the wasm check: %v %+v", err, res)
	}
	if n := reads.Load(); n != 0 {
		t.Fatalf("the denied call reached the server (%d calls)", n)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__read_file", Arguments: map[string]string{"path": "/tmp/notes"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "/tmp/notes: card [card]" {
		t.Fatalf("allowed call: %v %+v", err, res)
	}

	team := connect(mcpHeaders{"x-gateway-api-key": "gw-mcp-team"})
	if tools, err := team.ListTools(ctx, nil); err != nil || len(tools.Tools) != 0 {
		t.Errorf("another workspace's tools: %v %+v", err, tools)
	}
	if _, err := team.CallTool(ctx, &mcp.CallToolParams{Name: "files__read_file"}); err == nil {
		t.Error("another workspace called the server's tool")
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("server calls %d, want 1", n)
	}

	// The request log and the metrics, as an operator reads them.
	var entries []any
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		_, body, _ := call(t, "GET", p.base+"/v1/logs?tool=read_file&mcp_server=files", "gw-mcp-admin", "")
		if entries, _ = body["data"].([]any); len(entries) == 2 {
			break
		}
	}
	if len(entries) != 2 {
		t.Fatalf("log entries: %v", entries)
	}
	got := map[float64]bool{}
	for _, e := range entries {
		m := e.(map[string]any)
		got[m["status"].(float64)] = true
		if m["endpoint"] != "/mcp" || m["tool"] != "read_file" || m["mcp_server"] != "files" {
			t.Errorf("entry %v", m)
		}
	}
	if !got[446] || !got[200] {
		t.Errorf("statuses %v, want 446 and 200", got)
	}
	m := metricsLine.FindStringSubmatch(p.stderr.String())
	if m == nil {
		t.Fatalf("no metrics listener in the log")
	}
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`gateway_tool_calls_total{server="files",status="denied",tool="read_file"} 1`,
		`gateway_tool_calls_total{server="files",status="ok",tool="read_file"} 1`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(p.stderr.String(), "upstream-secret-7") || strings.Contains(p.stdout.String(), "upstream-secret-7") {
		t.Error("the server's header reached the gateway's output")
	}
	if !strings.Contains(p.stderr.String(), `msg="tool call"`) && !strings.Contains(p.stderr.String(), `"msg":"tool call"`) {
		t.Errorf("no tool call log line:\n%s", p.stderr)
	}
}
