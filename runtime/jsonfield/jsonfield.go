package jsonfield

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// CodeInvalidConfig is the gwerr code of every error Invalid makes: the readers here serve config validation.
const CodeInvalidConfig = "invalid_config"

// Invalid is the one error constructor of config validation: a 400 whose Param is the JSON path of the offending field
// ("" for the whole config) and whose message repeats that path.
func Invalid(path, format string, args ...any) *gwerr.Error {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	return &gwerr.Error{Status: http.StatusBadRequest, Code: CodeInvalidConfig, Param: path, Message: "invalid config: " + msg}
}

// Join appends an object key to a JSON path: "retry" + "attempts" = "retry.attempts". A key that is not a plain
// identifier is quoted in brackets (input_guardrails[0]["default.regexMatch"]), so that a path reads one way.
func Join(prefix, key string) string {
	if !isIdent(key) {
		return prefix + "[" + strconv.Quote(key) + "]"
	}
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// Index appends an array index to a JSON path.
func Index(prefix string, i int) string { return prefix + "[" + strconv.Itoa(i) + "]" }

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || (i > 0 && '0' <= c && c <= '9') {
			continue
		}
		return false
	}
	return true
}

// Kind names the JSON type of a value that encoding/json has already checked, for error messages: object,
// array, string, boolean, null or number ("nothing" for empty input).
func Kind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// Describe names a value for an error message: numbers and booleans by their text, other kinds by their type.
func Describe(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	switch k := Kind(raw); k {
	case "null", "nothing":
		return k
	case "number", "boolean":
		if len(raw) > 40 {
			return k + " " + string(raw[:40]) + "..."
		}
		return k + " " + string(raw)
	case "object", "array":
		return "an " + k
	default:
		return "a " + k
	}
}

// Object is one decoded JSON object of a config with its JSON path ("" for the top level). Its readers return
// the first problem as an Invalid error naming the field's path.
type Object struct {
	Path string
	m    map[string]json.RawMessage
}

// NewObject decodes raw, which encoding/json has already checked, as the object at path.
func NewObject(raw json.RawMessage, path string) (*Object, error) {
	if k := Kind(raw); k != "object" {
		return nil, Invalid(path, "must be a JSON object, not %s", Describe(raw))
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, Invalid(path, "must be a JSON object: %v", err)
	}
	return &Object{Path: path, m: m}, nil
}

// ObjectOf wraps fields already decoded from the JSON object at path.
func ObjectOf(fields map[string]json.RawMessage, path string) *Object {
	return &Object{Path: path, m: fields}
}

// At is the JSON path of one of the object's keys.
func (o *Object) At(key string) string { return Join(o.Path, key) }

// Get returns a field's raw value; absent and null both yield nil (null means "not set").
func (o *Object) Get(key string) json.RawMessage {
	raw, ok := o.m[key]
	if !ok || Kind(raw) == "null" {
		return nil
	}
	return raw
}

// Has reports whether a key is present and not null.
func (o *Object) Has(key string) bool { return o.Get(key) != nil }

// Unknown returns an error for the alphabetically first key that known rejects, suggesting a close known
// name when there is one.
func (o *Object) Unknown(known func(string) bool, names []string) error {
	if key, found := o.UnknownKey(known); found {
		return o.UnknownError(key, names)
	}
	return nil
}

// UnknownKey returns the alphabetically first key that known rejects. With UnknownError it serves callers
// whose list of names is worth building only when a key is unknown.
func (o *Object) UnknownKey(known func(string) bool) (string, bool) {
	first, found := "", false
	for k := range o.m {
		if !known(k) && (!found || k < first) {
			first, found = k, true
		}
	}
	return first, found
}

// UnknownError is the error for an unknown key, suggesting the closest of names or listing them all.
func (o *Object) UnknownError(key string, names []string) error {
	if s := Suggest(key, names); s != "" {
		return Invalid(o.At(key), "unknown field %q (did you mean %q?)", key, s)
	}
	return Invalid(o.At(key), "unknown field %q (allowed here: %s)", key, strings.Join(names, ", "))
}

// OnlyKeys rejects every key not in names.
func (o *Object) OnlyKeys(names ...string) error {
	return o.Unknown(func(k string) bool { return Contains(names, k) }, names)
}

// Contains reports whether list holds s.
func Contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Str reads a string field. A required field must be present and, like every field that nonEmpty names, not "".
func (o *Object) Str(key string, required, nonEmpty bool) (string, bool, error) {
	raw := o.Get(key)
	if raw == nil {
		if required {
			return "", false, Invalid(o.At(key), "is required (a string)")
		}
		return "", false, nil
	}
	if Kind(raw) != "string" {
		return "", false, Invalid(o.At(key), "must be a string, not %s", Describe(raw))
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, Invalid(o.At(key), "must be a string: %v", err)
	}
	if s == "" && (required || nonEmpty) {
		return "", false, Invalid(o.At(key), "must not be empty")
	}
	return s, true, nil
}

