// Command router is an example routing condition: it matches a request whose prompt is long, whose prompt does
// not look English, or that asks for many output tokens, so that a conditional routing config can send it to
// a bigger (or multilingual) model.
//
// Build it with:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o router.wasm .
//
// Parameters: "min_chars" (a number), "non_english" (a boolean, default true) and "min_max_tokens" (a number).
// See README.md.
package main

import (
	"strconv"
	"unicode"
	"unicode/utf8"

	sdk "github.com/llmgw/gateway/sdk-guest"
)

func init() { sdk.HandleCondition(match) }

func main() {}

// Thresholds of the language heuristic.
const (
	// nonLatinShare is the share of letters outside the Latin script (Cyrillic, Greek, Arabic, Hebrew, CJK,
	// Devanagari, ...) from which a text is not English.
	nonLatinShare = 0.3
	// accentedShare and minAccented: a Latin-script text with at least minAccented letters outside ASCII
	// (é, ß, ñ, ł, ...) making up at least accentedShare of its letters is not English.
	accentedShare = 0.04
	minAccented   = 2
)

func match(in sdk.Input) bool {
	if min, ok := in.ParamInt("min_chars"); ok {
		if n := utf8.RuneCountInString(in.Text); int64(n) > min {
			sdk.Log(sdk.LevelDebug, "router: prompt has "+strconv.Itoa(n)+" characters, more than min_chars")
			return true
		}
	}
	if on, ok := in.ParamBool("non_english"); on || !ok {
		if lang := script(in.Text); lang != "" {
			sdk.Log(sdk.LevelDebug, "router: prompt looks non-English ("+lang+")")
			return true
		}
	}
	if min, ok := in.ParamInt("min_max_tokens"); ok {
		// max_tokens is not in the Input: read it from the request (host function request_field).
		if raw, ok := sdk.RequestField("params.max_tokens"); ok {
			if n, err := strconv.ParseInt(raw, 10, 64); err == nil && n >= min {
				sdk.Log(sdk.LevelDebug, "router: max_tokens "+raw+" is at least min_max_tokens")
				return true
			}
		}
	}
	return false
}

// script returns why text does not look English — "non-Latin script" or "accented Latin letters" — or "" when
// it may be English. It looks only at letters, so code, numbers and punctuation count for nothing.
func script(text string) string {
	var letters, nonLatin, accented int
	for _, r := range text {
		if !unicode.IsLetter(r) {
			continue
		}
		letters++
		switch {
		case !unicode.Is(unicode.Latin, r):
			nonLatin++
		case r >= utf8.RuneSelf:
			accented++
		}
	}
	switch {
	case letters == 0:
		return ""
	case float64(nonLatin) >= nonLatinShare*float64(letters):
		return "non-Latin script"
	case accented >= minAccented && float64(accented) >= accentedShare*float64(letters):
		return "accented Latin letters"
	}
	return ""
}
