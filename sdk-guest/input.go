package sdk

import (
	"strconv"

	"github.com/llmgw/gateway/sdk-guest/internal/hostapi"
)

// Input is what a handler receives for one call. Its strings may be kept after the handler returns.
type Input struct {
	// Text is the text to check: for input checks (Stage "before") the messages' text joined with "\n", for
	// output checks (Stage "after") the answer's text. For a tool call (see IsToolCall) it is the call's arguments
	// as JSON text (Stage "before", a JSON object) or the result's text (Stage "after").
	Text string
	// Model is the request's model.
	Model string
	// CheckID is the ID of the check being run, e.g. "pii.detect": the text after the plugin's ID is free, for
	// the plugin to switch on. It is empty for a routing condition.
	CheckID string
	// Stage is "before" (the request), "after" (the response) or "condition" (a routing condition).
	Stage string
	// Endpoint is "chat", "completions" or "embeddings" for a model request, "mcp" for a tool call.
	Endpoint string
	// Tool is the called tool's bare name as the upstream MCP server knows it ("read_file", not the
	// "files__read_file" that /mcp lists). It is set only for a tool call (Endpoint "mcp").
	Tool string
	// MCPServer is the registry ID of the MCP server the tool call goes to ("files"). It is set only for a tool
	// call (Endpoint "mcp").
	MCPServer string

	metadata []hostapi.KV
	params   []hostapi.KV
}

// NewInput returns the Input a handler would get for in. Use it to call a handler in a native test; Run goes
// through the wire encoding as well.
func NewInput(in *WireInput) Input {
	kv := make([]hostapi.KV, 0, len(in.Metadata)+len(in.Params))
	kv = append(kv, in.Metadata...)
	kv = append(kv, in.Params...)
	n := len(in.Metadata)
	return Input{
		Text: in.Text, Model: in.Model, CheckID: in.CheckID, Stage: in.Stage, Endpoint: in.Endpoint,
		Tool: in.Tool, MCPServer: in.MCPServer,
		metadata: kv[:n:n], params: kv[n:],
	}
}

// IsToolCall reports whether the check runs on an MCP tool call (hooks before_tool_call and after_tool_call)
// rather than a model request: then Tool and MCPServer name the call, and Text holds its arguments (Stage
// "before") or its result (Stage "after").
func (in Input) IsToolCall() bool { return in.Endpoint == "mcp" }

func lookup(kv []hostapi.KV, key string) (string, bool) {
	for _, e := range kv {
		if e.Key == key {
			return e.Value, true
		}
	}
	return "", false
}

// Metadata returns the request metadata value of key (the first one, if the key repeats).
func (in Input) Metadata(key string) (string, bool) { return lookup(in.metadata, key) }

// MetadataKeys returns the metadata keys in the order sent.
func (in Input) MetadataKeys() []string { return keys(in.metadata) }

// ParamNames returns the names of the check's parameters in the order sent.
func (in Input) ParamNames() []string { return keys(in.params) }

func keys(kv []hostapi.KV) []string {
	out := make([]string, len(kv))
	for i, e := range kv {
		out[i] = e.Key
	}
	return out
}

// Param returns the JSON text of parameter name as configured, e.g. `10`, `"abc"` or `["a","b"]`.
func (in Input) Param(name string) (string, bool) { return lookup(in.params, name) }

// ParamString returns parameter name when it is a JSON string. ok is false when the parameter is absent or not
// a string.
func (in Input) ParamString(name string) (string, bool) {
	raw, ok := in.Param(name)
	if !ok {
		return "", false
	}
	return jsonString(raw)
}

// ParamFloat returns parameter name when it is a JSON number.
func (in Input) ParamFloat(name string) (float64, bool) {
	raw, ok := in.Param(name)
	if !ok {
		return 0, false
	}
	lit, ok := jsonNumber(raw)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(lit, 64)
	return f, err == nil
}

// ParamInt returns parameter name when it is a JSON number with an integer value that fits in an int64 (10 and
// 1e3 are; 1.5 is not).
func (in Input) ParamInt(name string) (int64, bool) {
	raw, ok := in.Param(name)
	if !ok {
		return 0, false
	}
	lit, ok := jsonNumber(raw)
	if !ok {
		return 0, false
	}
	if i, err := strconv.ParseInt(lit, 10, 64); err == nil {
		return i, true
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || f != float64(int64(f)) || f < -(1<<63) || f >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}

// ParamBool returns parameter name when it is true or false.
func (in Input) ParamBool(name string) (bool, bool) {
	raw, ok := in.Param(name)
	if !ok {
		return false, false
	}
	return jsonBool(raw)
}

// ParamStrings returns parameter name when it is a JSON array of strings (an empty array gives an empty,
// non-nil slice).
func (in Input) ParamStrings(name string) ([]string, bool) {
	raw, ok := in.Param(name)
	if !ok {
		return nil, false
	}
	return jsonStrings(raw)
}
