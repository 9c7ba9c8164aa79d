package sdk

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is a tiny JSON reader for parameter values (a string, a number, a boolean or an array of strings)
// and a tiny writer for Result.Data, so that a plugin does not need encoding/json for the common case.

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

// whole reports whether only white space follows i.
func whole(s string, i int) bool { return skipSpace(s, i) == len(s) }

// parseString reads the JSON string starting at s[i] (which must be '"') and returns its value and the offset
// after the closing quote. Without escapes the value is a substring of s.
func parseString(s string, i int) (string, int, bool) {
	if i >= len(s) || s[i] != '"' {
		return "", i, false
	}
	i++
	start := i
	for i < len(s) && s[i] != '"' && s[i] != '\\' && s[i] >= 0x20 {
		i++
	}
	if i < len(s) && s[i] == '"' {
		return s[start:i], i + 1, true
	}
	buf := []byte(s[start:i])
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			return string(buf), i + 1, true
		case c < 0x20:
			return "", i, false
		case c != '\\':
			buf = append(buf, c)
			i++
			continue
		}
		if i+1 >= len(s) {
			return "", i, false
		}
		i += 2
		switch s[i-1] {
		case '"', '\\', '/':
			buf = append(buf, s[i-1])
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := hex4(s, i)
			if !ok {
				return "", i, false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
					r2, _ = hex4(s, i+2)
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", i, false
		}
	}
	return "", i, false
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
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

// numberEnd returns the end of the JSON number at s[i], or -1 if there is none.
func numberEnd(s string, i int) int {
	digits := func(i int) int {
		j := i
		for j < len(s) && '0' <= s[j] && s[j] <= '9' {
			j++
		}
		return j
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch j := digits(i); {
	case j == i:
		return -1
	case s[i] == '0' && j > i+1:
		return -1
	default:
		i = j
	}
	if i < len(s) && s[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

// jsonString returns the value of a JSON text that is a single string.
func jsonString(s string) (string, bool) {
	v, i, ok := parseString(s, skipSpace(s, 0))
	if !ok || !whole(s, i) {
		return "", false
	}
	return v, true
}

// jsonNumber returns the literal of a JSON text that is a single number.
func jsonNumber(s string) (string, bool) {
	i := skipSpace(s, 0)
	end := numberEnd(s, i)
	if end < 0 || !whole(s, end) {
		return "", false
	}
	return s[i:end], true
}

// jsonBool returns the value of a JSON text that is true or false.
func jsonBool(s string) (bool, bool) {
	i := skipSpace(s, 0)
	for _, lit := range [...]string{"true", "false"} {
		if len(s)-i >= len(lit) && s[i:i+len(lit)] == lit && whole(s, i+len(lit)) {
			return lit == "true", true
		}
	}
	return false, false
}

// jsonStrings returns the values of a JSON text that is an array of strings.
func jsonStrings(s string) ([]string, bool) {
	i := skipSpace(s, 0)
	if i >= len(s) || s[i] != '[' {
		return nil, false
	}
	out := []string{}
	i = skipSpace(s, i+1)
	if i < len(s) && s[i] == ']' {
		return out, whole(s, i+1)
	}
	for {
		v, j, ok := parseString(s, i)
		if !ok {
			return nil, false
		}
		out = append(out, v)
		i = skipSpace(s, j)
		if i >= len(s) {
			return nil, false
		}
		switch s[i] {
		case ',':
			i = skipSpace(s, i+1)
		case ']':
			if !whole(s, i+1) {
				return nil, false
			}
			return out, true
		default:
			return nil, false
		}
	}
}

// Marshaler is implemented by values that encode themselves as JSON in Result.Data. encoding/json's
// json.RawMessage and every json.Marshaler satisfy it.
type Marshaler interface {
	MarshalJSON() ([]byte, error)
}

// RawJSON is JSON text put into Result.Data as is. It must be valid JSON.
type RawJSON string

var errNonFinite = errors.New("NaN or infinite number")

// appendJSON appends the JSON encoding of v. It supports nil, strings, booleans, every integer and float type,
// []string, []any, []int, []float64, map[string]any, map[string]string, map[string]int, map[string]float64,
// []map[string]any, RawJSON, Marshaler, and error (its message). path names v in errors.
func appendJSON(dst []byte, v any, path string) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return appendQuoted(dst, v), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case int:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int8:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int16:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case uint:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case uint8:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case uint16:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case uint32:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case uint64:
		return strconv.AppendUint(dst, v, 10), nil
	case float32:
		return appendFloat(dst, float64(v), 32, path)
	case float64:
		return appendFloat(dst, v, 64, path)
	case RawJSON:
		return append(dst, v...), nil
	case Marshaler:
		b, err := v.MarshalJSON()
		if err != nil {
			return dst, errors.New(path + ": " + err.Error())
		}
		return append(dst, b...), nil
	case error:
		return appendQuoted(dst, v.Error()), nil
	case []string:
		return appendArray(dst, len(v), func(dst []byte, i int) ([]byte, error) { return appendQuoted(dst, v[i]), nil })
	case []int:
		return appendArray(dst, len(v), func(dst []byte, i int) ([]byte, error) { return strconv.AppendInt(dst, int64(v[i]), 10), nil })
	case []float64:
		return appendArray(dst, len(v), func(dst []byte, i int) ([]byte, error) { return appendFloat(dst, v[i], 64, path) })
	case []any:
		return appendArray(dst, len(v), func(dst []byte, i int) ([]byte, error) {
			return appendJSON(dst, v[i], path+"["+strconv.Itoa(i)+"]")
		})
	case []map[string]any:
		return appendArray(dst, len(v), func(dst []byte, i int) ([]byte, error) {
			return appendJSON(dst, v[i], path+"["+strconv.Itoa(i)+"]")
		})
	case map[string]any:
		return appendObject(dst, v, path)
	case map[string]string:
		return appendObject(dst, v, path)
	case map[string]int:
		return appendObject(dst, v, path)
	case map[string]float64:
		return appendObject(dst, v, path)
	}
	return dst, errors.New(path + ": unsupported type (use a string, number, bool, slice, map[string]any, RawJSON or a Marshaler)")
}

func appendFloat(dst []byte, f float64, bits int, path string) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, errors.New(path + ": " + errNonFinite.Error())
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(dst, f, format, -1, bits), nil
}

func appendArray(dst []byte, n int, elem func([]byte, int) ([]byte, error)) ([]byte, error) {
	dst = append(dst, '[')
	for i := range n {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = elem(dst, i); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// appendObject appends m with its keys sorted, so the encoding is deterministic.
func appendObject[V any](dst []byte, m map[string]V, path string) ([]byte, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendQuoted(dst, k)
		dst = append(dst, ':')
		p := k
		if path != "" {
			p = path + "." + k
		}
		var err error
		if dst, err = appendJSON(dst, any(m[k]), p); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

const hexDigits = "0123456789abcdef"

// appendQuoted appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as encoding/json does.
func appendQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
