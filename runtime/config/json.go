package config

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

// CodeInvalidConfig is the gwerr code of every error this package finds in a config.
const CodeInvalidConfig = "invalid_config"

// invalid is the package's one error constructor: a 400 whose Param is the JSON path of the offending field
// ("" for the whole config) and whose message repeats that path.
func invalid(path, format string, args ...any) *gwerr.Error {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	return &gwerr.Error{Status: http.StatusBadRequest, Code: CodeInvalidConfig, Param: path, Message: "invalid config: " + msg}
}

// join appends an object key to a JSON path: "retry" + "attempts" = "retry.attempts". A key that is not a plain
// identifier is quoted in brackets (input_guardrails[0]["default.regexMatch"]), so that a path reads one way.
func join(prefix, key string) string {
	if !isIdent(key) {
		return prefix + "[" + strconv.Quote(key) + "]"
	}
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// index appends an array index to a JSON path.
func index(prefix string, i int) string { return prefix + "[" + strconv.Itoa(i) + "]" }

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

// kind names the JSON type of a value that encoding/json has already checked.
func kind(raw json.RawMessage) string { return Kind(raw) }

// Kind names the JSON type of a value for error messages: object, array, string, boolean, null or number
// ("nothing" for empty input). Other validators of JSON input (the bootstrap file) share it.
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

// describe names a value for an error message: numbers and booleans by their text, other kinds by their type.
func describe(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	switch k := kind(raw); k {
	case "null":
		return "null"
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

// object is one decoded JSON object of a config with its JSON path ("" for the top level).
type object struct {
	path string
	m    map[string]json.RawMessage
}

// newObject decodes raw, which encoding/json has already checked, as the object at path.
func newObject(raw json.RawMessage, path string) (*object, error) {
	if k := kind(raw); k != "object" {
		return nil, invalid(path, "must be a JSON object, not %s", describe(raw))
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, invalid(path, "must be a JSON object: %v", err)
	}
	return &object{path: path, m: m}, nil
}

func (o *object) at(key string) string { return join(o.path, key) }

// get returns a field's raw value; absent and null both yield nil (null means "not set").
func (o *object) get(key string) json.RawMessage {
	raw, ok := o.m[key]
	if !ok || kind(raw) == "null" {
		return nil
	}
	return raw
}

func (o *object) has(key string) bool { return o.get(key) != nil }

// unknown returns an error for the alphabetically first key that known rejects, suggesting a close known
// name when there is one.
func (o *object) unknown(known func(string) bool, names []string) error {
	first, found := "", false
	for k := range o.m {
		if !known(k) && (!found || k < first) {
			first, found = k, true
		}
	}
	if !found {
		return nil
	}
	if s := suggest(first, names); s != "" {
		return invalid(o.at(first), "unknown field %q (did you mean %q?)", first, s)
	}
	return invalid(o.at(first), "unknown field %q (allowed here: %s)", first, strings.Join(names, ", "))
}

// onlyKeys rejects every key not in names.
func (o *object) onlyKeys(names ...string) error {
	return o.unknown(func(k string) bool { return contains(names, k) }, names)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// str reads a string field. A required field must be present and, like every field that nonEmpty names, not "".
func (o *object) str(key string, required, nonEmpty bool) (string, bool, error) {
	raw := o.get(key)
	if raw == nil {
		if required {
			return "", false, invalid(o.at(key), "is required (a string)")
		}
		return "", false, nil
	}
	if kind(raw) != "string" {
		return "", false, invalid(o.at(key), "must be a string, not %s", describe(raw))
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, invalid(o.at(key), "must be a string: %v", err)
	}
	if s == "" && (required || nonEmpty) {
		return "", false, invalid(o.at(key), "must not be empty")
	}
	return s, true, nil
}

// boolean reads a boolean field; nil when absent.
func (o *object) boolean(key string) (*bool, error) {
	raw := o.get(key)
	if raw == nil {
		return nil, nil
	}
	var b bool
	if kind(raw) != "boolean" || json.Unmarshal(raw, &b) != nil {
		return nil, invalid(o.at(key), "must be a boolean (true or false), not %s", describe(raw))
	}
	return &b, nil
}

// number reads a numeric field; nil when absent.
func (o *object) number(key string, required bool) (*float64, error) {
	raw := o.get(key)
	if raw == nil {
		if required {
			return nil, invalid(o.at(key), "is required (a number)")
		}
		return nil, nil
	}
	f, err := numberValue(raw, o.at(key))
	if err != nil {
		return nil, err
	}
	return &f, nil
}

func numberValue(raw json.RawMessage, path string) (float64, error) {
	if kind(raw) != "number" {
		return 0, invalid(path, "must be a number, not %s", describe(raw))
	}
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, invalid(path, "number %s is out of range", raw)
	}
	return f, nil
}

// maxExactInt is the largest integer every JSON reader holds exactly (2^53).
const maxExactInt = 1 << 53

// integer reads an integral number in [lo, hi]; nil when absent. 2.0 and 1e3 are integers, 2.5 is not.
func (o *object) integer(key string, required bool, lo, hi int64) (*int, error) {
	raw := o.get(key)
	if raw == nil {
		if required {
			return nil, invalid(o.at(key), "is required (an integer)")
		}
		return nil, nil
	}
	n, err := intValue(raw, o.at(key), lo, hi)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

func intValue(raw json.RawMessage, path string, lo, hi int64) (int, error) {
	if kind(raw) != "number" {
		return 0, invalid(path, "must be an integer, not %s", describe(raw))
	}
	text := string(bytes.TrimSpace(raw))
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(text, 64)
		switch {
		case ferr != nil && !errors.Is(ferr, strconv.ErrRange):
			return 0, invalid(path, "must be an integer, not %s", describe(raw))
		case f > maxExactInt:
			return 0, invalid(path, "must be at most %d, not %s", hi, text)
		case f < -maxExactInt:
			return 0, invalid(path, "must be at least %d, not %s", lo, text)
		case f != math.Trunc(f):
			return 0, invalid(path, "must be an integer (a whole number), not %s", text)
		}
		n = int64(f)
	}
	switch {
	case n < lo:
		return 0, invalid(path, "must be at least %d, not %s", lo, text)
	case n > hi:
		return 0, invalid(path, "must be at most %d, not %s", hi, text)
	}
	return int(n), nil
}

// rawObject returns an object field's raw JSON; nil when absent.
func (o *object) rawObject(key string, required bool) (json.RawMessage, error) {
	raw := o.get(key)
	if raw == nil {
		if required {
			return nil, invalid(o.at(key), "is required (an object)")
		}
		return nil, nil
	}
	if kind(raw) != "object" {
		return nil, invalid(o.at(key), "must be an object, not %s", describe(raw))
	}
	return raw, nil
}

// array returns an array field's items; nil when absent, an empty non-nil slice for [].
func (o *object) array(key string, required bool) ([]json.RawMessage, error) {
	raw := o.get(key)
	if raw == nil {
		if required {
			return nil, invalid(o.at(key), "is required (an array)")
		}
		return nil, nil
	}
	if kind(raw) != "array" {
		return nil, invalid(o.at(key), "must be an array, not %s", describe(raw))
	}
	items := []json.RawMessage{}
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, invalid(o.at(key), "must be an array: %v", err)
	}
	return items, nil
}

// statusCodes reads an array of HTTP status codes (integers 100 to 599); nil when absent.
func (o *object) statusCodes(key string) ([]int, error) {
	items, err := o.array(key, false)
	if items == nil || err != nil {
		return nil, err
	}
	codes := make([]int, len(items))
	for i, item := range items {
		n, err := intValue(item, index(o.at(key), i), math.MinInt32, math.MaxInt32)
		if err != nil {
			return nil, err
		}
		if n < 100 || n > 599 {
			return nil, invalid(index(o.at(key), i), "must be an HTTP status code (100 to 599), not %d", n)
		}
		codes[i] = n
	}
	return codes, nil
}

// suggest returns the name in names closest to s when it is a likely typo (edit distance at most 2).
func suggest(s string, names []string) string {
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
