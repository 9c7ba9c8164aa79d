package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/internal/sdkrun"
	"github.com/llmgw/gateway/internal/wasmtest"
)

type guardCase struct {
	name   string
	args   string            // the tool call's arguments (Text)
	tool   string            // "" means read_file
	params map[string]string // name → JSON; nil means pathParams
	call   *hostapi.Input    // overrides the tool-call input built from the fields above
	pass   bool
	data   string
	errSub string
}

var pathParams = map[string]string{"argument": `"path"`, "deny": `["/etc/", "..", "id_rsa"]`}

var cases = []guardCase{
	{name: "allowed path", args: `{"path":"/tmp/notes.txt","mode":"r"}`, pass: true},
	{name: "denied path", args: `{"path":"/etc/passwd"}`,
		data: `{"argument":"path","matched":["/etc/"],"reason":"denied argument value","tool":"read_file"}`},
	{name: "every match named, in deny order", args: `{"path":"/home/u/../../etc/ssh/id_rsa"}`,
		data: `{"argument":"path","matched":["/etc/","..","id_rsa"],"reason":"denied argument value","tool":"read_file"}`},
	{name: "escaped string decoded", args: `{"path":"\/etc\/shadow"}`,
		data: `{"argument":"path","matched":["/etc/"],"reason":"denied argument value","tool":"read_file"}`},
	{name: "other arguments ignored", args: `{"path":"/tmp/x","note":"/etc/passwd"}`, pass: true},
	{name: "argument absent", args: `{"mode":"r"}`, pass: true},
	{name: "no arguments", args: ``, pass: true},
	{name: "null arguments", args: `null`, pass: true},
	{name: "empty object", args: ` {} `, pass: true},
	{name: "nested key of the same name ignored", args: `{"options":{"path":"/etc/passwd"}}`, pass: true},
	{name: "strings inside an array value", args: `{"path":["/tmp/a","/etc/hosts"]}`,
		data: `{"argument":"path","matched":["/etc/"],"reason":"denied argument value","tool":"read_file"}`},
	{name: "strings inside an object value", args: `{"path":{"dir":"/etc/","file":"x"}}`,
		data: `{"argument":"path","matched":["/etc/"],"reason":"denied argument value","tool":"read_file"}`},
	{name: "a number never matches", args: `{"path":42}`, pass: true},
	{name: "duplicate key: the first one counts too", args: `{"path":"/etc/passwd","path":"/tmp/x"}`,
		data: `{"argument":"path","matched":["/etc/"],"reason":"denied argument value","tool":"read_file"}`},
	{name: "case-sensitive", args: `{"path":"/ETC/passwd"}`, pass: true},
	{name: "tool listed", args: `{"query":"DROP TABLE users"}`, tool: "sql",
		params: map[string]string{"argument": `"query"`, "deny": `["DROP TABLE"]`, "tools": `["sql","exec"]`},
		data:   `{"argument":"query","matched":["DROP TABLE"],"reason":"denied argument value","tool":"sql"}`},
	{name: "tool not listed passes", args: `{"query":"DROP TABLE users"}`, tool: "search",
		params: map[string]string{"argument": `"query"`, "deny": `["DROP TABLE"]`, "tools": `["sql"]`}, pass: true},
	{name: "empty tools list: no tool", args: `{"path":"/etc/passwd"}`,
		params: map[string]string{"argument": `"path"`, "deny": `["/etc/"]`, "tools": `[]`}, pass: true},

	{name: "array arguments", args: `["/etc/passwd"]`,
		data: `{"error":"the arguments are a JSON array, not an object","reason":"the tool's arguments are not a JSON object","tool":"read_file"}`},
	{name: "string arguments", args: `"/etc/passwd"`,
		data: `{"error":"the arguments are a JSON string, not an object","reason":"the tool's arguments are not a JSON object","tool":"read_file"}`},
	{name: "invalid JSON", args: `{"path": /etc/passwd}`,
		data: `{"error":"invalid character '/' looking for beginning of value","reason":"the tool's arguments are not a JSON object","tool":"read_file"}`},
	{name: "truncated object", args: `{"path":"/tmp/x"`,
		data: `{"error":"EOF","reason":"the tool's arguments are not a JSON object","tool":"read_file"}`},
	{name: "data after the object", args: `{"path":"/tmp/x"} {"path":"/etc/passwd"}`,
		data: `{"error":"the arguments have data after the object","reason":"the tool's arguments are not a JSON object","tool":"read_file"}`},

	{name: "argument missing", args: `{}`, params: map[string]string{"deny": `["x"]`}, errSub: `parameter "argument"`},
	{name: "argument not a string", args: `{}`, params: map[string]string{"argument": `1`, "deny": `["x"]`}, errSub: `parameter "argument" must be a non-empty string, not 1`},
	{name: "argument empty", args: `{}`, params: map[string]string{"argument": `""`, "deny": `["x"]`}, errSub: `parameter "argument"`},
	{name: "deny missing", args: `{}`, params: map[string]string{"argument": `"path"`}, errSub: `parameter "deny"`},
	{name: "deny empty", args: `{}`, params: map[string]string{"argument": `"path"`, "deny": `[]`}, errSub: `parameter "deny" must be a non-empty array`},
	{name: "deny has an empty string", args: `{}`, params: map[string]string{"argument": `"path"`, "deny": `["x",""]`}, errSub: `parameter "deny"`},
	{name: "deny not strings", args: `{}`, params: map[string]string{"argument": `"path"`, "deny": `"x"`}, errSub: `parameter "deny"`},
	{name: "tools not strings", args: `{}`, params: map[string]string{"argument": `"path"`, "deny": `["x"]`, "tools": `"sql"`}, errSub: `parameter "tools"`},

	{name: "model request", call: &hostapi.Input{Text: "/etc/passwd", CheckID: "toolguard.args", Stage: "before", Endpoint: "chat"},
		errSub: "use it in before_tool_call hooks, not on endpoint chat stage before"},
	{name: "after the call", call: &hostapi.Input{Text: "/etc/passwd", CheckID: "toolguard.args", Stage: "after", Endpoint: "mcp", Tool: "read_file"},
		errSub: "use it in before_tool_call hooks, not on endpoint mcp stage after"},
	{name: "unknown check name", call: &hostapi.Input{Text: "{}", CheckID: "toolguard.arg", Stage: "before", Endpoint: "mcp", Tool: "read_file"},
		errSub: "toolguard: unknown check toolguard.arg"},
}

