package jsonstr

import (
	"encoding/binary"
	"errors"
	"math/bits"
)

// MaxDepth bounds the nesting ScanValue accepts.
const MaxDepth = 256

var (
	// ErrSyntax: the bytes are not valid JSON.
	ErrSyntax = errors.New("jsonstr: not valid JSON")
	// ErrTooDeep: the value nests deeper than MaxDepth.
	ErrTooDeep = errors.New("jsonstr: JSON nests too deep")
)

// IsSpace reports whether c is JSON white space.
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// SkipSpace returns the index of the first byte at or after i that is not white space.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && IsSpace(b[i]) {
		i++
	}
	return i
}

// ScanValue checks the syntax of the value at b[i:] and returns its end.
func ScanValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return 0, ErrSyntax
	}
	switch c := b[i]; {
	case c == '"':
		return ScanString(b, i)
	case c == '{' || c == '[':
		if depth >= MaxDepth {
			return 0, ErrTooDeep
		}
		close := byte('}')
		if c == '[' {
			close = ']'
		}
		i = SkipSpace(b, i+1)
		if i < len(b) && b[i] == close {
			return i + 1, nil
		}
		for {
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return 0, ErrSyntax
				}
				end, err := ScanString(b, i)
				if err != nil {
					return 0, err
				}
				i = SkipSpace(b, end)
				if i >= len(b) || b[i] != ':' {
					return 0, ErrSyntax
				}
				i = SkipSpace(b, i+1)
			}
			end, err := ScanValue(b, i, depth+1)
			if err != nil {
				return 0, err
			}
			i = SkipSpace(b, end)
			if i >= len(b) {
				return 0, ErrSyntax
			}
			if b[i] == close {
				return i + 1, nil
			}
			if b[i] != ',' {
				return 0, ErrSyntax
			}
			i = SkipSpace(b, i+1)
		}
	case c == '-' || c >= '0' && c <= '9':
		return scanNumber(b, i)
	case c == 't':
		return scanLiteral(b, i, "true")
	case c == 'f':
		return scanLiteral(b, i, "false")
	case c == 'n':
		return scanLiteral(b, i, "null")
	}
	return 0, ErrSyntax
}

func scanLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, ErrSyntax
	}
	return i + len(lit), nil
}

// plain marks the bytes a string may hold as they are: not a quote, a backslash or a control character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// ScanString checks the string at b[i] == '"' and returns the position after its closing quote.
func ScanString(b []byte, i int) (int, error) {
	for i++; i < len(b); i++ {
		i = skipPlain(b, i)
		if i >= len(b) {
			break
		}
		switch b[i] {
		case '"':
			return i + 1, nil
		case '\\':
			i++
			if i >= len(b) {
				return 0, ErrSyntax
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i <= 4 {
					return 0, ErrSyntax
				}
				for _, h := range b[i+1 : i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return 0, ErrSyntax
					}
				}
				i += 4
			default:
				return 0, ErrSyntax
			}
		default:
			return 0, ErrSyntax // a control character
		}
	}
	return 0, ErrSyntax
}

// scanNumber checks the number at b[i:] against JSON's grammar and returns its end.
func scanNumber(b []byte, i int) (int, error) {
	if b[i] == '-' {
		i++
	}
	digits := func() bool {
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > start
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return 0, ErrSyntax
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return 0, ErrSyntax
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return 0, ErrSyntax
		}
	}
	return i, nil
}

// skipPlain returns the position of the first byte at or after i that is not plain (or len(b)), eight bytes
// at a time: the lowest byte that is a quote, a backslash or a control character sets the lowest bit of the
// mask (borrows run only upwards), so its position is exact.
func skipPlain(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(b); i += 8 {
		v := binary.LittleEndian.Uint64(b[i:])
		q, bs := v^(ones*'"'), v^(ones*'\\')
		if m := ((q-ones)&^q | (bs-ones)&^bs | (v-ones*0x20)&^v) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(b) && plain[b[i]] {
		i++
	}
	return i
}

// Cursor walks a JSON text token by token for the hand-written fast paths of the stream translators: each method
// skips white space first, and reports false (leaving I where the token should have been) when the next token is
// not what it asks for.
type Cursor struct {
	B []byte
	I int
}

// Byte consumes the structural character c.
func (s *Cursor) Byte(c byte) bool {
	s.I = SkipSpace(s.B, s.I)
	if s.I < len(s.B) && s.B[s.I] == c {
		s.I++
		return true
	}
	return false
}

// Literal consumes the string literal at the next token and returns it, quotes included and undecoded.
func (s *Cursor) Literal() ([]byte, bool) {
	s.I = SkipSpace(s.B, s.I)
	if s.I >= len(s.B) || s.B[s.I] != '"' {
		return nil, false
	}
	end, err := ScanString(s.B, s.I)
	if err != nil {
		return nil, false
	}
	q := s.B[s.I:end]
	s.I = end
	return q, true
}

// Word consumes the literal w (true, false, null).
func (s *Cursor) Word(w string) bool {
	s.I = SkipSpace(s.B, s.I)
	if len(s.B)-s.I < len(w) || string(s.B[s.I:s.I+len(w)]) != w {
		return false
	}
	s.I += len(w)
	return true
}
