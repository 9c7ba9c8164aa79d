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

// AppendUnquote decodes the JSON string literal q onto sb, as unquote does.
func AppendUnquote(sb *strings.Builder, q []byte) bool {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return false
	}
	s := q[1 : len(q)-1]
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			sb.Write(s[start:i])
			if i+1 >= len(s) {
				return false
			}
			switch e := s[i+1]; e {
			case '"', '\\', '/':
				sb.WriteByte(e)
				i += 2
			case 'b':
				sb.WriteByte('\b')
				i += 2
			case 'f':
				sb.WriteByte('\f')
				i += 2
			case 'n':
				sb.WriteByte('\n')
				i += 2
			case 'r':
				sb.WriteByte('\r')
				i += 2
			case 't':
				sb.WriteByte('\t')
				i += 2
			case 'u':
				r := hex4(s[i+2:])
				if r < 0 {
					return false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
						r2 = hex4(s[i+2:])
					}
					if d := utf16.DecodeRune(r, r2); d != unicode.ReplacementChar {
						r = d
						i += 6
					} else {
						r = unicode.ReplacementChar
					}
				}
				sb.WriteRune(r)
			default:
				return false
			}
			start = i
		case c == '"' || c < 0x20:
			return false
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				sb.Write(s[start:i])
				sb.WriteRune(utf8.RuneError)
				start = i + 1
			}
			i += size
		}
	}
	sb.Write(s[start:])
	return true
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
