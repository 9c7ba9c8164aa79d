package anthropicmsg

import (
	"unicode/utf16"
	"unicode/utf8"
)

// Most events of a stream are content_block_delta events of one small shape:
//
//	{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}
//
// parseDelta reads exactly that shape (keys in any order) without allocating, so that a streamed chunk costs no
// garbage. Anything else — another event, another key, an escape in a key, a duplicate key, a number that is not
// a plain integer — makes it return ok false, and the event goes through encoding/json. FuzzParseDelta checks
// that both agree.

// fastDelta is what parseDelta found. value aliases the scratch buffer given to parseDelta.
type fastDelta struct {
	index int
	typ   string // one of the delta types below
	value []byte
}

// deltaField names the one value field of each delta type the fast path knows.
func deltaField(typ string) string {
	switch typ {
	case "text_delta":
		return "text"
	case "input_json_delta":
		return "partial_json"
	case "thinking_delta":
		return "thinking"
	case "signature_delta":
		return "signature"
	}
	return ""
}

// internDeltaType returns the constant for a known delta type, so that no string is allocated.
func internDeltaType(b []byte) string {
	switch string(b) {
	case "text_delta":
		return "text_delta"
	case "input_json_delta":
		return "input_json_delta"
	case "thinking_delta":
		return "thinking_delta"
	case "signature_delta":
		return "signature_delta"
	}
	return ""
}

type scan struct {
	b []byte
	i int
}

func (s *scan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scan) byte(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// plain reads a string without escapes (a key or a type name) and returns its bytes.
func (s *scan) plain() ([]byte, bool) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		c := s.b[j]
		switch {
		case c == '"':
			s.i = j + 1
			return s.b[start:j], true
		case c == '\\', c < 0x20, c >= utf8.RuneSelf:
			return nil, false
		}
	}
	return nil, false
}

// str reads a string value, unescaping it into dst.
func (s *scan) str(dst []byte) ([]byte, bool) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return dst, false
	}
	j := s.i + 1
	for j < len(s.b) {
		c := s.b[j]
		switch {
		case c == '"':
			s.i = j + 1
			return dst, true
		case c < 0x20:
			return dst, false
		case c != '\\':
			start := j
			for j < len(s.b) && s.b[j] != '"' && s.b[j] != '\\' && s.b[j] >= 0x20 {
				j++
			}
			dst = append(dst, s.b[start:j]...)
			continue
		}
		if j+1 >= len(s.b) {
			return dst, false
		}
		switch e := s.b[j+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(s.b, j+2)
			if !ok {
				return dst, false
			}
			j += 6
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if j+1 < len(s.b) && s.b[j] == '\\' && s.b[j+1] == 'u' {
					if v, ok := hex4(s.b, j+2); ok {
						r2 = v
					}
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
					j += 6
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default:
			return dst, false
		}
		j += 2
	}
	return dst, false
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// int reads a non-negative integer without a leading zero, small enough for an int.
func (s *scan) int() (int, bool) {
	s.ws()
	start, n := s.i, 0
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		if n > 1<<30 {
			return 0, false
		}
		n = n*10 + int(s.b[s.i]-'0')
		s.i++
	}
	digits := s.i - start
	if digits == 0 || digits > 1 && s.b[start] == '0' {
		return 0, false
	}
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	return n, true
}

// parseDelta reads a content_block_delta event of the common shape; scratch receives the unescaped value.
func parseDelta(data, scratch []byte) (d fastDelta, ok bool) {
	s := scan{b: data}
	if !s.byte('{') {
		return d, false
	}
	var seenType, seenIndex, seenDelta bool
	for {
		key, ok := s.plain()
		if !ok || !s.byte(':') {
			return d, false
		}
		switch string(key) {
		case "type":
			v, ok := s.plain()
			if !ok || seenType || string(v) != "content_block_delta" {
				return d, false
			}
			seenType = true
		case "index":
			n, ok := s.int()
			if !ok || seenIndex {
				return d, false
			}
			d.index, seenIndex = n, true
		case "delta":
			if seenDelta || !s.byte('{') {
				return d, false
			}
			seenDelta = true
			var field []byte
			var seenValue bool
			for {
				k, ok := s.plain()
				if !ok || !s.byte(':') {
					return d, false
				}
				if string(k) == "type" {
					v, ok := s.plain()
					if !ok || d.typ != "" {
						return d, false
					}
					if d.typ = internDeltaType(v); d.typ == "" {
						return d, false
					}
				} else {
					if seenValue {
						return d, false
					}
					field = k
					if scratch, ok = s.str(scratch[:0]); !ok {
						return d, false
					}
					seenValue = true
				}
				if s.byte(',') {
					continue
				}
				if !s.byte('}') {
					return d, false
				}
				break
			}
			if d.typ == "" || !seenValue || string(field) != deltaField(d.typ) {
				return d, false
			}
			d.value = scratch
		default:
			return d, false
		}
		if s.byte(',') {
			continue
		}
		if !s.byte('}') {
			return d, false
		}
		break
	}
	s.ws()
	if s.i != len(s.b) || !seenType || !seenIndex || !seenDelta {
		return d, false
	}
	return d, true
}
