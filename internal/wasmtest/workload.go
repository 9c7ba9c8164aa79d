package wasmtest

import (
	"strings"

	"github.com/llmgw/gateway/hostapi"
)

// The examples' benchmark workload, one for every language and every benchmark (the examples' per language,
// the guard's in package plugins), so that their figures compare.

// BenchText is about n bytes of prose with a little PII and a deny-listed word near the end.
func BenchText(n int) string {
	var b strings.Builder
	for b.Len() < n-64 {
		b.WriteString("The quarterly report covers revenue, costs and the roadmap for next year. ")
	}
	b.WriteString("mail jane@example.com, secret ")
	return b.String()
}

// BenchCall is one example's call on a text.
type BenchCall struct {
	Example string
	Kind    hostapi.Kind
	In      *hostapi.Input
}

// BenchCalls are the examples' calls on text: the denylist with two words and two patterns, the PII check
// redacting, and the router's condition with a min_chars it cannot reach, so that it reads the whole text for
// non-Latin script.
func BenchCalls(text string) []BenchCall {
	param := func(name, json string) hostapi.KV { return hostapi.KV{Key: name, Value: json} }
	return []BenchCall{
		{"denylist", hostapi.KindCheck, &hostapi.Input{Text: text, CheckID: "denylist.check", Params: []hostapi.KV{
			param("patterns", `["\\d{3}-\\d{2}-\\d{4}","(?i)api[_-]?key"]`), param("words", `["secret","password"]`)}}},
		{"pii", hostapi.KindCheck, &hostapi.Input{Text: text, CheckID: "pii.detect", Stage: "before", Params: []hostapi.KV{param("action", `"redact"`)}}},
		{"router", hostapi.KindCondition, &hostapi.Input{Text: text, Stage: "condition", Params: []hostapi.KV{param("min_chars", "1000000")}}},
	}
}

// NoopCall is a call that does no work in the guest beyond decoding its input: the conformance guest's
// condition (package conformance), with no "route" metadata to match, on text. It measures a call's own cost.
func NoopCall(text string) BenchCall {
	return BenchCall{"conformance", hostapi.KindCondition, &hostapi.Input{Text: text, Stage: "condition"}}
}
