package cache

import (
	"bytes"
	"errors"
	"slices"

	"github.com/llmgw/gateway/internal/jsonstr"
)

// maxDepth bounds the nesting of a body the canonicaliser accepts; deeper bodies are not cached.
const maxDepth = jsonstr.MaxDepth

var (
	errSyntax    = jsonstr.ErrSyntax
	errNotObject = errors.New("cache: body is not a JSON object")
	errTooDeep   = jsonstr.ErrTooDeep
)

// canon writes the canonical form of JSON values: no insignificant white space, the members of every object
// sorted by their key as written (a stable sort, so duplicate keys keep their order and their meaning),
// arrays in order, and strings, numbers and literals exactly as written (0.2 and 0.20 differ; so do "é" and
// "\u00e9": a spelling difference costs a miss, never a wrong hit). It validates the JSON grammar as it goes,
// in one pass: an object's members are written as they come, then moved into order when they were not.
// A canon is reused through a pool; it is not safe for concurrent use.
type canon struct {
	out     []byte
	tmp     []byte   // scratch for reordering members
	members []member // a stack: each object being written owns the tail it appended
	keys    []string // scratch for sorting metadata keys
}

// member is one member written to out: its key (with the quotes) is out[k0:k1], the whole member out[k0:end].
type member struct{ k0, k1, end int }

// topObject writes the canonical form of the object b, which must be a JSON object and nothing else, leaving
// out the top-level members for which skip(key) is true (key as written, with its quotes).
func (c *canon) topObject(b []byte, skip func(key []byte) bool) error {
	i := jsonstr.SkipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		if _, err := jsonstr.ScanValue(b, i, 0); err != nil {
			return err
		}
		return errNotObject
	}
	end, err := c.object(b, i, 0, skip)
	if err != nil {
		return err
	}
	if jsonstr.SkipSpace(b, end) != len(b) {
		return errSyntax
	}
	return nil
}

// value writes the canonical form of the value at b[i:] (i after any white space) and returns its end.
func (c *canon) value(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return 0, errSyntax
	}
	switch b[i] {
	case '{':
		return c.object(b, i, depth, nil)
	case '[':
		if depth >= maxDepth {
			return 0, errTooDeep
		}
		c.out = append(c.out, '[')
		i = jsonstr.SkipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			c.out = append(c.out, ']')
			return i + 1, nil
		}
		for {
			end, err := c.value(b, i, depth+1)
			if err != nil {
				return 0, err
			}
			i = jsonstr.SkipSpace(b, end)
			if i >= len(b) {
				return 0, errSyntax
			}
			if b[i] == ']' {
				c.out = append(c.out, ']')
				return i + 1, nil
			}
			if b[i] != ',' {
				return 0, errSyntax
			}
			c.out = append(c.out, ',')
			i = jsonstr.SkipSpace(b, i+1)
		}
	case '"':
		end, err := jsonstr.ScanString(b, i)
		if err != nil {
			return 0, err
		}
		c.out = append(c.out, b[i:end]...)
		return end, nil
	default:
		end, err := jsonstr.ScanValue(b, i, depth)
		if err != nil {
			return 0, err
		}
		c.out = append(c.out, b[i:end]...)
		return end, nil
	}
}

// object writes the object at b[i] == '{' with its members sorted, leaving out those skip rejects, and returns
// its end.
func (c *canon) object(b []byte, i, depth int, skip func(key []byte) bool) (int, error) {
	if depth >= maxDepth {
		return 0, errTooDeep
	}
	c.out = append(c.out, '{')
	start := len(c.out)
	base := len(c.members)
	defer func() { c.members = c.members[:base] }()
	i = jsonstr.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		c.out = append(c.out, '}')
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, errSyntax
		}
		kend, err := jsonstr.ScanString(b, i)
		if err != nil {
			return 0, err
		}
		key := b[i:kend]
		i = jsonstr.SkipSpace(b, kend)
		if i >= len(b) || b[i] != ':' {
			return 0, errSyntax
		}
		mark := len(c.out)
		if len(c.members) > base {
			c.out = append(c.out, ',')
		}
		k0 := len(c.out)
		c.out = append(append(c.out, key...), ':')
		end, err := c.value(b, jsonstr.SkipSpace(b, i+1), depth+1)
		if err != nil {
			return 0, err
		}
		if skip != nil && skip(key) {
			c.out = c.out[:mark] // the value was still checked
		} else {
			c.members = append(c.members, member{k0, k0 + len(key), len(c.out)})
		}
		i = jsonstr.SkipSpace(b, end)
		if i >= len(b) {
			return 0, errSyntax
		}
		if b[i] == '}' {
			break
		}
		if b[i] != ',' {
			return 0, errSyntax
		}
		i = jsonstr.SkipSpace(b, i+1)
	}
	c.sortMembers(start, c.members[base:])
	c.out = append(c.out, '}')
	return i + 1, nil
}

// sortMembers puts the members written from out[start:] in key order, unless they already are.
func (c *canon) sortMembers(start int, ms []member) {
	cmpKeys := func(x, y member) int { return bytes.Compare(c.out[x.k0:x.k1], c.out[y.k0:y.k1]) }
	if slices.IsSortedFunc(ms, cmpKeys) {
		return
	}
	slices.SortStableFunc(ms, cmpKeys)
	c.tmp = append(c.tmp[:0], c.out[start:]...)
	c.out = c.out[:start]
	for j, m := range ms {
		if j > 0 {
			c.out = append(c.out, ',')
		}
		c.out = append(c.out, c.tmp[m.k0-start:m.end-start]...)
	}
}

// eachMember calls fn with the positions of each member of the object at b[i] == '{' (key with its quotes,
// value without surrounding white space), in order, after checking the whole object's syntax, and returns the
// object's end.
func eachMember(b []byte, i, depth int, fn func(k0, k1, v0, v1 int) error) (int, error) {
	if i >= len(b) || b[i] != '{' {
		return 0, errSyntax
	}
	if depth >= maxDepth {
		return 0, errTooDeep
	}
	end, err := jsonstr.ScanValue(b, i, depth)
	if err != nil {
		return 0, err
	}
	i = jsonstr.SkipSpace(b, i+1)
	if b[i] == '}' {
		return end, nil
	}
	for {
		k1, _ := jsonstr.ScanString(b, i)
		v0 := jsonstr.SkipSpace(b, jsonstr.SkipSpace(b, k1)+1)
		v1, _ := jsonstr.ScanValue(b, v0, depth+1)
		if err := fn(i, k1, v0, v1); err != nil {
			return 0, err
		}
		i = jsonstr.SkipSpace(b, v1)
		if b[i] == '}' {
			return end, nil
		}
		i = jsonstr.SkipSpace(b, i+1)
	}
}

// eachElement calls fn with the span of each element of the array at b[i] == '[' and returns the array's end.
func eachElement(b []byte, i, depth int, fn func(v0, v1 int) error) (int, error) {
	if i >= len(b) || b[i] != '[' {
		return 0, errSyntax
	}
	end, err := jsonstr.ScanValue(b, i, depth)
	if err != nil {
		return 0, err
	}
	i = jsonstr.SkipSpace(b, i+1)
	if b[i] == ']' {
		return end, nil
	}
	for {
		v1, _ := jsonstr.ScanValue(b, i, depth+1)
		if err := fn(i, v1); err != nil {
			return 0, err
		}
		i = jsonstr.SkipSpace(b, v1)
		if b[i] == ']' {
			return end, nil
		}
		i = jsonstr.SkipSpace(b, i+1)
	}
}
