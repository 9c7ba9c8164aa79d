package guardrails

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/llmgw/gateway/hostapi"
)

func mustCheck(t testing.TB, id, params string) Check {
	t.Helper()
	f := lookup("default." + id)
	if f == nil {
		t.Fatalf("default.%s is not registered", id)
	}
	c, err := f(json.RawMessage(params))
	if err != nil {
		t.Fatalf("default.%s %s: %v", id, params, err)
	}
	return c
}

func TestBuiltins(t *testing.T) {
	md := []hostapi.KV{{Key: "user", Value: "u1"}, {Key: "team", Value: "t"}}
	tests := []struct {
		name, id, params string
		in               hostapi.Input
		want             bool
		transformed      string // expected transformed text, "" for none
	}{
		{"regexMatch pass", "regexMatch", `{"rule":"\\d{3}"}`, hostapi.Input{Text: "call 555 now"}, true, ""},
		{"regexMatch fail", "regexMatch", `{"rule":"\\d{3}"}`, hostapi.Input{Text: "call now"}, false, ""},
		{"regexMatch not", "regexMatch", `{"rule":"[a-z]+@[a-z]+\\.com","not":true}`, hostapi.Input{Text: "mail a@b.com"}, false, ""},
		{"regexMatch not pass", "regexMatch", `{"rule":"[a-z]+@[a-z]+\\.com","not":true}`, hostapi.Input{Text: "no mail"}, true, ""},

		{"sentenceCount pass", "sentenceCount", `{"minSentences":2,"maxSentences":3}`, hostapi.Input{Text: "One. Two! Three?"}, true, ""},
		{"sentenceCount fail", "sentenceCount", `{"minSentences":2}`, hostapi.Input{Text: "Only one sentence here."}, false, ""},
		{"sentenceCount trailing", "sentenceCount", `{"minSentences":2,"maxSentences":2}`, hostapi.Input{Text: "First. second without end"}, true, ""},
		{"sentenceCount decimals", "sentenceCount", `{"maxSentences":1}`, hostapi.Input{Text: "Pi is 3.14 roughly."}, true, ""},
		{"sentenceCount not", "sentenceCount", `{"maxSentences":1,"not":true}`, hostapi.Input{Text: "A. B."}, true, ""},

		{"wordCount pass", "wordCount", `{"minWords":2,"maxWords":3}`, hostapi.Input{Text: " hello  big\nworld "}, true, ""},
		{"wordCount fail", "wordCount", `{"maxWords":2}`, hostapi.Input{Text: "one two three"}, false, ""},
		{"wordCount default max", "wordCount", `{}`, hostapi.Input{Text: "x"}, true, ""},
		{"wordCount not", "wordCount", `{"maxWords":2,"not":true}`, hostapi.Input{Text: "one two three"}, true, ""},
		{"wordCount unicode space", "wordCount", `{"minWords":2,"maxWords":2}`, hostapi.Input{Text: "héllo\u00a0wörld"}, true, ""},

		{"characterCount pass", "characterCount", `{"minCharacters":3,"maxCharacters":5}`, hostapi.Input{Text: "héllo"}, true, ""},
		{"characterCount fail", "characterCount", `{"maxCharacters":4}`, hostapi.Input{Text: "hello"}, false, ""},
		{"characterCount not", "characterCount", `{"maxCharacters":4,"not":true}`, hostapi.Input{Text: "hello"}, true, ""},

		{"jsonSchema pass", "jsonSchema", `{"schema":{"type":"object","required":["a"],"properties":{"a":{"type":"integer"}}}}`,
			hostapi.Input{Text: "here: ```json\n{\"a\": 1}\n```"}, true, ""},
		{"jsonSchema fail", "jsonSchema", `{"schema":{"type":"object","required":["a"]}}`, hostapi.Input{Text: `{"b": 1}`}, false, ""},
		{"jsonSchema second object", "jsonSchema", `{"schema":{"type":"object","required":["a"]}}`, hostapi.Input{Text: `{"b": 1} and {"a": 2}`}, true, ""},
		{"jsonSchema no json", "jsonSchema", `{"schema":{"type":"object"}}`, hostapi.Input{Text: "plain"}, false, ""},
		{"jsonSchema not", "jsonSchema", `{"schema":{"type":"object","required":["a"]},"not":true}`, hostapi.Input{Text: `{"b": 1}`}, true, ""},

		{"jsonKeys any", "jsonKeys", `{"keys":["a","z"],"operator":"any"}`, hostapi.Input{Text: `x {"a":1}`}, true, ""},
		{"jsonKeys all fail", "jsonKeys", `{"keys":["a","z"],"operator":"all"}`, hostapi.Input{Text: `{"a":1}`}, false, ""},
		{"jsonKeys all", "jsonKeys", `{"keys":["a","z"],"operator":"all"}`, hostapi.Input{Text: `{"a":1,"z":{}}`}, true, ""},
		{"jsonKeys none", "jsonKeys", `{"keys":["a"],"operator":"none"}`, hostapi.Input{Text: `{"b":1}`}, true, ""},
		{"jsonKeys none fail", "jsonKeys", `{"keys":["a"],"operator":"none"}`, hostapi.Input{Text: `{"a":1}`}, false, ""},
		{"jsonKeys no object", "jsonKeys", `{"keys":["a"]}`, hostapi.Input{Text: `nothing`}, false, ""},

		{"contains any", "contains", `{"words":["foo","bar"],"operator":"any"}`, hostapi.Input{Text: "a bar"}, true, ""},
		{"contains any fail", "contains", `{"words":["foo","bar"]}`, hostapi.Input{Text: "nothing"}, false, ""},
		{"contains all", "contains", `{"words":["foo","bar"],"operator":"all"}`, hostapi.Input{Text: "foo bar"}, true, ""},
		{"contains all fail", "contains", `{"words":["foo","bar"],"operator":"all"}`, hostapi.Input{Text: "foo"}, false, ""},
		{"contains none", "contains", `{"words":["foo"],"operator":"none"}`, hostapi.Input{Text: "bar"}, true, ""},
		{"contains none fail", "contains", `{"words":["foo"],"operator":"none"}`, hostapi.Input{Text: "foo"}, false, ""},

		{"validUrls pass", "validUrls", `{}`, hostapi.Input{Text: "see https://example.com/a?b=1, and http://127.0.0.1:8080/x."}, true, ""},
		{"validUrls fail", "validUrls", `{"onlyDNS":true}`, hostapi.Input{Text: "see https://exa_mple..com/"}, false, ""},
		{"validUrls bad port", "validUrls", `{}`, hostapi.Input{Text: "http://example.com:99999/"}, false, ""},
		{"validUrls none", "validUrls", `{}`, hostapi.Input{Text: "no links"}, true, ""},
		{"validUrls not", "validUrls", `{"not":true}`, hostapi.Input{Text: "https://example.com"}, false, ""},

		{"containsCode pass", "containsCode", `{"format":"Python"}`, hostapi.Input{Text: "x\n```py\nprint(1)\n```\n"}, true, ""},
		{"containsCode fail", "containsCode", `{"format":"SQL"}`, hostapi.Input{Text: "```go\nfunc f(){}\n```"}, false, ""},
		{"containsCode not", "containsCode", `{"format":"sql","not":true}`, hostapi.Input{Text: "no code"}, true, ""},

		{"allUppercase pass", "allUppercase", `{}`, hostapi.Input{Text: "HELLO, WORLD 1"}, true, ""},
		{"allUppercase fail", "allUppercase", `{}`, hostapi.Input{Text: "HELLo"}, false, ""},
		{"allUppercase not", "allUppercase", `{"not":true}`, hostapi.Input{Text: "HELLO"}, false, ""},
		{"allLowercase pass", "allLowercase", `{}`, hostapi.Input{Text: "hello, world"}, true, ""},
		{"allLowercase fail", "allLowercase", `{}`, hostapi.Input{Text: "Hello"}, false, ""},
		{"allLowercase not", "allLowercase", `{"not":true}`, hostapi.Input{Text: "Hello"}, true, ""},

		{"endsWith pass", "endsWith", `{"suffix":"Done."}`, hostapi.Input{Text: "All good. Done. \n"}, true, ""},
		{"endsWith fail", "endsWith", `{"suffix":"Done."}`, hostapi.Input{Text: "Not yet"}, false, ""},
		{"endsWith not", "endsWith", `{"suffix":"Done.","not":true}`, hostapi.Input{Text: "Not yet"}, true, ""},

		{"modelWhitelist pass", "modelWhitelist", `{"models":["gpt-4o","claude-*"]}`, hostapi.Input{Model: "claude-3"}, true, ""},
		{"modelWhitelist fail", "modelWhitelist", `{"models":["gpt-4o"]}`, hostapi.Input{Model: "gpt-3.5"}, false, ""},
		{"modelWhitelist inverse", "modelWhitelist", `{"models":["gpt-4o"],"inverse":true}`, hostapi.Input{Model: "gpt-4o"}, false, ""},

		{"requiredMetadataKeys all", "requiredMetadataKeys", `{"metadataKeys":["user","team"]}`, hostapi.Input{Metadata: md}, true, ""},
		{"requiredMetadataKeys all fail", "requiredMetadataKeys", `{"metadataKeys":["user","env"],"operator":"all"}`, hostapi.Input{Metadata: md}, false, ""},
		{"requiredMetadataKeys any", "requiredMetadataKeys", `{"metadataKeys":["user","env"],"operator":"any"}`, hostapi.Input{Metadata: md}, true, ""},
		{"requiredMetadataKeys none", "requiredMetadataKeys", `{"metadataKeys":["env"],"operator":"none"}`, hostapi.Input{Metadata: md}, true, ""},
		{"requiredMetadataKeys none fail", "requiredMetadataKeys", `{"metadataKeys":["user"],"operator":"none"}`, hostapi.Input{Metadata: md}, false, ""},

		{"allowedRequestTypes pass", "allowedRequestTypes", `{"allowedTypes":["chatComplete","embed"]}`, hostapi.Input{Endpoint: "chat"}, true, ""},
		{"allowedRequestTypes fail", "allowedRequestTypes", `{"allowedTypes":["embeddings"]}`, hostapi.Input{Endpoint: "chat"}, false, ""},
		{"allowedRequestTypes blocked", "allowedRequestTypes", `{"blockedTypes":"complete, embed"}`, hostapi.Input{Endpoint: "completions"}, false, ""},
		{"allowedRequestTypes not blocked", "allowedRequestTypes", `{"blockedTypes":["embeddings"]}`, hostapi.Input{Endpoint: "chat"}, true, ""},

		{"notNull pass", "notNull", `{}`, hostapi.Input{Text: "x"}, true, ""},
		{"notNull fail", "notNull", `{}`, hostapi.Input{Text: "  \n"}, false, ""},
		{"notNull not", "notNull", `{"not":true}`, hostapi.Input{Text: ""}, true, ""},

		{"regexReplace", "regexReplace", `{"rule":"\\d{3}-\\d{4}","replacement":"[PHONE]"}`, hostapi.Input{Text: "call 555-1234 or 555-9999"}, true, "call [PHONE] or [PHONE]"},
		{"regexReplace default", "regexReplace", `{"rule":"secret"}`, hostapi.Input{Text: "a secret"}, true, "a [REDACTED]"},
		{"regexReplace no match", "regexReplace", `{"rule":"secret"}`, hostapi.Input{Text: "nothing"}, true, ""},
		{"addPrefix", "addPrefix", `{"prefix":"Be brief. "}`, hostapi.Input{Text: "Hi"}, true, "Be brief. Hi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mustCheck(t, tc.id, tc.params)
			out, err := c.Check(context.Background(), &tc.in, nil)
			if err != nil || out.Error != "" {
				t.Fatalf("error %v %q", err, out.Error)
			}
			if out.Verdict != tc.want {
				t.Errorf("verdict %v, want %v (data %s)", out.Verdict, tc.want, out.Data)
			}
			if out.Data != nil && !json.Valid(out.Data) {
				t.Errorf("data is not JSON: %s", out.Data)
			}
			got, ok := out.Transformed()
			if tc.transformed == "" && ok {
				t.Errorf("transformed to %q, want no transformation", got)
			}
			if tc.transformed != "" && got != tc.transformed {
				t.Errorf("transformed %q (%v), want %q", got, ok, tc.transformed)
			}
		})
	}
}

