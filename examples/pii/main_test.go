package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/internal/wasmtest"
	sdk "github.com/llmgw/gateway/sdk-guest"
)

type piiCase struct {
	name   string
	text   string
	params []hostapi.KV
	pass   bool
	data   string // JSON, "" for none
	text2  string // transformed text, "" for none
	errSub string // part of the error, "" for none
}

func p(name, json string) hostapi.KV { return hostapi.KV{Key: name, Value: json} }

var redactParam = p("action", `"redact"`)

var cases = []piiCase{
	{name: "clean", text: "What is the capital of France?", pass: true},
	{name: "email denied", text: "mail me at jane.doe+x@example.co.uk please", data: `{"found":{"email":1},"reason":"PII detected"}`},
	{name: "email redacted", text: "mail me at jane.doe+x@example.co.uk please", params: []hostapi.KV{redactParam}, pass: true,
		data: `{"redacted":{"email":1}}`, text2: "mail me at [REDACTED_EMAIL] please"},
	{name: "phones", params: []hostapi.KV{redactParam}, pass: true,
		text:  "call +1 555 123 4567, (555) 123-4567, 555.123.4567, +442079460958 or 5551234567 today",
		data:  `{"redacted":{"phone":5}}`,
		text2: "call [REDACTED_PHONE], [REDACTED_PHONE], [REDACTED_PHONE], [REDACTED_PHONE] or [REDACTED_PHONE] today"},
	{name: "not phones", pass: true, text: "on 2024-01-15 at 10:30, version 1.2.3, ip 192.168.1.100, order 12345, 3.14159"},
	{name: "cards", params: []hostapi.KV{redactParam}, pass: true,
		text:  "visa 4111 1111 1111 1111, amex 3782-822463-10005, plain 5555555555554444.",
		data:  `{"redacted":{"credit_card":3}}`,
		text2: "visa [REDACTED_CREDIT_CARD], amex [REDACTED_CREDIT_CARD], plain [REDACTED_CREDIT_CARD]."},
	{name: "card failing Luhn is not a card", pass: true, text: "ref 4111 1111 1111 1112"},
	{name: "all kinds denied", text: "a@b.io, 4111111111111111 and +33 6 12 34 56 78",
		data: `{"found":{"credit_card":1,"email":1,"phone":1},"reason":"PII detected"}`},
	{name: "types limits kinds", text: "a@b.io and 4111111111111111", params: []hostapi.KV{redactParam, p("types", `["credit_card"]`)}, pass: true,
		data: `{"redacted":{"credit_card":1}}`, text2: "a@b.io and [REDACTED_CREDIT_CARD]"},
	{name: "glued digits are not a match", pass: true, text: "id x5551234567y and 14111111111111111111"},
	{name: "unicode around", params: []hostapi.KV{redactParam}, pass: true, text: "écrivez à zoë@example.fr — merci",
		data: `{"redacted":{"email":1}}`, text2: "écrivez à [REDACTED_EMAIL] — merci"},
	{name: "bad action", text: "x", params: []hostapi.KV{p("action", `"block"`)}, errSub: `"action" must be "deny" or "redact", not "block"`},
	{name: "action not a string", text: "x", params: []hostapi.KV{p("action", `1`)}, errSub: `"action" must be`},
	{name: "bad types", text: "x", params: []hostapi.KV{p("types", `"email"`)}, errSub: `"types" must be an array of strings`},
	{name: "unknown type", text: "x", params: []hostapi.KV{p("types", `["ssn"]`)}, errSub: `unknown type "ssn"`},
}

func checkOutput(t *testing.T, tc piiCase, out hostapi.Output) {
	t.Helper()
	if tc.errSub != "" {
		if !strings.Contains(out.Error, tc.errSub) {
			t.Fatalf("Error = %q, want it to contain %q", out.Error, tc.errSub)
		}
		return
	}
	if out.Error != "" || out.Verdict != tc.pass {
		t.Fatalf("out = %+v, want pass %v", out, tc.pass)
	}
	if string(out.Data) != tc.data {
		t.Fatalf("data\n got %s\nwant %s", out.Data, tc.data)
	}
	if got, ok := out.Transformed(); got != tc.text2 || ok != (tc.text2 != "") {
		t.Fatalf("transformed\n got %q (%v)\nwant %q", got, ok, tc.text2)
	}
}

// TestCheck runs the check natively, through the SDK's wire encoding.
func TestCheck(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkOutput(t, tc, sdk.Run(hostapi.KindCheck, &hostapi.Input{Text: tc.text, Params: tc.params}))
		})
	}
}

func TestLuhn(t *testing.T) {
	for s, want := range map[string]bool{
		"4111111111111111": true, "4111-1111-1111-1111": true, "378282246310005": true, "6011111111111117": true,
		"4111111111111112": false, "1234567890123": false, "411111111111": false, "41111111111111111111": false,
	} {
		if luhn(s) != want {
			t.Errorf("luhn(%s) = %v", s, !want)
		}
	}
}

// Test_main builds the plugin for wasm and runs the same cases in wazero, as the gateway would.
func Test_main(t *testing.T) {
	plugin := wasmtest.Instantiate(t, wasmtest.Build(t, "."))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := plugin.MustCall(t, hostapi.KindCheck, &hostapi.Input{Text: tc.text, Params: tc.params, CheckID: "pii.detect", Stage: "before"}, nil)
			checkOutput(t, tc, out)
			if len(out.Data) > 0 {
				var m map[string]any
				if err := json.Unmarshal(out.Data, &m); err != nil {
					t.Fatalf("data is not a JSON object: %v", err)
				}
			}
		})
	}
	if deps := wasmtest.Deps(t, "."); !reflect.DeepEqual(deps, wasmtest.GuestDeps) {
		t.Errorf("the plugin depends on %v, want only %v", deps, wasmtest.GuestDeps)
	}
}
