package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/internal/wasmtest"
	sdk "github.com/llmgw/gateway/sdk-guest"
)

type denyCase struct {
	name     string
	text     string
	words    string // JSON, "" to leave out
	patterns string // JSON, "" to leave out
	pass     bool
	data     string
	errSub   string
}

var cases = []denyCase{
	{name: "no params", text: "anything", pass: true},
	{name: "clean", text: "tell me about the weather", words: `["secret","password"]`, patterns: `["\\d{3}-\\d{2}-\\d{4}"]`, pass: true},
	{name: "word, any case", text: "what is the PassWord?", words: `["secret","password"]`,
		data: `{"reason":"deny-listed content","words":["password"]}`},
	{name: "whole words only", text: "passwords and secretary", words: `["secret","password"]`, pass: true},
	{name: "phrase", text: "Project  Apollo vs project apollo", words: `["project apollo"]`,
		data: `{"reason":"deny-listed content","words":["project apollo"]}`},
	{name: "unicode word", text: "Le CAFÉ est fermé", words: `["café"]`,
		data: `{"reason":"deny-listed content","words":["café"]}`},
	{name: "unicode boundary", text: "cafés", words: `["café"]`, pass: true},
	{name: "symbol word", text: "I write C++ daily", words: `["c++","go"]`,
		data: `{"reason":"deny-listed content","words":["c++"]}`},
	{name: "later occurrence counts", text: "secretive secret", words: `["secret"]`,
		data: `{"reason":"deny-listed content","words":["secret"]}`},
	{name: "pattern", text: "my ssn is 123-45-6789", words: `["secret"]`, patterns: `["\\d{3}-\\d{2}-\\d{4}", "(?i)api[_-]?key"]`,
		data: `{"patterns":["\\d{3}-\\d{2}-\\d{4}"],"reason":"deny-listed content"}`},
	{name: "words and patterns", text: "secret API-KEY", words: `["secret"]`, patterns: `["(?i)api[_-]?key"]`,
		data: `{"patterns":["(?i)api[_-]?key"],"reason":"deny-listed content","words":["secret"]}`},
	{name: "empty word ignored", text: "x", words: `[""]`, pass: true},
	{name: "bad words", text: "x", words: `"secret"`, errSub: `"words" must be an array of strings`},
	{name: "bad patterns", text: "x", patterns: `[1]`, errSub: `"patterns" must be an array of strings`},
	{name: "invalid regexp", text: "x", patterns: `["a(b"]`, errSub: "denylist: pattern a(b: error parsing regexp"},
}

func (tc denyCase) input() *hostapi.Input {
	in := &hostapi.Input{Text: tc.text, CheckID: "denylist.check"}
	if tc.words != "" {
		in.Params = append(in.Params, hostapi.KV{Key: "words", Value: tc.words})
	}
	if tc.patterns != "" {
		in.Params = append(in.Params, hostapi.KV{Key: "patterns", Value: tc.patterns})
	}
	return in
}

func (tc denyCase) check(t *testing.T, out hostapi.Output) {
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
		t.Run(tc.name, func(t *testing.T) { tc.check(t, sdk.Run(hostapi.KindCheck, tc.input())) })
	}
}

func TestCompileCacheBounded(t *testing.T) {
	for i := range maxCompiled + 10 {
		if _, err := compile("x" + strings.Repeat("y", i)); err != nil {
			t.Fatal(err)
		}
	}
	if len(compiled) > maxCompiled {
		t.Fatalf("cache holds %d patterns", len(compiled))
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
