package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/llmgw/gateway/internal/jsonstr"
)

// The body patches (override_params, metadata._user) edit the caller's JSON in one pass instead of decoding it
// into a map and encoding it again: members named by the patch get its value in place, missing ones are added
// before the closing brace in key order, and every other byte goes upstream as the caller sent it. The caller's
// body was checked by schema.ReadBody at the edge (a rendered prompt is the gateway's own JSON), so the pass
// skims values instead of validating them again; it still refuses what is not an object, and never reads past
// the body.

// errNotObject reports a body whose top level is not a JSON object, which no patch can apply to.
var errNotObject = errors.New("request body is not a JSON object")

// bodyMember is one top-level member of a body: body[key:keyEnd] is its key literal, body[value:end] its value.
type bodyMember struct {
	key, keyEnd, value, end int
}

// eachBodyMember calls fn with each top-level member of the JSON object body, in order. It returns the
// position of the object's closing brace.
func eachBodyMember(body []byte, fn func(m bodyMember)) (int, error) {
	i := jsonstr.SkipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return 0, errNotObject
	}
	i = jsonstr.SkipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		return i, nil
	}
	for {
		if i >= len(body) || body[i] != '"' {
			return 0, errNotObject
		}
		keyEnd, ok := skimString(body, i)
		if !ok {
			return 0, errNotObject
		}
		j := jsonstr.SkipSpace(body, keyEnd)
		if j >= len(body) || body[j] != ':' {
			return 0, errNotObject
		}
		value := jsonstr.SkipSpace(body, j+1)
		end, ok := skimValue(body, value)
		if !ok {
			return 0, errNotObject
		}
		fn(bodyMember{key: i, keyEnd: keyEnd, value: value, end: end})
		i = jsonstr.SkipSpace(body, end)
		if i >= len(body) {
			return 0, errNotObject
		}
		switch body[i] {
		case '}':
			return i, nil
		case ',':
			i = jsonstr.SkipSpace(body, i+1)
		default:
			return 0, errNotObject
		}
	}
}

// skimString returns the position after the string literal at body[i] == '"', looking only for its closing
// quote: a quote preceded by an even number of backslashes.
func skimString(body []byte, i int) (int, bool) {
	from := i + 1
	for {
		q := bytes.IndexByte(body[from:], '"')
		if q < 0 {
			return 0, false
		}
		q += from
		escapes := 0
		for k := q - 1; k > i && body[k] == '\\'; k-- {
			escapes++
		}
		if escapes%2 == 0 {
			return q + 1, true
		}
		from = q + 1
	}
}

// skimValue returns the end of the (checked) JSON value at body[i]: strings are skipped by skimString,
// containers by counting brackets outside strings, and numbers and literals run to the next delimiter.
func skimValue(body []byte, i int) (int, bool) {
	if i >= len(body) {
		return 0, false
	}
	switch body[i] {
	case '"':
		return skimString(body, i)
	case '{', '[':
		depth := 0
		for ; i < len(body); i++ {
			switch body[i] {
			case '"':
				end, ok := skimString(body, i)
				if !ok {
					return 0, false
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1, true
				}
			}
		}
		return 0, false
	}
	start := i
	for i < len(body) && !jsonstr.IsSpace(body[i]) && body[i] != ',' && body[i] != '}' && body[i] != ']' {
		i++
	}
	return i, i > start
}

// keyIs reports whether the key literal lit names name, as encoding/json reads keys (escapes decoded).
func keyIs(lit []byte, name string) bool {
	if inner := lit[1 : len(lit)-1]; bytes.IndexByte(inner, '\\') < 0 && len(inner) == len(name) && string(inner) == name {
		return true
	}
	if bytes.IndexByte(lit, '\\') < 0 && jsonstr.PlainString(lit[1:len(lit)-1]) {
		return false // no escape to decode: the bytes compared above are the key
	}
	key, ok := jsonstr.Unquote(lit)
	return ok && key == name
}

// memberPatch is one member a patch gives the body: its name and its value as JSON.
type memberPatch struct {
	name  string
	value []byte
}

// sortedPatches appends the members of set to patches, sorted by name.
func sortedPatches(patches []memberPatch, set map[string]json.RawMessage) []memberPatch {
	for name, value := range set {
		patches = append(patches, memberPatch{name: name, value: value})
	}
	slices.SortFunc(patches, func(a, b memberPatch) int { return strings.Compare(a.name, b.name) })
	return patches
}

