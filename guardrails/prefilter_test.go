package guardrails

import (
	"regexp"
	"strings"
	"testing"

	"github.com/llmgw/gateway/hostapi"
)

func TestRequiredLiteral(t *testing.T) {
	tests := []struct{ rule, lit string }{
		{`[a-z]+@[a-z]+\.com`, ".com"},
		{`secret`, "secret"},
		{`(?i)secret`, ""},
		{`a|b`, ""},
		{`(foo)+bar?`, "foo"},
		{`x(abc){2,3}`, "abc"},
		{`(abc)?d`, "d"},
		{`\d{3}-\d{4}`, "-"},
	}
	for _, tc := range tests {
		m, err := compileMatcher(tc.rule)
		if err != nil {
			t.Fatal(err)
		}
		if m.lit != tc.lit {
			t.Errorf("%s: literal %q, want %q", tc.rule, m.lit, tc.lit)
		}
	}
}

// FuzzMatcher checks that the prefilter never changes regexp's answer.
func FuzzMatcher(f *testing.F) {
	f.Add(`[a-z]+@[a-z]+\.com`, "mail bob@x.com")
	f.Add(`(foo)+bar?`, "fofoo ba")
	f.Add(`(?i)ab|cd+e`, "xxCDDE")
	f.Fuzz(func(t *testing.T, rule, text string) {
		re, err := regexp.Compile(rule)
		if err != nil {
			return
		}
		m, err := compileMatcher(rule)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := m.FindStringIndex(text) != nil, re.MatchString(text); got != want {
			t.Fatalf("rule %q text %q: prefiltered match %v, regexp %v (literal %q)", rule, text, got, want, m.lit)
		}
	})
}

// BenchmarkRunRegexScan is BenchmarkRun on a text that holds the regex's literal, so the regex scans all of it.
func BenchmarkRunRegexScan(b *testing.B) {
	s, err := Compile("ws1", "", nil, nil, raws(`{"id":"g","deny":true,"default.wordCount":{"minWords":10,"maxWords":500},
		"default.regexMatch":{"rule":"[a-z]+@[a-z]+\\.com","not":true},"default.contains":{"words":["password","secret"],"operator":"none"}}`),
		nil, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("The quick brown fox jumps over the lazy dog.com ", 22)[:1024]
	in := &hostapi.Input{Text: text}
	b.ReportAllocs()
	for b.Loop() {
		s.Run(b.Context(), StageBefore, in, nil)
	}
}
