package sdkas_test

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/llmgw/gateway/hostapi"
)

// The cases are those of the Go examples' tests (examples/*/main_test.go): the AssemblyScript examples must answer the
// same.

func p(name, json string) hostapi.KV { return hostapi.KV{Key: name, Value: json} }

type denyCase struct {
	name, text, words, patterns string // words and patterns: JSON, "" to leave out
	pass                        bool
	data, errSub                string
}

var denyCases = []denyCase{
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
		in.Params = append(in.Params, p("words", tc.words))
	}
	if tc.patterns != "" {
		in.Params = append(in.Params, p("patterns", tc.patterns))
	}
	return in
}

func TestDenylist(t *testing.T) {
	e := engine(t, "denylist", nil)
	for _, tc := range denyCases {
		t.Run(tc.name, func(t *testing.T) {
			out := call(t, e, "denylist", hostapi.KindCheck, tc.input(), nil)
			if tc.errSub != "" {
				if !strings.Contains(out.Error, tc.errSub) {
					t.Fatalf("Error = %q, want it to contain %q", out.Error, tc.errSub)
				}
				return
			}
			if out.Error != "" || out.Verdict != tc.pass || string(out.Data) != tc.data {
				t.Fatalf("out = {Verdict:%v Data:%s Error:%q}, want {Verdict:%v Data:%s}", out.Verdict, out.Data, out.Error, tc.pass, tc.data)
			}
		})
	}
}

type piiCase struct {
	name   string
	text   string
	params []hostapi.KV
	pass   bool
	data   string // JSON, "" for none
	text2  string // transformed text, "" for none
	errSub string
}

var redactParam = p("action", `"redact"`)

var piiCases = []piiCase{
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

func TestPII(t *testing.T) {
	e := engine(t, "pii", nil)
	for _, tc := range piiCases {
		t.Run(tc.name, func(t *testing.T) {
			in := &hostapi.Input{Text: tc.text, Params: tc.params, CheckID: "pii.detect", Stage: "before"}
			out := call(t, e, "pii", hostapi.KindCheck, in, nil)
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
			if len(out.Data) > 0 {
				var m map[string]any
				if err := json.Unmarshal(out.Data, &m); err != nil {
					t.Fatalf("data is not a JSON object: %v", err)
				}
			}
		})
	}
}

type routeCase struct {
	name      string
	text      string
	params    []hostapi.KV
	maxTokens string // request field params.max_tokens, "" for absent
	match     bool
	log       string // the debug message logged, "" for none
}

var routeCases = []routeCase{
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

func TestRouter(t *testing.T) {
	logs := &records{}
	e := engine(t, "router", logs)
	for _, tc := range routeCases {
		t.Run(tc.name, func(t *testing.T) {
			view := fields{}
			if tc.maxTokens != "" {
				view["params.max_tokens"] = tc.maxTokens
			}
			logs.take()
			out := call(t, e, "router", hostapi.KindCondition, &hostapi.Input{Text: tc.text, Params: tc.params, Stage: "condition"}, view)
			if out.Error != "" || out.Match != tc.match {
				t.Fatalf("out = %+v, want match %v", out, tc.match)
			}
			var want []string
			if tc.log != "" {
				want = []string{tc.log}
			}
			var got []string
			for _, m := range logs.take() {
				if strings.HasPrefix(m, "router:") {
					got = append(got, m)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("logs = %q, want %q", got, want)
			}
		})
	}
	// The router is a condition only: a check call is an error, not a trap.
	out := call(t, e, "router", hostapi.KindCheck, &hostapi.Input{Text: "x", CheckID: "router.x"}, nil)
	if !strings.Contains(out.Error, "registers no check") {
		t.Fatalf("check call: %+v", out)
	}
}

// benchText is about n bytes of prose with a little PII and a deny-listed word near the end.
func benchText(n int) string {
	var b strings.Builder
	for b.Len() < n-64 {
		b.WriteString("The quarterly report covers revenue, costs and the roadmap for next year. ")
	}
	b.WriteString("mail jane@example.com, secret ")
	return b.String()
}

func BenchmarkExamples(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"1KB", 1 << 10}, {"64KB", 64 << 10}} {
		text := benchText(size.n)
		for _, ex := range []struct {
			guest string
			kind  hostapi.Kind
			in    *hostapi.Input
		}{
			{"denylist", hostapi.KindCheck, &hostapi.Input{Text: text, CheckID: "denylist.check",
				Params: []hostapi.KV{p("words", `["secret","password"]`), p("patterns", `["\\d{3}-\\d{2}-\\d{4}","(?i)api[_-]?key"]`)}}},
			{"pii", hostapi.KindCheck, &hostapi.Input{Text: text, CheckID: "pii.detect", Params: []hostapi.KV{redactParam}}},
			{"router", hostapi.KindCondition, &hostapi.Input{Text: text, Params: []hostapi.KV{p("min_chars", "1000000")}}},
		} {
			b.Run(ex.guest+"/"+size.name, func(b *testing.B) {
				e := engine(b, ex.guest, nil)
				call(b, e, ex.guest, ex.kind, ex.in, nil) // instantiate outside the timing
				b.ReportAllocs()
				b.SetBytes(int64(len(text)))
				b.ResetTimer()
				for b.Loop() {
					call(b, e, ex.guest, ex.kind, ex.in, nil)
				}
			})
		}
	}
}

// TestRegexpMatchesGo runs the SDK's regular expressions (through the denylist guest) against Go's regexp on
// the same patterns and texts: every supported construct must answer as RE2 does.
func TestRegexpMatchesGo(t *testing.T) {
	e := engine(t, "denylist", nil)
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
		words, _ := json.Marshal([]string{pat})
		for _, text := range texts {
			in := &hostapi.Input{Text: text, CheckID: "denylist.check", Params: []hostapi.KV{p("patterns", string(words))}}
			out := call(t, e, "denylist", hostapi.KindCheck, in, nil)
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
		words, _ := json.Marshal([]string{pat})
		out := call(t, e, "denylist", hostapi.KindCheck, &hostapi.Input{Text: "x", CheckID: "denylist.check", Params: []hostapi.KV{p("patterns", string(words))}}, nil)
		if !strings.Contains(out.Error, "denylist: pattern "+pat+": ") || !strings.Contains(out.Error, want) {
			t.Errorf("pattern %s: Error = %q, want it to contain %q", pat, out.Error, want)
		}
	}
}
