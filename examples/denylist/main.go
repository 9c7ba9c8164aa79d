// Command denylist is an example guardrail plugin: it fails when the checked text contains a deny-listed word
// (case-insensitive, whole words only) or matches a deny-listed regular expression, and names what matched.
//
// Build it with:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o denylist.wasm .
//
// Parameters: "words" (an array of strings), "patterns" (an array of Go regular expressions, RE2 syntax) and
// "kv" (a key of the workspace's plugin key-value store whose value holds more words, one per line, read on
// every call so that an admin's PUT /v1/plugin-kv/{key} changes the list without a new module). See README.md.
package main

import (
	"errors"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	sdk "github.com/llmgw/gateway/sdk-guest"
)

func init() { sdk.HandleCheck(check) }

func main() {}

func check(in sdk.Input) sdk.Result {
	var words, patterns []string
	if raw, ok := in.Param("words"); ok {
		if words, ok = in.ParamStrings("words"); !ok {
			return sdk.Error(errors.New(`denylist: parameter "words" must be an array of strings, not ` + raw))
		}
	}
	if raw, ok := in.Param("kv"); ok {
		key, ok := in.ParamString("kv")
		if !ok {
			return sdk.Error(errors.New(`denylist: parameter "kv" must be a string (a key of the plugin key-value store), not ` + raw))
		}
		words = append(words, kvWords(key)...)
	}
	if raw, ok := in.Param("patterns"); ok {
		if patterns, ok = in.ParamStrings("patterns"); !ok {
			return sdk.Error(errors.New(`denylist: parameter "patterns" must be an array of strings, not ` + raw))
		}
	}

	var matchedWords, matchedPatterns []string
	lower := strings.ToLower(in.Text)
	for _, w := range words {
		if w != "" && containsWord(lower, strings.ToLower(w)) {
			matchedWords = append(matchedWords, w)
		}
	}
	for _, p := range patterns {
		re, err := compile(p)
		if err != nil {
			return sdk.Error(errors.New("denylist: pattern " + p + ": " + err.Error()))
		}
		if re.MatchString(in.Text) {
			matchedPatterns = append(matchedPatterns, p)
		}
	}
	if matchedWords == nil && matchedPatterns == nil {
		return sdk.Pass()
	}
	r := sdk.Fail("deny-listed content")
	if matchedWords != nil {
		r = r.With("words", matchedWords)
	}
	if matchedPatterns != nil {
		r = r.With("patterns", matchedPatterns)
	}
	return r
}

// kvWords returns the words of the plugin key-value store's value under key: one per line, spaces around them
// dropped, empty lines skipped. An absent key holds no words: the list may not be filled yet.
func kvWords(key string) []string {
	value, ok := sdk.KVGet(key)
	if !ok {
		return nil
	}
	var words []string
	for line := range strings.Lines(value) {
		if w := strings.TrimSpace(line); w != "" {
			words = append(words, w)
		}
	}
	return words
}

// isWord reports whether r is part of a word: a letter, a digit, a combining mark or '_'.
func isWord(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || r == '_'
}

// containsWord reports whether word occurs in text as a whole word: not preceded or followed by a word
// character where the word itself begins or ends with one (so "c++" and "u.s." work too). Both are lower case.
func containsWord(text, word string) bool {
	first, _ := utf8.DecodeRuneInString(word)
	last, _ := utf8.DecodeLastRuneInString(word)
	for from := 0; ; {
		i := strings.Index(text[from:], word)
		if i < 0 {
			return false
		}
		start, end := from+i, from+i+len(word)
		before, _ := utf8.DecodeLastRuneInString(text[:start])
		after, _ := utf8.DecodeRuneInString(text[end:])
		if (start == 0 || !isWord(first) || !isWord(before)) && (end == len(text) || !isWord(last) || !isWord(after)) {
			return true
		}
		_, size := utf8.DecodeRuneInString(text[start:])
		from = start + size
	}
}

// compiled caches compiled patterns across calls: a check's parameters are the same on every call, and an
// instance serves one workspace's checks. It is bounded so that varied patterns cannot grow it for ever.
var compiled = map[string]*regexp.Regexp{}

const maxCompiled = 256

func compile(p string) (*regexp.Regexp, error) {
	if re, ok := compiled[p]; ok {
		return re, nil
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, err
	}
	if len(compiled) >= maxCompiled {
		clear(compiled)
	}
	compiled[p] = re
	return re, nil
}
