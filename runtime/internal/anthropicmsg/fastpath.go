package anthropicmsg

import "github.com/llmgw/gateway/internal/jsonstr"

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

// scan walks an event with jsonstr's primitives, which check strings as encoding/json does.
type scan struct{ jsonstr.Cursor }

// name reads a key or a type name undecoded. An escape (t\u0079pe) makes it differ from every name the fast
// path compares it with, so such an event goes through encoding/json, which decodes it.
func (s *scan) name() ([]byte, bool) {
	q, ok := s.Literal()
	if !ok {
		return nil, false
	}
	return q[1 : len(q)-1], true
}

// str reads a string value, unescaping it into dst.
func (s *scan) str(dst []byte) ([]byte, bool) {
	q, ok := s.Literal()
	if !ok {
		return dst, false
	}
	return jsonstr.AppendUnquoteBytes(dst, q)
}

// int reads a non-negative integer without a leading zero, small enough for an int.
func (s *scan) int() (int, bool) {
	s.I = jsonstr.SkipSpace(s.B, s.I)
	start, n := s.I, 0
	for s.I < len(s.B) && '0' <= s.B[s.I] && s.B[s.I] <= '9' {
		if n > 1<<30 {
			return 0, false
		}
		n = n*10 + int(s.B[s.I]-'0')
		s.I++
	}
	digits := s.I - start
	if digits == 0 || digits > 1 && s.B[start] == '0' {
		return 0, false
	}
	if s.I < len(s.B) {
		switch s.B[s.I] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	return n, true
}

// parseDelta reads a content_block_delta event of the common shape; scratch receives the unescaped value.
func parseDelta(data, scratch []byte) (d fastDelta, ok bool) {
	s := scan{Cursor: jsonstr.Cursor{B: data}}
	if !s.Byte('{') {
		return d, false
	}
	var seenType, seenIndex, seenDelta bool
	for {
		key, ok := s.name()
		if !ok || !s.Byte(':') {
			return d, false
		}
		switch string(key) {
		case "type":
			v, ok := s.name()
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
			if seenDelta || !s.Byte('{') {
				return d, false
			}
			seenDelta = true
			var field []byte
			var seenValue bool
			for {
				k, ok := s.name()
				if !ok || !s.Byte(':') {
					return d, false
				}
				if string(k) == "type" {
					v, ok := s.name()
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
				if s.Byte(',') {
					continue
				}
				if !s.Byte('}') {
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
		if s.Byte(',') {
			continue
		}
		if !s.Byte('}') {
			return d, false
		}
		break
	}
	if jsonstr.SkipSpace(s.B, s.I) != len(s.B) || !seenType || !seenIndex || !seenDelta {
		return d, false
	}
	return d, true
}
