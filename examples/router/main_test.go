package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/internal/wasmtest"
	sdk "github.com/llmgw/gateway/sdk-guest"
)

type routeCase struct {
	name      string
	text      string
	params    []hostapi.KV
	maxTokens string // request field params.max_tokens, "" for absent
	match     bool
	log       string // the debug message logged, "" for none
}

func p(name, json string) hostapi.KV { return hostapi.KV{Key: name, Value: json} }

var cases = []routeCase{
	{name: "short english", text: "What is the capital of France?", params: []hostapi.KV{p("min_chars", "100")}},
	{name: "long prompt", text: strings.Repeat("word ", 30), params: []hostapi.KV{p("min_chars", "100")}, match: true,
		log: "router: prompt has 150 characters, more than min_chars"},
	{name: "exactly min_chars does not match", text: strings.Repeat("a", 100), params: []hostapi.KV{p("min_chars", "100")}},
	{name: "characters, not bytes", text: strings.Repeat("é", 60), params: []hostapi.KV{p("min_chars", "100"), p("non_english", "false")}},
	{name: "no min_chars", text: strings.Repeat("word ", 1000)},
	{name: "japanese", text: "東京の天気はどうですか?", match: true, log: "router: prompt looks non-English (non-Latin script)"},
	{name: "russian", text: "Какая погода в Москве?", match: true, log: "router: prompt looks non-English (non-Latin script)"},
	{name: "arabic with latin", text: "ما هو GPT-4؟", match: true, log: "router: prompt looks non-English (non-Latin script)"},
	{name: "french", text: "Où est la bibliothèque, s'il vous plaît ?", match: true, log: "router: prompt looks non-English (accented Latin letters)"},
	{name: "german", text: "Wie groß ist die Stadt München?", match: true, log: "router: prompt looks non-English (accented Latin letters)"},
	{name: "english with a loanword", text: "Where can I get a good café au lait near the station downtown?"},
	{name: "english with a few greek letters", text: "Explain why the ratio π/τ is one half, and what α means in statistics."},
	{name: "non_english off", text: "東京の天気はどうですか?", params: []hostapi.KV{p("non_english", "false")}},
	{name: "no letters", text: "1 + 2 = ?"},
	{name: "empty", text: ""},
	{name: "max_tokens high", text: "hi", params: []hostapi.KV{p("min_max_tokens", "4000")}, maxTokens: "8000", match: true,
		log: "router: max_tokens 8000 is at least min_max_tokens"},
	{name: "max_tokens low", text: "hi", params: []hostapi.KV{p("min_max_tokens", "4000")}, maxTokens: "100"},
	{name: "max_tokens absent", text: "hi", params: []hostapi.KV{p("min_max_tokens", "4000")}},
}

func TestScript(t *testing.T) {
	for _, tc := range cases {
		if tc.maxTokens != "" {
			continue // needs the host
		}
		t.Run(tc.name, func(t *testing.T) {
			out := sdk.Run(hostapi.KindCondition, &hostapi.Input{Text: tc.text, Params: tc.params})
			if out.Error != "" || out.Match != tc.match {
				t.Fatalf("out = %+v, want match %v", out, tc.match)
			}
		})
	}
}

func Test_main(t *testing.T) {
	plugin := wasmtest.Instantiate(t, wasmtest.Build(t, "."))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			host := &wasmtest.Host{Fields: map[string]string{}}
			if tc.maxTokens != "" {
				host.Fields["params.max_tokens"] = tc.maxTokens
			}
			out := plugin.MustCall(t, hostapi.KindCondition, &hostapi.Input{Text: tc.text, Params: tc.params, CheckID: "router.condition"}, host)
			if out.Error != "" || out.Match != tc.match {
				t.Fatalf("out = %+v, want match %v", out, tc.match)
			}
			var want []wasmtest.LogEntry
			if tc.log != "" {
				want = []wasmtest.LogEntry{{Level: hostapi.LevelDebug, Msg: tc.log}}
			}
			if got := host.Logs(); !reflect.DeepEqual(got, want) {
				t.Fatalf("logs = %v, want %v", got, want)
			}
		})
	}
	// The router is a condition only: a check call is an error, not a trap.
	out := plugin.MustCall(t, hostapi.KindCheck, &hostapi.Input{Text: "x"}, nil)
	if !strings.Contains(out.Error, "registers no check") {
		t.Fatalf("check call: %+v", out)
	}
	if deps := wasmtest.Deps(t, "."); !reflect.DeepEqual(deps, wasmtest.GuestDeps) {
		t.Errorf("the plugin depends on %v, want only %v", deps, wasmtest.GuestDeps)
	}
}
