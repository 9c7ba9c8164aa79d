package ratelimit

import (
	"bytes"
	"encoding/json"
	"unsafe"
)

// bodyModel returns the top-level "model" string of a JSON object, "" when there is none, when it is not a
// string, or when the body is not a JSON object. It skims the body without decoding it: no allocation unless
// the model is written with escapes. As with encoding/json, the last of duplicate "model" keys wins, so that a
// body cannot show one model to the limiter and another to the provider.
//
// The result may point into body: it is valid while body is unchanged, and is copied before it is kept.
func bodyModel(body []byte) string {
	model := ""
	i := skipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return ""
	}
	i = skipWS(body, i+1)
	if i < len(body) && body[i] == '}' {
		return ""
	}
	for {
		if i >= len(body) || body[i] != '"' {
			return ""
		}
		end, esc := skipString(body, i)
		if end < 0 {
			return ""
		}
		isModel := false
		if esc {
			isModel = unquote(body[i:end]) == "model"
		} else {
			isModel = string(body[i+1:end-1]) == "model"
		}
		i = skipWS(body, end)
		if i >= len(body) || body[i] != ':' {
			return ""
		}
		i = skipWS(body, i+1)
		start := i
		if i < len(body) && body[i] == '"' {
			end, esc = skipString(body, i)
		} else {
			end, esc = skipValue(body, i), false
		}
		if end < 0 {
			return ""
		}
		if isModel {
			switch {
			case body[start] != '"':
				model = ""
			case esc:
				model = unquote(body[start:end])
			default:
				model = unsafe.String(unsafe.SliceData(body[start+1:]), end-1-(start+1))
			}
		}
		i = skipWS(body, end)
		if i >= len(body) {
			return ""
		}
		switch body[i] {
		case ',':
			i = skipWS(body, i+1)
		case '}':
			return model
		default:
			return ""
		}
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at b[i] (a quote), or -1 when it does not end,
// and whether it holds escapes.
func skipString(b []byte, i int) (end int, esc bool) {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1, esc
		}
		q := i + j
		bs := 0
		for k := q - 1; k >= i && b[k] == '\\'; k-- {
			bs++
		}
		if bytes.IndexByte(b[i:q], '\\') >= 0 {
			esc = true
		}
		if bs%2 == 0 {
			return q + 1, esc
		}
		i = q + 1
	}
}

// skipValue returns the index after the value (not a string) that starts at b[i], or -1 when it does not end.
// It does not validate: a malformed body yields some model or none, and the provider refuses it anyway.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	if b[i] != '{' && b[i] != '[' {
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '"':
			end, _ := skipString(b, i)
			if end < 0 {
				return -1
			}
			i = end
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
		i++
	}
	return -1
}

// unquote decodes a JSON string with escapes; "" when it is not one.
func unquote(b []byte) string {
	var s string
	if json.Unmarshal(b, &s) != nil {
		return ""
	}
	return s
}
