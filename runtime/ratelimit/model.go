package ratelimit

import (
	"unsafe"

	"github.com/llmgw/gateway/runtime/internal/jsonstr"
)

// bodyModel returns the top-level "model" string of a JSON object, "" when there is none, when it is not a
// string, or when the body is not a valid JSON object. It skims the body with jsonstr's scanner instead of
// decoding it: no allocation unless the model (or its key) is written with escapes. As with encoding/json,
// the last of duplicate "model" keys wins, so that a body cannot show one model to the limiter and another to
// the provider.
//
// The result may point into body: it is valid while body is unchanged, and is copied before it is kept.
func bodyModel(body []byte) string {
	i := jsonstr.SkipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return ""
	}
	model := ""
	i = jsonstr.SkipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		return ""
	}
	for {
		if i >= len(body) || body[i] != '"' {
			return ""
		}
		keyEnd, err := jsonstr.ScanString(body, i)
		if err != nil {
			return ""
		}
		isModel := stringValue(body[i:keyEnd]) == "model"
		i = jsonstr.SkipSpace(body, keyEnd)
		if i >= len(body) || body[i] != ':' {
			return ""
		}
		start := jsonstr.SkipSpace(body, i+1)
		end, err := jsonstr.ScanValue(body, start, 1)
		if err != nil {
			return ""
		}
		if isModel {
			model = ""
			if body[start] == '"' {
				model = stringValue(body[start:end])
			}
		}
		i = jsonstr.SkipSpace(body, end)
		if i >= len(body) {
			return ""
		}
		switch body[i] {
		case ',':
			i = jsonstr.SkipSpace(body, i+1)
		case '}':
			return model
		default:
			return ""
		}
	}
}

// stringValue is the text of the string literal q (scanned): a view of q's bytes when it needs no decoding.
func stringValue(q []byte) string {
	if inner := q[1 : len(q)-1]; jsonstr.PlainString(inner) {
		return unsafe.String(unsafe.SliceData(inner), len(inner))
	}
	s, _ := jsonstr.Unquote(q)
	return s
}
