package main

import (
	"testing"

	sdk "github.com/llmgw/gateway/sdk-guest"
)

// The checks run natively through sdk.Run, which encodes and decodes as the gateway does: go test needs no
// wasm and nothing but the SDK.
func TestChecks(t *testing.T) {
	tests := []struct {
		checkID, text string
		params        []sdk.KV
		pass          bool
		data, err     string
	}{
		{"myplugin.maxChars", "héllo", []sdk.KV{{Key: "max", Value: "5"}}, true, "", ""},
		{"myplugin.maxChars", "héllo!", []sdk.KV{{Key: "max", Value: "5"}}, false, `{"chars":6,"max":5,"reason":"text too long"}`, ""},
		{"myplugin.maxChars", "x", nil, false, "", `maxChars: parameter "max" (an integer) is required`},
		{"myplugin.noDigits", "route 66", nil, false, `{"reason":"the text has digits"}`, ""},
	}
	for _, tc := range tests {
		out := sdk.Run(sdk.KindCheck, &sdk.WireInput{CheckID: tc.checkID, Text: tc.text, Params: tc.params})
		if out.Verdict != tc.pass || string(out.Data) != tc.data || out.Error != tc.err {
			t.Errorf("%s %q: got {Verdict:%v Data:%s Error:%q}, want {Verdict:%v Data:%s Error:%q}",
				tc.checkID, tc.text, out.Verdict, out.Data, out.Error, tc.pass, tc.data, tc.err)
		}
	}
}