// Boolean reads a boolean field; nil when absent.
func (o *Object) Boolean(key string) (*bool, error) {
	raw := o.Get(key)
	if raw == nil {
		return nil, nil
	}
	var b bool
	if Kind(raw) != "boolean" || json.Unmarshal(raw, &b) != nil {
		return nil, Invalid(o.At(key), "must be a boolean (true or false), not %s", Describe(raw))
	}
	return &b, nil
}

// Number reads a numeric field; nil when absent.
func (o *Object) Number(key string, required bool) (*float64, error) {
	raw := o.Get(key)
	if raw == nil {
		if required {
			return nil, Invalid(o.At(key), "is required (a number)")
		}
		return nil, nil
	}
	f, err := NumberValue(raw, o.At(key))
	if err != nil {
		return nil, err
	}
	return &f, nil
}

// NumberValue reads raw, found at path, as a finite number.
func NumberValue(raw json.RawMessage, path string) (float64, error) {
	if Kind(raw) != "number" {
		return 0, Invalid(path, "must be a number, not %s", Describe(raw))
	}
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, Invalid(path, "number %s is out of range", raw)
	}
	return f, nil
}

// maxExactInt is the largest integer every JSON reader holds exactly (2^53).
const maxExactInt = 1 << 53

// Integer reads an integral number in [lo, hi]; nil when absent. 2.0 and 1e3 are integers, 2.5 is not.
func (o *Object) Integer(key string, required bool, lo, hi int64) (*int, error) {
	raw := o.Get(key)
	if raw == nil {
		if required {
			return nil, Invalid(o.At(key), "is required (an integer)")
		}
		return nil, nil
	}
	n, err := IntValue(raw, o.At(key), lo, hi)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// IntValue reads raw, found at path, as an integral number in [lo, hi].
func IntValue(raw json.RawMessage, path string, lo, hi int64) (int, error) {
	if Kind(raw) != "number" {
		return 0, Invalid(path, "must be an integer, not %s", Describe(raw))
	}
	text := string(bytes.TrimSpace(raw))
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(text, 64)
		switch {
		case ferr != nil && !errors.Is(ferr, strconv.ErrRange):
			return 0, Invalid(path, "must be an integer, not %s", Describe(raw))
		case f > maxExactInt:
			return 0, Invalid(path, "must be at most %d, not %s", hi, text)
		case f < -maxExactInt:
			return 0, Invalid(path, "must be at least %d, not %s", lo, text)
		case f != math.Trunc(f):
			return 0, Invalid(path, "must be an integer (a whole number), not %s", text)
		}
		n = int64(f)
	}
	switch {
	case n < lo:
		return 0, Invalid(path, "must be at least %d, not %s", lo, text)
	case n > hi:
		return 0, Invalid(path, "must be at most %d, not %s", hi, text)
	}
	return int(n), nil
}

// RawObject returns an object field's raw JSON; nil when absent.
func (o *Object) RawObject(key string, required bool) (json.RawMessage, error) {
	raw := o.Get(key)
	if raw == nil {
		if required {
			return nil, Invalid(o.At(key), "is required (an object)")
		}
		return nil, nil
	}
	if Kind(raw) != "object" {
		return nil, Invalid(o.At(key), "must be an object, not %s", Describe(raw))
	}
	return raw, nil
}

// Array returns an array field's items; nil when absent, an empty non-nil slice for [].
func (o *Object) Array(key string, required bool) ([]json.RawMessage, error) {
	raw := o.Get(key)
	if raw == nil {
		if required {
			return nil, Invalid(o.At(key), "is required (an array)")
		}
		return nil, nil
	}
	if Kind(raw) != "array" {
		return nil, Invalid(o.At(key), "must be an array, not %s", Describe(raw))
	}
	items := []json.RawMessage{}
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, Invalid(o.At(key), "must be an array: %v", err)
	}
	return items, nil
}

// StatusCodes reads an array of HTTP status codes (integers 100 to 599); nil when absent.
func (o *Object) StatusCodes(key string) ([]int, error) {
	items, err := o.Array(key, false)
	if items == nil || err != nil {
		return nil, err
	}
	codes := make([]int, len(items))
	for i, item := range items {
		n, err := IntValue(item, Index(o.At(key), i), math.MinInt32, math.MaxInt32)
		if err != nil {
			return nil, err
		}
		if n < 100 || n > 599 {
			return nil, Invalid(Index(o.At(key), i), "must be an HTTP status code (100 to 599), not %d", n)
		}
		codes[i] = n
	}
	return codes, nil
}

// Suggest returns the name in names closest to s when it is a likely typo (edit distance at most 2).
func Suggest(s string, names []string) string {
	best, bestD := "", 3
	if len(s) > 64 {
		return ""
	}
	lower := strings.ToLower(s)
	for _, n := range names {
		if d := distance(lower, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// distance is the Levenshtein distance of two short strings.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// HasControl reports whether s holds an ASCII control character, which no header value or URL part may carry.
func HasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] == 0x7f {
			return true
		}
	}
	return false
}
