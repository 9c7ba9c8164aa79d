// Command goguest is the Go conformance guest: the checks of package conformance, written with sdk-guest.
package main

import (
	"errors"
	"strings"

	sdk "github.com/llmgw/gateway/sdk-guest"
)

func init() {
	sdk.HandleCheck(check)
	sdk.HandleCondition(func(in sdk.Input) bool {
		route, _ := in.Metadata("route")
		return route == "yes"
	})
}

func check(in sdk.Input) sdk.Result {
	_, name, _ := strings.Cut(in.CheckID, ".")
	switch name {
	case "echo":
		metadata := map[string]any{}
		for _, k := range in.MetadataKeys() {
			if _, done := metadata[k]; !done {
				metadata[k], _ = in.Metadata(k)
			}
		}
		params := map[string]any{}
		for _, n := range in.ParamNames() {
			if _, done := params[n]; !done {
				params[n], _ = in.Param(n)
			}
		}
		return sdk.Pass().
			With("text", in.Text).With("model", in.Model).With("stage", in.Stage).With("endpoint", in.Endpoint).
			With("tool", in.Tool).With("mcp_server", in.MCPServer).With("check_id", in.CheckID).
			With("metadata", metadata).With("params", params)
	case "fail":
		return sdk.Fail("conformance")
	case "transform":
		return sdk.Transform(upperASCII(in.Text))
	case "error":
		return sdk.Error(errors.New("conformance error"))
	case "field":
		path, _ := in.ParamString("path")
		if v, ok := sdk.RequestField(path); ok {
			return sdk.Pass().With("value", sdk.RawJSON(v))
		}
		return sdk.Pass().With("value", nil)
	}
	return sdk.Error(errors.New("unknown check " + name))
}

// upperASCII upper-cases a-z only: strings.ToUpper would touch other letters too, which the table forbids.
func upperASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func main() {}
