// Command pii is an example guardrail plugin: it finds email addresses, phone numbers and credit-card numbers
// (digit runs that pass the Luhn check) in the checked text, and either denies the text or redacts them.
//
// Build it with:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o pii.wasm .
//
// Parameters: "action" ("deny", the default, or "redact") and "types" (an array of "email", "phone",
// "credit_card"; all three by default). See README.md.
package main

import (
	"errors"
	"regexp"
	"slices"
	"strings"

	sdk "github.com/llmgw/gateway/sdk-guest"
)

// Kinds of PII, as named in the "types" parameter and in the result's data.
const (
	kindEmail      = "email"
	kindPhone      = "phone"
	kindCreditCard = "credit_card"
)

var allKinds = []string{kindCreditCard, kindEmail, kindPhone} // also the priority when matches overlap

var (
	emailRE = regexp.MustCompile(`[\p{L}\p{N}._%+-]+@[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)*\.\p{L}{2,}`)
	// cardRE finds 13 to 19 digits, optionally grouped by single spaces or dashes.
	cardRE = regexp.MustCompile(`\d(?:[ -]?\d){12,18}`)
	// phoneRE finds an optional +country code, an optional (area code), then two to five groups of digits
	// separated by a space, dot or dash; phone() then checks the digit count and shape.
	phoneRE = regexp.MustCompile(`(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]\d{2,4}){1,4}|\+\d{7,15}|\d{10}`)
)

func init() { sdk.HandleCheck(check) }

func main() {}

// span is one finding: text[start:end] is PII of kind.
type span struct {
	start, end int
	kind       string
}

func check(in sdk.Input) sdk.Result {
	action := "deny"
	if raw, ok := in.Param("action"); ok {
		if action, ok = in.ParamString("action"); !ok || (action != "deny" && action != "redact") {
			return sdk.Error(errors.New(`pii: parameter "action" must be "deny" or "redact", not ` + raw))
		}
	}
	kinds := allKinds
	if raw, ok := in.Param("types"); ok {
		if kinds, ok = in.ParamStrings("types"); !ok {
			return sdk.Error(errors.New(`pii: parameter "types" must be an array of strings, not ` + raw))
		}
		for _, k := range kinds {
			if !slices.Contains(allKinds, k) {
				return sdk.Error(errors.New(`pii: unknown type "` + k + `" (want email, phone or credit_card)`))
			}
		}
	}

	spans := find(in.Text, kinds)
	if len(spans) == 0 {
		return sdk.Pass()
	}
	found := map[string]int{}
	for _, s := range spans {
		found[s.kind]++
	}
	if action == "deny" {
		return sdk.Fail("PII detected").With("found", found)
	}
	return sdk.Transform(redact(in.Text, spans)).With("redacted", found)
}

// find returns the PII in text, of the given kinds, sorted by position and without overlaps (a credit card
// wins over an email, which wins over a phone number).
func find(text string, kinds []string) []span {
	var spans []span
	taken := func(start, end int) bool {
		for _, s := range spans {
			if start < s.end && s.start < end {
				return true
			}
		}
		return false
	}
	for _, kind := range allKinds {
		if !slices.Contains(kinds, kind) {
			continue
		}
		var re *regexp.Regexp
		var valid func(string) bool
		switch kind {
		case kindEmail:
			re, valid = emailRE, func(string) bool { return true }
		case kindPhone:
			re, valid = phoneRE, phone
		case kindCreditCard:
			re, valid = cardRE, luhn
		}
		for _, m := range re.FindAllStringIndex(text, -1) {
			if !isolated(text, m[0], m[1]) || !valid(text[m[0]:m[1]]) || taken(m[0], m[1]) {
				continue
			}
			spans = append(spans, span{m[0], m[1], kind})
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	return spans
}

// isolated reports whether text[start:end] is not glued to a letter, digit or '@' (so that a match is not
// the middle of a longer number or word).
func isolated(text string, start, end int) bool {
	glued := func(c byte) bool {
		return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '@' || c == '_'
	}
	return (start == 0 || !glued(text[start-1])) && (end == len(text) || !glued(text[end]))
}

func digits(s string) []byte {
	d := make([]byte, 0, len(s))
	for i := range len(s) {
		if s[i] >= '0' && s[i] <= '9' {
			d = append(d, s[i]-'0')
		}
	}
	return d
}

// luhn reports whether the digits of s pass the Luhn checksum used by payment card numbers.
func luhn(s string) bool {
	d := digits(s)
	if len(d) < 13 || len(d) > 19 {
		return false
	}
	sum := 0
	for i := range d {
		v := int(d[len(d)-1-i])
		if i%2 == 1 {
			if v *= 2; v > 9 {
				v -= 9
			}
		}
		sum += v
	}
	return sum%10 == 0
}

// phone reports whether a phoneRE match looks like a phone number rather than a date, a version or an amount:
// 7 to 15 digits (E.164), and either a leading + or (area code), or a last group of at least 4 digits, or a
// plain run of 10 digits.
func phone(s string) bool {
	n := len(digits(s))
	if n < 7 || n > 15 {
		return false
	}
	if s[0] == '+' || strings.HasPrefix(s, "(") || n == len(s) {
		return true
	}
	last := s[strings.LastIndexAny(s, " .-")+1:]
	return len(last) >= 4
}

// redact replaces each span with [REDACTED_<KIND>].
func redact(text string, spans []span) string {
	var b strings.Builder
	b.Grow(len(text))
	at := 0
	for _, s := range spans {
		b.WriteString(text[at:s.start])
		b.WriteString("[REDACTED_" + strings.ToUpper(s.kind) + "]")
		at = s.end
	}
	b.WriteString(text[at:])
	return b.String()
}
