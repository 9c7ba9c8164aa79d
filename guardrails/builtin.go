package guardrails

import (
	"context"
	"encoding/json"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/llmgw/gateway/hostapi"
)

// native is a built-in check that never blocks: a function of the input.
type native struct {
	f func(in *hostapi.Input) hostapi.Output
}

func (n *native) Check(_ context.Context, in *hostapi.Input, _ hostapi.RequestView) (hostapi.Output, error) {
	return n.f(in), nil
}

func (*native) inline() {}

// nativeTransformer is a native check that returns a transformed text.
type nativeTransformer struct{ native }

// Transforms implements Transformer.
func (*nativeTransformer) Transforms() bool { return true }

var (
	_ Check       = (*native)(nil)
	_ Transformer = (*nativeTransformer)(nil)
)

func init() {
	for name, f := range map[string]Factory{
		"regexMatch":           newRegexMatch,
		"sentenceCount":        newSentenceCount,
		"wordCount":            newWordCount,
		"characterCount":       newCharacterCount,
		"contains":             newContains,
		"validUrls":            newValidURLs,
		"containsCode":         newContainsCode,
		"allUppercase":         newAllUppercase,
		"allLowercase":         newAllLowercase,
		"endsWith":             newEndsWith,
		"modelWhitelist":       newModelWhitelist,
		"requiredMetadataKeys": newRequiredMetadataKeys,
		"allowedRequestTypes":  newAllowedRequestTypes,
		"notNull":              newNotNull,
		"regexReplace":         newRegexReplace,
		"addPrefix":            newAddPrefix,
		"jsonSchema":           newJSONSchema,
		"jsonKeys":             newJSONKeys,
		"webhook":              newWebhook,
		"log":                  newLog,
	} {
		Register("default."+name, f)
	}
}

// --- data objects -----------------------------------------------------------------------------------------------

// jsonText returns v's JSON text (for data built at compile time).
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(b)
}

// dataStart starts a data object with its static part (`"k":v,...`, built at compile time).
func dataStart(static string, extra int) []byte {
	b := make([]byte, 0, len(static)+extra+2)
	b = append(b, '{')
	return append(b, static...)
}

func dataKey(b []byte, k string) []byte {
	if len(b) > 1 {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, k...)
	return append(b, '"', ':')
}

func dataInt(b []byte, k string, v int) []byte { return strconv.AppendInt(dataKey(b, k), int64(v), 10) }

func dataBool(b []byte, k string, v bool) []byte { return strconv.AppendBool(dataKey(b, k), v) }

func dataRaw(b []byte, k, v string) []byte { return append(dataKey(b, k), v...) }

func dataEnd(b []byte) []byte { return append(b, '}') }

// verdictOutput is a pass/fail Output with data.
func verdictOutput(verdict bool, data []byte) hostapi.Output {
	return hostapi.Output{Verdict: verdict, Data: data}
}

// --- text checks ------------------------------------------------------------------------------------------------

// regexMatch {rule, not}: passes when the text matches rule (RE2 syntax), or does not when not is true.
func newRegexMatch(raw json.RawMessage) (Check, error) {
	p := parseParams(raw)
	rule, re := p.regex("rule")
	not := p.boolean("not", false)
	if p.err != nil {
		return nil, p.err
	}
	static := `"rule":` + jsonText(rule) + `,"not":` + strconv.FormatBool(not)
	return &native{f: func(in *hostapi.Input) hostapi.Output {
		loc := re.FindStringIndex(in.Text)
		matched := loc != nil
		d := dataStart(static, 48)
		d = dataBool(d, "matched", matched)
		if matched {
			d = dataRaw(d, "match", jsonText(in.Text[loc[0]:loc[1]]))
		}
		return verdictOutput(matched != not, dataEnd(d))
	}}, nil
}

// countCheck builds the min/max count checks.
func countCheck(raw json.RawMessage, minName, maxName string, maxDef float64, countName string, count func(string) int) (Check, error) {
	p := parseParams(raw)
	lo, hi := p.minMax(minName, maxName, maxDef)
	not := p.boolean("not", false)
	if p.err != nil {
		return nil, p.err
	}
	static := `"` + minName + `":` + strconv.FormatFloat(lo, 'g', -1, 64) + `,"` + maxName + `":` +
		strconv.FormatFloat(hi, 'g', -1, 64) + `,"not":` + strconv.FormatBool(not)
	return &native{f: func(in *hostapi.Input) hostapi.Output {
		n := count(in.Text)
		in_ := float64(n) >= lo && float64(n) <= hi
		d := dataInt(dataStart(static, 24), countName, n)
		return verdictOutput(in_ != not, dataEnd(d))
	}}, nil
}

