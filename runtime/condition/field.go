package condition

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// root is where a field path reads from.
type root uint8

const (
	rootMetadata root = iota + 1
	rootParams
	rootURLPath
)

// segment is one step of a params path: a map key, and the array index it also names when it is a canonical
// non-negative integer (index is -1 otherwise).
type segment struct {
	key   string
	index int
}

// field is a pre-split field path.
type field struct {
	root root
	key  string    // the metadata key (rootMetadata)
	segs []segment // the params path (rootParams)
}

const allowedRoots = "metadata.<name>, params.<path> or url.pathname"

// parseField splits a field path such as "params.messages.0.role"; param is its JSON path, for errors.
func parseField(name, param string) (field, *gwerr.Error) {
	switch {
	case name == "url.pathname":
		return field{root: rootURLPath}, nil
	case strings.HasPrefix(name, "metadata."):
		key := strings.TrimPrefix(name, "metadata.")
		if key == "" {
			return field{}, configErr(param, "field %q names no metadata key; a field is %s", name, allowedRoots)
		}
		// Metadata is a flat map of strings: everything after "metadata." is the key, dots included.
		return field{root: rootMetadata, key: key}, nil
	case strings.HasPrefix(name, "params."):
		parts := strings.Split(strings.TrimPrefix(name, "params."), ".")
		segs := make([]segment, len(parts))
		for i, p := range parts {
			if p == "" {
				return field{}, configErr(param, "field %q has an empty path segment", name)
			}
			segs[i] = segment{key: p, index: arrayIndex(p)}
		}
		return field{root: rootParams, segs: segs}, nil
	default:
		return field{}, configErr(param, "unknown field %q; a field is %s", name, allowedRoots)
	}
}

// arrayIndex returns the index a path segment names, or -1 when it is not a canonical non-negative integer.
func arrayIndex(s string) int {
	if s == "" || len(s) > 9 || (len(s) > 1 && s[0] == '0') {
		return -1
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return -1
		}
	}
	n, _ := strconv.Atoi(s)
	return n
}

// kind is the JSON type of a value, plus missing.
type kind uint8

const (
	kindMissing kind = iota
	kindNull
	kindBool
	kindNumber
	kindString
	kindArray  // any holds []any
	kindObject // any holds map[string]any
	kindOther  // a Go type that JSON decoding does not produce; it equals nothing
)

// value is a field's value (or a query's operand) without boxing scalars, so that comparing it does not
// allocate.
type value struct {
	kind kind
	// numeric is set on metadata strings: they compare as numbers when they parse as one.
	numeric bool
	b       bool
	num     float64
	str     string
	any     any // kindArray, kindObject, kindOther
}

// lookup reads f from env.
func (f *field) lookup(env *Env) value {
	switch f.root {
	case rootMetadata:
		s, ok := env.Metadata[f.key]
		if !ok {
			return value{}
		}
		return value{kind: kindString, str: s, numeric: true}
	case rootURLPath:
		return value{kind: kindString, str: env.URLPath}
	case rootParams:
		if env.Params == nil {
			return value{}
		}
		var cur any = env.Params
		for _, s := range f.segs {
			switch c := cur.(type) {
			case map[string]any:
				v, ok := c[s.key]
				if !ok {
					return value{}
				}
				cur = v
			case []any:
				if s.index < 0 || s.index >= len(c) {
					return value{}
				}
				cur = c[s.index]
			default:
				return value{}
			}
		}
		return valueOf(cur)
	}
	return value{}
}

// valueOf classifies a value decoded by encoding/json (tolerating json.Number and Go integers).
func valueOf(v any) value {
	switch x := v.(type) {
	case nil:
		return value{kind: kindNull}
	case bool:
		return value{kind: kindBool, b: x}
	case float64:
		return value{kind: kindNumber, num: x}
	case string:
		return value{kind: kindString, str: x}
	case []any:
		return value{kind: kindArray, any: x}
	case map[string]any:
		return value{kind: kindObject, any: x}
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return value{kind: kindNumber, num: f}
		}
	case float32:
		return value{kind: kindNumber, num: float64(x)}
	case int:
		return value{kind: kindNumber, num: float64(x)}
	case int64:
		return value{kind: kindNumber, num: float64(x)}
	case int32:
		return value{kind: kindNumber, num: float64(x)}
	case uint64:
		return value{kind: kindNumber, num: float64(x)}
	}
	return value{kind: kindOther, any: v}
}

// number returns v as a number: a number, or a metadata string that parses as a decimal number.
func (v *value) number() (float64, bool) {
	switch {
	case v.kind == kindNumber:
		return v.num, true
	case v.kind == kindString && v.numeric && looksDecimal(v.str):
		f, err := strconv.ParseFloat(v.str, 64)
		return f, err == nil
	}
	return 0, false
}

// looksDecimal reports whether s is made of a decimal number's characters and has a digit. It keeps
// ParseFloat (which allocates its error) away from ordinary words, and rejects "Inf", "NaN" and hex floats.
func looksDecimal(s string) bool {
	digit := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digit = true
		case c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E':
		default:
			return false
		}
	}
	return digit
}
