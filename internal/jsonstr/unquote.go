package jsonstr

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Unquote decodes the JSON string literal q as encoding/json does (invalid UTF-8 and lone surrogates become
// U+FFFD). It reports false when q is not a string literal.
func Unquote(q []byte) (string, bool) {
	if len(q) >= 2 && q[0] == '"' && q[len(q)-1] == '"' && PlainString(q[1:len(q)-1]) {
		return string(q[1 : len(q)-1]), true
	}
	var sb strings.Builder
	ok := AppendUnquote(&sb, q)
	return sb.String(), ok
}

// PlainString reports whether s needs no decoding: no escape, no control character, valid UTF-8.
func PlainString(s []byte) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c == '\\' || c == '"' || c < 0x20 {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			return false
		}
		i += size
	}
	return true
}

// AppendUnquote decodes the JSON string literal q onto sb, as Unquote does.
func AppendUnquote(sb *strings.Builder, q []byte) bool {
	s, ok := stringBody(q)
	for i := 0; ok && i < len(s); {
		var run []byte
		var r rune
		run, r, i, ok = unquoteStep(s, i)
		sb.Write(run)
		if r >= 0 {
			sb.WriteRune(r)
		}
	}
	return ok
}

// AppendUnquoteBytes decodes the JSON string literal q onto dst, as Unquote does, for readers that reuse one
// buffer so as to allocate nothing.
func AppendUnquoteBytes(dst, q []byte) ([]byte, bool) {
	s, ok := stringBody(q)
	for i := 0; ok && i < len(s); {
		var run []byte
		var r rune
		run, r, i, ok = unquoteStep(s, i)
		dst = append(dst, run...)
		if r >= 0 {
			dst = utf8.AppendRune(dst, r)
		}
	}
	return dst, ok
}

// stringBody is what lies between the quotes of the string literal q.
func stringBody(q []byte) ([]byte, bool) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return nil, false
	}
	return q[1 : len(q)-1], true
}

// unquoteStep is the one decoding loop of AppendUnquote and AppendUnquoteBytes, cut where they must write
// something other than the input: it reads s, a string literal's body, from i through the next escape or
// invalid UTF-8 byte. run is the text before that, r what it decodes to (-1 when s ended first) and next where
// to go on; ok is false when s cannot be the body of a string literal.
func unquoteStep(s []byte, i int) (run []byte, r rune, next int, ok bool) {
	start := i
	for {
		for i < len(s) && ascii[s[i]] {
			i++
		}
		if i >= len(s) {
			return s[start:], -1, i, true
		}
		switch c := s[i]; {
		case c == '\\':
			r, next, ok = unescape(s, i)
			return s[start:i], r, next, ok
		case c == '"' || c < 0x20:
			return nil, -1, i, false
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			return s[start:i], utf8.RuneError, i + 1, true
		}
		i += size
	}
}

// unescape decodes the escape at s[i] == '\\', joining a UTF-16 surrogate pair; a lone surrogate is U+FFFD.
func unescape(s []byte, i int) (r rune, next int, ok bool) {
	if i+1 >= len(s) {
		return -1, i, false
	}
	switch e := s[i+1]; e {
	case '"', '\\', '/':
		return rune(e), i + 2, true
	case 'b':
		return '\b', i + 2, true
	case 'f':
		return '\f', i + 2, true
	case 'n':
		return '\n', i + 2, true
	case 'r':
		return '\r', i + 2, true
	case 't':
		return '\t', i + 2, true
	case 'u':
		r = hex4(s[i+2:])
		if r < 0 {
			return -1, i, false
		}
		i += 6
		if utf16.IsSurrogate(r) {
			r2 := rune(-1)
			if i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
				r2 = hex4(s[i+2:])
			}
			if d := utf16.DecodeRune(r, r2); d != unicode.ReplacementChar {
				return d, i + 6, true
			}
			return unicode.ReplacementChar, i, true
		}
		return r, i, true
	}
	return -1, i, false
}

// hex4 decodes the four hex digits at the start of s, or returns -1.
func hex4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// ascii marks the bytes that decode to themselves: ASCII other than a quote, a backslash or a control character.
var ascii = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()
