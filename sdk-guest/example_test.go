package sdk_test

import (
	"fmt"
	"strings"

	sdk "github.com/llmgw/gateway/sdk-guest"
)

// A plugin registers its handlers in init: in a -buildmode=c-shared module main never runs.
func init() {
	sdk.HandleCheck(func(in sdk.Input) sdk.Result {
		words, _ := in.ParamStrings("words")
		for _, w := range words {
			if strings.Contains(strings.ToLower(in.Text), w) {
				return sdk.Fail("deny-listed word").With("word", w)
			}
		}
		if strings.Contains(in.Text, "\t") {
			return sdk.Transform(strings.ReplaceAll(in.Text, "\t", " "))
		}
		return sdk.Pass()
	})
	sdk.HandleCondition(func(in sdk.Input) bool {
		min, ok := in.ParamInt("min_chars")
		return ok && int64(len(in.Text)) >= min
	})
}

// Run calls the registered check through the wire encoding, as the gateway does, so a plugin can be tested
// natively with go test.
func ExampleRun() {
	params := []sdk.KV{{Key: "words", Value: `["secret", "internal"]`}}
	for _, text := range []string{"hello", "this is SECRET", "a\tb"} {
		out := sdk.Run(sdk.KindCheck, &sdk.WireInput{Text: text, Params: params})
		fmt.Printf("verdict=%v data=%s", out.Verdict, out.Data)
		if t, ok := out.Transformed(); ok {
			fmt.Printf(" text=%q", t)
		}
		fmt.Println()
	}
	// Output:
	// verdict=true data=
	// verdict=false data={"reason":"deny-listed word","word":"secret"}
	// verdict=true data= text="a b"
}

func ExampleHandleCondition() {
	params := []sdk.KV{{Key: "min_chars", Value: "5"}}
	for _, text := range []string{"hi", "hello world"} {
		out := sdk.Run(sdk.KindCondition, &sdk.WireInput{Text: text, Params: params})
		fmt.Println(text, out.Match)
	}
	// Output:
	// hi false
	// hello world true
}

// Parameter values are JSON text; the typed getters read the common shapes without encoding/json.
func ExampleInput_ParamStrings() {
	in := sdk.NewInput(&sdk.WireInput{Params: []sdk.KV{
		{Key: "words", Value: `["alpha", "b\u00e9ta"]`},
		{Key: "action", Value: `"redact"`},
		{Key: "min_chars", Value: "200"},
		{Key: "strict", Value: "true"},
	}})
	words, _ := in.ParamStrings("words")
	action, _ := in.ParamString("action")
	min, _ := in.ParamInt("min_chars")
	strict, _ := in.ParamBool("strict")
	_, ok := in.ParamString("min_chars") // a number is not a string
	fmt.Println(words, action, min, strict, ok)
	// Output: [alpha béta] redact 200 true false
}

func ExampleResult_With() {
	r := sdk.Fail("PII detected").With("found", map[string]int{"email": 2})
	fmt.Println(r.Pass, r.Data)
	// Output: false map[found:map[email:2] reason:PII detected]
}

// A check on an MCP tool call (hook before_tool_call or after_tool_call) sees the tool's bare name, the
// server's registry ID, and the call's arguments as JSON text (before) or the result's text (after).
func ExampleInput_IsToolCall() {
	in := sdk.NewInput(&sdk.WireInput{
		Text: `{"path":"/etc/passwd"}`, Stage: "before", Endpoint: "mcp", Tool: "read_file", MCPServer: "files",
	})
	fmt.Println(in.IsToolCall(), in.MCPServer, in.Tool, in.Text)
	// Output: true files read_file {"path":"/etc/passwd"}
}