// wordCount {minWords (0), maxWords (99999), not}: words are runs of non-space characters.
func newWordCount(raw json.RawMessage) (Check, error) {
	return countCheck(raw, "minWords", "maxWords", 99999, "wordCount", countWords)
}

// characterCount {minCharacters (0), maxCharacters (9999999), not}: characters are Unicode code points.
func newCharacterCount(raw json.RawMessage) (Check, error) {
	return countCheck(raw, "minCharacters", "maxCharacters", 9999999, "characterCount", utf8.RuneCountInString)
}

// sentenceCount {minSentences (0), maxSentences (99999), not}: a sentence ends with '.', '!' or '?' followed by
// a space or the end of the text; trailing text without an end mark counts as one more.
func newSentenceCount(raw json.RawMessage) (Check, error) {
	return countCheck(raw, "minSentences", "maxSentences", 99999, "sentenceCount", countSentences)
}

func countWords(s string) int {
	n, inWord := 0, false
	for i := 0; i < len(s); {
		c := s[i]
		var space bool
		if c < utf8.RuneSelf {
			space = asciiSpace[c]
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			space = unicode.IsSpace(r)
			i += size
		}
		if space {
			inWord = false
		} else if !inWord {
			inWord, n = true, n+1
		}
	}
	return n
}

var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

func countSentences(s string) int {
	n, content := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.' || c == '!' || c == '?':
			j := i
			for j+1 < len(s) && (s[j+1] == '.' || s[j+1] == '!' || s[j+1] == '?') {
				j++
			}
			if content && (j+1 == len(s) || s[j+1] < utf8.RuneSelf && asciiSpace[s[j+1]]) {
				n, content = n+1, false
			}
			i = j
		case c < utf8.RuneSelf && asciiSpace[c]:
		default:
			content = true
		}
	}
	if content {
		n++
	}
	return n
}

// contains {words, operator (any|all|none, default any)}: case-sensitive substring search of each word or phrase.
func newContains(raw json.RawMessage) (Check, error) {
	p := parseParams(raw)
	words := p.strings("words", true)
	op := p.operator("operator", "any")
	if p.err != nil {
		return nil, p.err
	}
	static := `"operator":"` + op + `"`
	return &native{f: func(in *hostapi.Input) hostapi.Output {
		found := 0
		var foundWords []string
		for _, w := range words {
			if strings.Contains(in.Text, w) {
				found++
				if op != "all" {
					foundWords = append(foundWords, w)
				}
			}
		}
		var verdict bool
		switch op {
		case "any":
			verdict = found > 0
		case "all":
			verdict = found == len(words)
		default:
			verdict = found == 0
		}
		d := dataInt(dataStart(static, 24), "found", found)
		if len(foundWords) > 0 {
			d = dataRaw(d, "foundWords", jsonText(foundWords))
		}
		return verdictOutput(verdict, dataEnd(d))
	}}, nil
}

var urlPattern = regexp.MustCompile(`(?i)\bhttps?://[^\s<>"'` + "`" + `]+`)

// validUrls {onlyDNS, not}: passes when every http(s) URL in the text is well-formed (scheme, a syntactically
// valid host name or IP address, a valid port). It never touches the network: onlyDNS is accepted for
// compatibility and changes nothing. A text without URLs passes.
func newValidURLs(raw json.RawMessage) (Check, error) {
	p := parseParams(raw)
	p.boolean("onlyDNS", false)
	not := p.boolean("not", false)
	if p.err != nil {
		return nil, p.err
	}
	static := `"not":` + strconv.FormatBool(not)
	return &native{f: func(in *hostapi.Input) hostapi.Output {
		var invalid []string
		urls := urlPattern.FindAllString(in.Text, -1)
		for _, u := range urls {
			u = strings.TrimRight(u, ".,;:!?)]}")
			if !validURL(u) {
				invalid = append(invalid, u)
			}
		}
		d := dataInt(dataStart(static, 32), "urls", len(urls))
		if invalid != nil {
			d = dataRaw(d, "invalidUrls", jsonText(invalid))
		}
		return verdictOutput((len(invalid) == 0) != not, dataEnd(d))
	}}, nil
}

func validURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	if port := u.Port(); port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return false
		}
	}
	host := u.Hostname()
	if net.ParseIP(host) != nil {
		return true
	}
	return validHostname(host)
}

func validHostname(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "localhost" {
		return true
	}
	if len(h) == 0 || len(h) > 253 || !strings.Contains(h, ".") {
		return false
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, r := range l {
			if !(r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
				return false
			}
		}
	}
	tld := labels[len(labels)-1]
	for _, r := range tld {
		if !unicode.IsLetter(r) && !strings.HasPrefix(tld, "xn--") {
			return false
		}
	}
	return true
}

