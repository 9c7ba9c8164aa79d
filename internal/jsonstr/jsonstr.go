// Package jsonstr writes, reads and skims JSON without encoding/json's reflection and allocations, for the
// packages that handle JSON by hand on hot paths: the stream translators, the cache (keys, stream recording,
// replay), the rate limiter (a body's model), prompt rendering and the request log's encoder (storage). It is a
// leaf: it imports nothing of ours, so that storage may use it. ScanValue validates as it skims; Unquote decodes
// a string literal as encoding/json does.
package jsonstr

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, escaped as encoding/json does except that <, > and & are left as
// they are: quotes, backslashes and control characters escaped, invalid UTF-8 replaced by U+FFFD, and U+2028
// and U+2029 escaped so that the output is also valid JavaScript.
func AppendString[S ~string | ~[]byte](b []byte, s S) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := decodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// decodeRune is utf8.DecodeRune for a string or a byte slice, without converting either.
func decodeRune[S ~string | ~[]byte](s S) (rune, int) {
	var buf [utf8.UTFMax]byte
	n := copy(buf[:], s)
	return utf8.DecodeRune(buf[:n])
}
