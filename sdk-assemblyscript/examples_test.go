package sdkas_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/internal/examplecases"
	"github.com/llmgw/gateway/internal/wasmtest"
	"github.com/llmgw/gateway/plugins"
)

// TestExamples runs the examples' table (examples/testdata/cases.json) against the AssemblyScript examples:
// they must answer as the Go ones do.
func TestExamples(t *testing.T) {
	for _, example := range examplecases.Examples {
		t.Run(example, func(t *testing.T) { examplecases.Run(t, wasmtest.AssemblyScript, example, module(t, example)) })
	}
}

// BenchmarkExamples measures the AssemblyScript examples as the gateway runs them (examplecases.Benchmark).
func BenchmarkExamples(b *testing.B) {
	examplecases.Benchmark(b, wasmtest.AssemblyScript)
}

// TestRegexpMatchesGo runs the SDK's regular expressions (through the denylist guest) against Go's regexp on
// the same patterns and texts: every supported construct must answer as RE2 does.
func TestRegexpMatchesGo(t *testing.T) {
	wasm := module(t, "denylist")
	e, err := plugins.New(plugins.Options{MaxInstances: 1, CallTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := e.Load(ctx, "ws", "denylist", wasm); err != nil {
		t.Fatal(err)
	}
	// check runs the denylist with the one pattern on text.
	check := func(pattern, text string) *hostapi.Output {
		t.Helper()
		patterns, _ := json.Marshal([]string{pattern})
		in := &hostapi.Input{Text: text, CheckID: "denylist.check", Params: []hostapi.KV{{Key: "patterns", Value: string(patterns)}}}
		out, err := e.Call(ctx, "ws", "denylist", hostapi.KindCheck, in, nil)
		if err != nil {
			t.Fatalf("pattern %s on %q: %v", pattern, text, err)
		}
		return out
	}
	patterns := []string{
		`\d{3}-\d{2}-\d{4}`, `(?i)api[_-]?key`, `^abc$`, `(?m)^b$`, `a.c`, `(?s)a.c`, `colou?r`, `a{2,3}b`, `a{2,}`,
		`x*?y`, `(cat|dog)s?\b`, `\bfoo\B`, `[^a-z0-9 ]`, `[\w.+-]+@[\w-]+\.\w{2,}`, `\p{L}{3}`, `\P{L}+x`,
		`(?i)caf\x{e9}`, `[[\]]`, `\$\d+\.\d\d`, `(?:ab)+c`, `\A\s*$`, `日本`, `[α-ω]+`, `(?P<n>\d)\d`, `(?i:ä)x`,
		`a|b|`, `🙂+`, `\pN\pL`, `[\p{Latin}]+ [^\p{Latin}\s]+`, `\x41\t`,
	}
	texts := []string{
		"", "abc", "a\nb\nc", "a\nc", "ABC", "my ssn is 123-45-6789", "the API-Key", "color colour", "aab aaab",
		"xxxy", "cats and dogs", "foobar foo", "hello, world!", "mail jane.doe+x@example.co.uk now", "日本語",
		"éèà 123x", "CAFÉ", "[x]", "costs $12.50", "ababc", "   ", "αβγ", "x12", "Äx", "🙂🙂", "٣ب", "Café 東京", "A\t",
	}
	for _, pat := range patterns {
		re := regexp.MustCompile(pat)
		for _, text := range texts {
			out := check(pat, text)
			if out.Error != "" {
				t.Fatalf("%s on %q: %s", pat, text, out.Error)
			}
			if got, want := !out.Verdict, re.MatchString(text); got != want {
				t.Errorf("%s on %q: matched %v, Go says %v", pat, text, got, want)
			}
		}
	}
	// Invalid patterns, and syntax outside the subset, are errors naming the pattern, never a wrong answer.
	for pat, want := range map[string]string{
		`a(b`:         "missing closing ): `a(b`",
		`a)b`:         "unexpected ): `a)b`",
		`[a-`:         "missing closing ]",
		`*a`:          "missing argument to repetition operator: `*`",
		`a**`:         "invalid nested repetition operator: `**`",
		`a{2,1}`:      "invalid repeat count: `{2,1}`",
		`a{1001}`:     "invalid repeat count",
		`\q`:          "invalid escape sequence: `\\q`",
		`[z-a]`:       "invalid character class range: `z-a`",
		`(?<=a)b`:     "error parsing regexp",
		`[[:alpha:]]`: "error parsing regexp",
		`\p{Greek}`:   "error parsing regexp",
		`a\`:          "trailing backslash",
	} {
		out := check(pat, "x")
		if !strings.Contains(out.Error, "denylist: pattern "+pat+": ") || !strings.Contains(out.Error, want) {
			t.Errorf("pattern %s: Error = %q, want it to contain %q", pat, out.Error, want)
		}
	}
}