// codeFormats maps fenced code block languages (lower case) to containsCode's formats.
var codeFormats = map[string]string{
	"sql": "SQL", "python": "Python", "py": "Python", "typescript": "TypeScript", "ts": "TypeScript",
	"tsx": "TypeScript", "javascript": "JavaScript", "js": "JavaScript", "jsx": "JavaScript", "java": "Java",
	"c#": "C#", "csharp": "C#", "cs": "C#", "c++": "C++", "cpp": "C++", "cxx": "C++", "c": "C", "h": "C",
	"ruby": "Ruby", "rb": "Ruby", "php": "PHP", "swift": "Swift", "kotlin": "Kotlin", "kt": "Kotlin", "go": "Go",
	"golang": "Go", "rust": "Rust", "rs": "Rust", "scala": "Scala", "r": "R", "perl": "Perl", "pl": "Perl",
	"shell": "Shell", "sh": "Shell", "bash": "Shell", "zsh": "Shell", "html": "HTML", "css": "CSS", "xml": "XML",
	"json": "JSON", "yaml": "YAML", "yml": "YAML", "markdown": "Markdown", "md": "Markdown",
	"dockerfile": "Dockerfile", "docker": "Dockerfile",
}

var fencePattern = regexp.MustCompile("(?m)^[ \t]*```[ \t]*([A-Za-z0-9#+_-]*)")

// containsCode {format, not}: passes when the text has a fenced code block (```lang) of format (SQL, Python,
// TypeScript, JavaScript, Java, C#, C++, C, Ruby, PHP, Swift, Kotlin, Go, Rust, Scala, R, Perl, Shell, HTML, CSS,
// XML, JSON, YAML, Markdown, Dockerfile; case-insensitive).
func newContainsCode(raw json.RawMessage) (Check, error) {
	p := parseParams(raw)
	format := p.str("format", true, "")
	known := ""
	for _, f := range codeFormats {
		if strings.EqualFold(f, format) {
			known = f
		}
	}
	if known == "" {
		p.fail("format", "%q is not a known code format", format)
	}
	not := p.boolean("not", false)
	if p.err != nil {
		return nil, p.err
	}
	static := `"format":` + jsonText(known) + `,"not":` + strconv.FormatBool(not)
	return &native{f: func(in *hostapi.Input) hostapi.Output {
		var found []string
		ms := fencePattern.FindAllStringSubmatch(in.Text, -1)
		for i := 0; i < len(ms); i += 2 { // opening fences only
			if f := codeFormats[strings.ToLower(ms[i][1])]; f != "" && !slices.Contains(found, f) {
				found = append(found, f)
			}
		}
		d := dataStart(static, 32)
		if found != nil {
			d = dataRaw(d, "formatsFound", jsonText(found))
		}
		return verdictOutput(slices.Contains(found, known) != not, dataEnd(d))
	}}, nil
}

// caseCheck builds allUppercase and allLowercase {not}: passes when no letter of the text is of the other case.
func caseCheck(raw json.RawMessage, upper bool) (Check, error) {
	p := parseParams(raw)
	not := p.boolean("not", false)
	if p.err != nil {
		return nil, p.err
	}
	return &native{f: func(in *hostapi.Input) hostapi.Output {
		ok := true
		for _, r := range in.Text {
			if upper && unicode.IsLower(r) || !upper && unicode.IsUpper(r) {
				ok = false
				break
			}
		}
		return hostapi.Output{Verdict: ok != not}
	}}, nil
}

func newAllUppercase(raw json.RawMessage) (Check, error) { return caseCheck(raw, true) }

func newAllLowercase(raw json.RawMessage) (Check, error) { return caseCheck(raw, false) }

// endsWith {suffix, not}: passes when the text, without trailing white space, ends with suffix.
func newEndsWith(raw json.RawMessage) (Check, error) {
	p := parseParams(raw)
	suffix := p.str("suffix", true, "")
	not := p.boolean("not", false)
	if p.err != nil {
		return nil, p.err
	}
	return &native{f: func(in *hostapi.Input) hostapi.Output {
		return hostapi.Output{Verdict: strings.HasSuffix(strings.TrimRightFunc(in.Text, unicode.IsSpace), suffix) != not}
	}}, nil
}

// notNull {not}: passes when the text is not empty or white space only.
func newNotNull(raw json.RawMessage) (Check, error) {
	p := parseParams(raw)
	not := p.boolean("not", false)
	if p.err != nil {
		return nil, p.err
	}
	return &native{f: func(in *hostapi.Input) hostapi.Output {
		return hostapi.Output{Verdict: (strings.TrimSpace(in.Text) != "") != not}
	}}, nil
}

// --- request checks ---------------------------------------------------------------------------------------------