func TestBuiltinParamErrors(t *testing.T) {
	tests := []struct{ id, params, param string }{
		{"regexMatch", `{}`, "rule"},
		{"regexMatch", `{"rule":"("}`, "rule"},
		{"regexMatch", `{"rule":"a","not":"yes"}`, "not"},
		{"wordCount", `{"maxWords":"ten"}`, "maxWords"},
		{"wordCount", `{"minWords":5,"maxWords":2}`, "maxWords"},
		{"wordCount", `{"minWords":-1}`, "minWords"},
		{"sentenceCount", `{"minSentences":true}`, "minSentences"},
		{"characterCount", `{"maxCharacters":[]}`, "maxCharacters"},
		{"jsonSchema", `{}`, "schema"},
		{"jsonSchema", `{"schema":{"type":12}}`, "schema"},
		{"jsonSchema", `{"schema":{"$ref":"file:///etc/passwd"}}`, "schema"},
		{"jsonKeys", `{"keys":["a"],"operator":"some"}`, "operator"},
		{"contains", `{"words":[]}`, "words"},
		{"contains", `{"words":[1]}`, "words"},
		{"containsCode", `{"format":"Cobol"}`, "format"},
		{"endsWith", `{}`, "suffix"},
		{"modelWhitelist", `{}`, "models"},
		{"requiredMetadataKeys", `{"metadataKeys":["a"],"operator":"x"}`, "operator"},
		{"allowedRequestTypes", `{}`, "allowedTypes"},
		{"regexReplace", `{"rule":"["}`, "rule"},
		{"addPrefix", `{"prefix":1}`, "prefix"},
		{"webhook", `{"webhookURL":"ftp://x"}`, "webhookURL"},
		{"webhook", `{"webhookURL":"http://x","timeout":-1}`, "timeout"},
		{"webhook", `{"webhookURL":"http://x","headers":[1]}`, "headers"},
		{"log", `{}`, "logURL"},
	}
	for _, tc := range tests {
		t.Run(tc.id+tc.params, func(t *testing.T) {
			_, err := lookup("default." + tc.id)(json.RawMessage(tc.params))
			var pe *ParamError
			if !errors.As(err, &pe) || pe.Name != tc.param {
				t.Fatalf("error %v, want a ParamError on %q", err, tc.param)
			}
		})
	}
}

func TestRegistered(t *testing.T) {
	want := []string{"regexMatch", "sentenceCount", "wordCount", "characterCount", "jsonSchema", "jsonKeys",
		"contains", "validUrls", "webhook", "log", "containsCode", "allUppercase", "allLowercase", "endsWith",
		"modelWhitelist", "requiredMetadataKeys", "allowedRequestTypes", "notNull", "regexReplace", "addPrefix"}
	got := strings.Join(Registered(), " ")
	for _, id := range want {
		if !strings.Contains(got, "default."+id+" ") && !strings.HasSuffix(got, "default."+id) {
			t.Errorf("default.%s not registered", id)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("duplicate Register did not panic")
		}
	}()
	Register("default.wordCount", newWordCount)
}
