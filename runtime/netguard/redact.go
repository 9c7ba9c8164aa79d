package netguard

import (
	"errors"
	"net/url"
	"strings"
)

// RedactURL returns s, a URL or a string meant to be one, with its userinfo replaced by "***", for a message or
// a log line: "http://user:s3cret@host/v1" gives "http://***@host/v1". Every message or log line that shows a
// caller's or an operator's URL (a custom host, a webhook) must pass it through here first: a base URL may
// carry an upstream's password, and the caller who sees a message is not always the one who stored it.
//
// A string without '@' comes back as it is, without allocating. A URL that parses with userinfo loses exactly
// its userinfo. Any other string with an '@' (one that does not parse, or whose '@' the parser does not read as
// userinfo, as in "http://user:pa/ss@host") loses everything from its authority up to its last '@': a message
// may then lose part of a path, but never shows a password that a stricter or looser parser would have read.
func RedactURL(s string) string {
	last := strings.LastIndexByte(s, '@')
	if last < 0 {
		return s
	}
	start := authorityStart(s)
	if u, err := url.Parse(s); err == nil && u.User != nil && start > 0 {
		end := len(s)
		if i := strings.IndexAny(s[start:], "/?#"); i >= 0 {
			end = start + i
		}
		if at := strings.LastIndexByte(s[start:end], '@'); at >= 0 {
			return s[:start] + "***" + s[start+at:]
		}
	}
	if start > last {
		start = 0
	}
	return s[:start] + "***" + s[last:]
}

// authorityStart returns the index after the "//" of "scheme://" or of a leading "//", or 0 when s starts
// otherwise.
func authorityStart(s string) int {
	if strings.HasPrefix(s, "//") {
		return 2
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':' && strings.HasPrefix(s[i+1:], "//"):
			return i + 3
		default:
			return 0
		}
	}
	return 0
}

// RedactError returns err with the userinfo of the URLs in its text hidden, for logs and for messages built
// from causes. net/http and url.Parse put the whole URL in their errors (net/http hides a password but keeps
// the user name, which is often a token).
//
// It rewrites, in place, the URL of every *url.Error in err's tree with RedactURL, so that whoever unwraps err
// finds them redacted; the cause of a parse error of a URL with userinfo is replaced too, as it may quote part
// of it. err must therefore be the caller's own: call RedactError on the error as the failing call returned it,
// before wrapping it. A wrapper that built its text earlier (fmt.Errorf does) still shows the old URL: then the
// result is a new error with the text redacted, which hides the userinfo (though not a parse error's quote of
// part of it) and wraps err, so that errors.Is and errors.As see through it. nil gives nil.
func RedactError(err error) error {
	if err == nil {
		return nil
	}
	redactTree(err)
	text := err.Error()
	if red := redactText(text); red != text {
		return &redactedError{text: red, err: err}
	}
	return err
}

// redactedError is an error whose text was redacted after it was built.
type redactedError struct {
	text string
	err  error
}

func (e *redactedError) Error() string { return e.text }
func (e *redactedError) Unwrap() error { return e.err }

// errHiddenParse stands for the cause of a parse error whose text could hold part of a password.
var errHiddenParse = errors.New("malformed URL (details hidden, as they may hold credentials)")

func redactTree(err error) {
	for err != nil {
		if ue, ok := err.(*url.Error); ok {
			if r := RedactURL(ue.URL); r != ue.URL {
				ue.URL = r
				if ue.Op == "parse" {
					// A parse error quotes the piece it stumbled on ("invalid port \":s3cret\" after host"),
					// which may be part of the password. It has no type worth keeping for errors.Is.
					ue.Err = errHiddenParse
				}
			}
		}
		switch x := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				redactTree(e)
			}
			return
		case interface{ Unwrap() error }:
			err = x.Unwrap()
		default:
			return
		}
	}
}

// redactText hides the userinfo of every "scheme://" URL in a text: what lies between the "://" and the last
// '@' before the URL ends (at a space, a quote or an angle bracket) becomes "***".
func redactText(s string) string {
	var b strings.Builder
	done := 0 // s[:done] is in b, or b is empty and nothing changed yet
	for pos := 0; ; {
		j := strings.Index(s[pos:], "://")
		if j < 0 {
			break
		}
		start := pos + j + 3
		end := start
		for end < len(s) && !strings.ContainsRune(" \t\r\n\"'`<>", rune(s[end])) {
			end++
		}
		if at := strings.LastIndexByte(s[start:end], '@'); at > 0 && s[start:start+at] != "***" {
			b.WriteString(s[done:start])
			b.WriteString("***")
			done = start + at
		}
		pos = end
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}