func (tc guardCase) input() *hostapi.Input {
	params := tc.params
	if params == nil {
		params = pathParams
	}
	var kv []hostapi.KV
	for _, name := range []string{"argument", "deny", "tools"} {
		if v, ok := params[name]; ok {
			kv = append(kv, hostapi.KV{Key: name, Value: v})
		}
	}
	if tc.call != nil {
		in := *tc.call
		in.Params = kv
		return &in
	}
	tool := tc.tool
	if tool == "" {
		tool = "read_file"
	}
	return &hostapi.Input{Text: tc.args, Params: kv, CheckID: "toolguard.args", Stage: "before", Endpoint: "mcp", Tool: tool, MCPServer: "files"}
}

func (tc guardCase) check(t *testing.T, out hostapi.Output) {
	t.Helper()
	if tc.errSub != "" {
		if !strings.Contains(out.Error, tc.errSub) {
			t.Fatalf("Error = %q, want it to contain %q", out.Error, tc.errSub)
		}
		return
	}
	if out.Error != "" || out.Verdict != tc.pass || string(out.Data) != tc.data {
		t.Fatalf("out = {Verdict:%v Data:%s Error:%q}, want {Verdict:%v Data:%s}", out.Verdict, out.Data, out.Error, tc.pass, tc.data)
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, sdkrun.Run(hostapi.KindCheck, tc.input())) })
	}
}

func Test_main(t *testing.T) {
	plugin := wasmtest.Instantiate(t, wasmtest.Build(t, "."))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, plugin.MustCall(t, hostapi.KindCheck, tc.input(), nil)) })
	}
	if deps := wasmtest.Deps(t, "."); !reflect.DeepEqual(deps, wasmtest.GuestDeps) {
		t.Errorf("the plugin depends on %v, want only %v", deps, wasmtest.GuestDeps)
	}
}
