// Command toolguard is an example check for MCP tool calls: in a before_tool_call hook it fails a call when one
// named argument holds a denied string (a path under /etc/, a DROP TABLE), so the upstream server is never
// called.
//
// Build it with:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o toolguard.wasm .
//
// Check id "<plugin>.args" (toolguard.args when uploaded as plugin toolguard). Parameters: "argument" (a
// string), "deny" (an array of strings) and "tools" (an array of strings, optional). See README.md.
package main

import (
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"

	sdk "github.com/llmgw/gateway/sdk-guest"
)

func init() { sdk.HandleCheck(check) }

func main() {}

// params are a check's parameters, validated.
type params struct {
	argument string
	deny     []string
	tools    []string // nil: every tool
}

func readParams(in sdk.Input) (params, error) {
	var p params
	raw, ok := in.Param("argument")
	if !ok {
		return p, errors.New(`toolguard: parameter "argument" (the name of a top-level argument, e.g. "path") is required`)
	}
	if p.argument, ok = in.ParamString("argument"); !ok || p.argument == "" {
		return p, errors.New(`toolguard: parameter "argument" must be a non-empty string, not ` + raw)
	}
	if raw, ok = in.Param("deny"); !ok {
		return p, errors.New(`toolguard: parameter "deny" (an array of the strings to deny) is required`)
	}
	// An empty entry is contained in every string: it would deny every call, which is surely a mistake.
	if p.deny, ok = in.ParamStrings("deny"); !ok || len(p.deny) == 0 || slices.Contains(p.deny, "") {
		return p, errors.New(`toolguard: parameter "deny" must be a non-empty array of non-empty strings, not ` + raw)
	}
	if raw, ok = in.Param("tools"); ok {
		if p.tools, ok = in.ParamStrings("tools"); !ok {
			return p, errors.New(`toolguard: parameter "tools" must be an array of tool names, not ` + raw)
		}
	}
	return p, nil
}

func check(in sdk.Input) sdk.Result {
	if _, name, _ := strings.Cut(in.CheckID, "."); name != "args" {
		return sdk.Error(errors.New("toolguard: unknown check " + in.CheckID + " (this plugin has <plugin>.args)"))
	}
	p, err := readParams(in)
	if err != nil {
		return sdk.Error(err)
	}
	// Anywhere else the text is not a tool's arguments: say so rather than pass silently.
	if !in.IsToolCall() || in.Stage != "before" {
		return sdk.Error(errors.New("toolguard: " + in.CheckID + " checks tool-call arguments: use it in before_tool_call hooks, not on endpoint " +
			in.Endpoint + " stage " + in.Stage))
	}
	if p.tools != nil && !slices.Contains(p.tools, in.Tool) {
		return sdk.Pass()
	}
	values, err := argumentValues(in.Text, p.argument)
	if err != nil {
		return sdk.Fail("the tool's arguments are not a JSON object").With("tool", in.Tool).With("error", err)
	}
	var matched []string
	for _, d := range p.deny {
		for _, v := range values {
			if strings.Contains(v, d) {
				matched = append(matched, d)
				break
			}
		}
	}
	if matched == nil {
		return sdk.Pass()
	}
	return sdk.Fail("denied argument value").With("tool", in.Tool).With("argument", p.argument).With("matched", matched)
}

// argumentValues returns the strings of the top-level argument name in the JSON object text: the value itself
// when it is a string, or every string inside it when it is an array or an object. Every occurrence of name
// counts: JSON parsers disagree on which of two equal keys wins, and the upstream server may read either. No
// arguments at all (an empty text or null) is an object without the argument.
func argumentValues(text, name string) ([]string, error) {
	if t := strings.TrimSpace(text); t == "" || t == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(text))
	if tok, err := dec.Token(); err != nil {
		return nil, err
	} else if tok != json.Delim('{') {
		return nil, errors.New("the arguments are a JSON " + kind(tok) + ", not an object")
	}
	var values []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if tok == name {
			values = appendStrings(values, v)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("the arguments have data after the object")
	}
	return values, nil
}

// appendStrings appends the strings in v, a value decoded by encoding/json.
func appendStrings(dst []string, v any) []string {
	switch v := v.(type) {
	case string:
		dst = append(dst, v)
	case []any:
		for _, e := range v {
			dst = appendStrings(dst, e)
		}
	case map[string]any:
		for _, e := range v {
			dst = appendStrings(dst, e)
		}
	}
	return dst
}

func kind(tok json.Token) string {
	switch tok.(type) {
	case json.Delim:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	}
	return "value"
}