// modelWhitelist {models, inverse}: passes when the request's model is one of models (a trailing '*' matches a
// prefix), or is not when inverse is true.
func newModelWhitelist(raw json.RawMessage) (Check, error) {
	p := parseParams(raw)
	models := p.strings("models", true)
	inverse := p.boolean("inverse", false)
	if !p.has("inverse") {
		inverse = p.boolean("not", false)
	}
	if p.err != nil {
		return nil, p.err
	}
	return &native{f: func(in *hostapi.Input) hostapi.Output {
		listed := false
		for _, m := range models {
			if m == in.Model || strings.HasSuffix(m, "*") && strings.HasPrefix(in.Model, m[:len(m)-1]) {
				listed = true
				break
			}
		}
		return verdictOutput(listed != inverse, []byte(`{"model":`+jsonText(in.Model)+`}`))
	}}, nil
}

// requiredMetadataKeys {metadataKeys, operator (all|any|none, default all)}: checks the request's metadata keys.
func newRequiredMetadataKeys(raw json.RawMessage) (Check, error) {
	p := parseParams(raw)
	keys := p.strings("metadataKeys", true)
	op := p.operator("operator", "all")
	if p.err != nil {
		return nil, p.err
	}
	return &native{f: func(in *hostapi.Input) hostapi.Output {
		var missing []string
		for _, k := range keys {
			if !slices.ContainsFunc(in.Metadata, func(kv hostapi.KV) bool { return kv.Key == k }) {
				missing = append(missing, k)
			}
		}
		present := len(keys) - len(missing)
		var verdict bool
		switch op {
		case "all":
			verdict = len(missing) == 0
		case "any":
			verdict = present > 0
		default:
			verdict = present == 0
		}
		d := dataRaw(dataStart(`"operator":"`+op+`"`, 32), "missingKeys", jsonText(missing))
		return verdictOutput(verdict, dataEnd(d))
	}}, nil
}

// requestTypes maps Portkey's request type names to hostapi.Input.Endpoint values.
var requestTypes = map[string]string{
	"chat": "chat", "chatComplete": "chat", "chat_completions": "chat",
	"completions": "completions", "complete": "completions",
	"embeddings": "embeddings", "embed": "embeddings",
}

// allowedRequestTypes {allowedTypes, blockedTypes}: passes when the endpoint (chat, completions, embeddings;
// Portkey's chatComplete, complete and embed are accepted too) is in allowedTypes (when given) and not in
// blockedTypes.
func newAllowedRequestTypes(raw json.RawMessage) (Check, error) {
	p := parseParams(raw)
	norm := func(name string) []string {
		list := p.strings(name, false)
		out := make([]string, 0, len(list))
		for _, t := range list {
			e, ok := requestTypes[t]
			if !ok {
				e = t // other endpoints (e.g. future ones) by their own name
			}
			out = append(out, e)
		}
		return out
	}
	allowed, blocked := norm("allowedTypes"), norm("blockedTypes")
	if len(allowed) == 0 && len(blocked) == 0 {
		p.fail("allowedTypes", "allowedTypes or blockedTypes is required")
	}
	if p.err != nil {
		return nil, p.err
	}
	return &native{f: func(in *hostapi.Input) hostapi.Output {
		ok := (len(allowed) == 0 || slices.Contains(allowed, in.Endpoint)) && !slices.Contains(blocked, in.Endpoint)
		return verdictOutput(ok, []byte(`{"requestType":`+jsonText(in.Endpoint)+`}`))
	}}, nil
}

// --- transformers -----------------------------------------------------------------------------------------------

// regexReplace {rule, replacement (default "[REDACTED]")}: replaces every match of rule ($1 expands groups). It
// passes and transforms the text when something matched; otherwise it passes without transforming.
func newRegexReplace(raw json.RawMessage) (Check, error) {
	p := parseParams(raw)
	_, re := p.regex("rule")
	repl := p.str("replacement", false, "[REDACTED]")
	if p.err != nil {
		return nil, p.err
	}
	return &nativeTransformer{native{f: func(in *hostapi.Input) hostapi.Output {
		out := hostapi.NewOutput()
		n := 0
		if re.mayMatch(in.Text) {
			n = len(re.re.FindAllStringIndex(in.Text, -1))
		}
		if n > 0 {
			out.SetTransformedText(re.re.ReplaceAllString(in.Text, repl))
		}
		out.Data = dataEnd(dataInt(dataStart("", 16), "replaced", n))
		return out
	}}}, nil
}

// addPrefix {prefix}: passes and prepends prefix to the text.
func newAddPrefix(raw json.RawMessage) (Check, error) {
	p := parseParams(raw)
	prefix := p.str("prefix", true, "")
	if p.err != nil {
		return nil, p.err
	}
	return &nativeTransformer{native{f: func(in *hostapi.Input) hostapi.Output {
		out := hostapi.NewOutput()
		out.SetTransformedText(prefix + in.Text)
		return out
	}}}, nil
}
