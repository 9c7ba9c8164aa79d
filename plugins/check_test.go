package plugins

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/hostapi"
)

func TestWasmCheckAndCondition(t *testing.T) {
	e := newEngine(t, testOptions(t))
	ctx := context.Background()
	if err := e.Load(ctx, "ws-a", "p", guest(t, "basic")); err != nil {
		t.Fatal(err)
	}
	c, err := e.CheckFor("ws-a", "p", "detect", json.RawMessage(`{"b": 2, "a": "x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.checkID != "p.detect" || len(c.params) != 2 || c.params[0].Key != "a" || c.params[0].Value != `"x"` {
		t.Fatalf("bound check %+v", c)
	}
	// The basic guest knows no "p.detect": it reports a check error, which reaches the caller as Output.Error.
	out, err := c.Check(ctx, &hostapi.Input{Text: "hello"}, nil)
	if err != nil || !strings.Contains(out.Error, `"p.detect"`) {
		t.Fatalf("check: %+v, %v", out, err)
	}
	// Another workspace cannot reach the plugin.
	other, _ := e.CheckFor("ws-b", "p", "detect", nil)
	if _, err := other.Check(ctx, &hostapi.Input{}, nil); err == nil {
		t.Fatal("a check reached another workspace's plugin")
	}
	if _, err := e.CheckFor("ws-a", "a/b", "x", nil); err == nil {
		t.Fatal("an invalid plugin id was accepted")
	}
	if _, err := e.CheckFor("ws-a", "p", "x", json.RawMessage(`[1]`)); err == nil {
		t.Fatal("parameters that are not an object were accepted")
	}
	for text, want := range map[string]bool{"say yes please": true, "no": false} {
		got, err := e.Condition(ctx, "ws-a", "p", &hostapi.Input{Text: text}, nil)
		if err != nil || got != want {
			t.Errorf("condition on %q = %v, %v; want %v", text, got, err, want)
		}
	}
}

// A tool call's Tool and MCPServer reach the guest through WasmCheck, beside the text, stage and endpoint the
// hook sets and the check id and parameters WasmCheck binds.
func TestWasmCheckToolCall(t *testing.T) {
	opts := testOptions(t)
	opts.CallTimeout = time.Minute // the test is not about deadlines, and -race on shared cores is slow
	e := newEngine(t, opts)
	ctx := context.Background()
	if err := e.Load(ctx, "ws-a", "p", guest(t, "basic")); err != nil {
		t.Fatal(err)
	}
	c, err := e.CheckFor("ws-a", "p", "echo", json.RawMessage(`{"argument": "path"}`))
	if err != nil {
		t.Fatal(err)
	}
	in := &hostapi.Input{Text: `{"path":"/etc/passwd"}`, Stage: "before", Endpoint: "mcp", Tool: "read_file", MCPServer: "files"}
	out, err := c.Check(ctx, in, nil)
	if err != nil || out.Error != "" {
		t.Fatalf("check: %+v, %v", out, err)
	}
	var got struct {
		Text, Stage, Endpoint, Tool string
		MCPServer                   string `json:"mcp_server"`
		CheckID                     string `json:"check_id"`
		Params                      map[string]string
	}
	if err := json.Unmarshal(out.Data, &got); err != nil {
		t.Fatalf("data %s: %v", out.Data, err)
	}
	if got.Text != in.Text || got.Stage != "before" || got.Endpoint != "mcp" || got.Tool != "read_file" || got.MCPServer != "files" ||
		got.CheckID != "p.echo" || got.Params["argument"] != `"path"` {
		t.Errorf("echo = %s", out.Data)
	}
	if in.CheckID != "" || in.Params != nil {
		t.Errorf("Check changed the caller's input: %+v", in)
	}
	// A model request carries neither field.
	out, err = c.Check(ctx, &hostapi.Input{Text: "hi", Stage: "before", Endpoint: "chat"}, nil)
	if err != nil || !strings.Contains(string(out.Data), `"tool":"","mcp_server":""`) {
		t.Fatalf("model request: %s, %v", out.Data, err)
	}
}