// stringPatch is the member name with the JSON string s as its value, encoded into buf.
func stringPatch(buf []byte, name, s string) memberPatch {
	return memberPatch{name: name, value: jsonstr.AppendString(buf, s)}
}

// setMembers returns body with each of patches (sorted by name, names distinct) as a top-level member: every
// member of that name gets the patch's value in place (a provider keeping the first of duplicate keys must see
// it as well as one keeping the last), and a name the body lacks is added after its last member, in the order
// of patches, so that the same patch makes the same bytes. When onlyMissing is set, names the body has keep
// their values. body is not modified; when nothing changes it is returned as it is.
func setMembers(body []byte, patches []memberPatch, onlyMissing bool) ([]byte, error) {
	var foundBuf [8]bool
	found := foundBuf[:0]
	if len(patches) <= len(foundBuf) {
		found = foundBuf[:len(patches)]
	} else {
		found = make([]bool, len(patches))
	}
	type replacement struct {
		m     bodyMember
		patch int
	}
	var replaceBuf [8]replacement
	replace := replaceBuf[:0] // the members whose value changes, in body order
	members := 0
	closing, err := eachBodyMember(body, func(m bodyMember) {
		members++
		lit := body[m.key:m.keyEnd]
		for k := range patches {
			if keyIs(lit, patches[k].name) {
				found[k] = true
				if !onlyMissing {
					replace = append(replace, replacement{m, k})
				}
				return
			}
		}
	})
	if err != nil {
		return nil, err
	}
	size := len(body)
	for _, r := range replace {
		size += len(patches[r.patch].value) - (r.m.end - r.m.value)
	}
	missing := false
	for k, p := range patches {
		if !found[k] {
			missing = true
			size += len(p.name) + len(p.value) + 8 // ,"name": and room for an escape or two
		}
	}
	if len(replace) == 0 && !missing {
		return body, nil
	}
	// New members go after the last one, before the white space that precedes the closing brace.
	end := closing
	if missing {
		for end > 0 && jsonstr.IsSpace(body[end-1]) {
			end--
		}
	}
	out := make([]byte, 0, size)
	last := 0
	for _, r := range replace {
		out = append(out, body[last:r.m.value]...)
		out = append(out, patches[r.patch].value...)
		last = r.m.end
	}
	out = append(out, body[last:end]...)
	for k, p := range patches {
		if found[k] {
			continue
		}
		if members > 0 {
			out = append(out, ',')
		}
		members++
		out = jsonstr.AppendString(out, p.name)
		out = append(out, ':')
		out = append(out, p.value...)
	}
	return append(out, body[end:]...), nil
}

// includeUsage is the stream_options a streamed chat completion is given when it does not ask for usage.
var includeUsage = []byte(`{"include_usage":true}`)

// askStreamUsage reports whether a chat completion body asks for a stream's usage (stream_options.include_usage
// true), and when it does not, returns the body with that option set, in one pass that keeps every other byte
// (the caller's other stream_options included). body is not modified.
func askStreamUsage(body []byte) (patched []byte, asked bool, err error) {
	var options []byte // the value of the last stream_options member, as encoding/json would read it
	if _, err := eachBodyMember(body, func(m bodyMember) {
		if keyIs(body[m.key:m.keyEnd], "stream_options") {
			options = body[m.value:m.end]
		}
	}); err != nil {
		return nil, false, err
	}
	value := includeUsage
	if len(options) > 0 && options[0] == '{' {
		if usageAsked(options) {
			return body, true, nil
		}
		if value, err = setMembers(options, []memberPatch{{name: "include_usage", value: trueValue}}, false); err != nil {
			return nil, false, err
		}
	}
	patched, err = setMembers(body, []memberPatch{{name: "stream_options", value: value}}, false)
	return patched, false, err
}

var trueValue = []byte("true")

// usageAsked reports whether the stream_options object options has include_usage true.
func usageAsked(options []byte) bool {
	asked := false
	_, err := eachBodyMember(options, func(m bodyMember) {
		if keyIs(options[m.key:m.keyEnd], "include_usage") {
			asked = string(options[m.value:m.end]) == "true"
		}
	})
	return err == nil && asked
}
