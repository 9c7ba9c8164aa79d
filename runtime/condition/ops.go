package condition

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// opcode is a field operator.
type opcode uint8

const (
	opEq opcode = iota + 1
	opNe
	opGt
	opGte
	opLt
	opLte
	opIn
	opNin
	opRegex
	opExists
)

// op is one compiled operator with its operand, pre-converted.
type op struct {
	code   opcode
	want   value          // $eq, $ne
	num    float64        // $gt, $gte, $lt, $lte
	set    *valueSet      // $in, $nin
	re     *regexp.Regexp // $regex
	exists bool           // $exists
}

// fieldNode tests one field against one or more operators, all of which must hold.
type fieldNode struct {
	field field
	ops   []op
}

func (n *fieldNode) Match(env *Env) bool {
	if env == nil {
		env = &emptyEnv
	}
	v := n.field.lookup(env)
	for i := range n.ops {
		if !n.ops[i].test(&v) {
			return false
		}
	}
	return true
}

// emptyEnv stands in for a nil *Env. It is never written.
var emptyEnv Env

func (o *op) test(v *value) bool {
	switch o.code {
	case opEq:
		return equal(v, &o.want)
	case opNe:
		return !equal(v, &o.want)
	case opGt, opGte, opLt, opLte:
		n, ok := v.number()
		if !ok {
			return false
		}
		switch o.code {
		case opGt:
			return n > o.num
		case opGte:
			return n >= o.num
		case opLt:
			return n < o.num
		default:
			return n <= o.num
		}
	case opIn:
		return o.set.contains(v)
	case opNin:
		return !o.set.contains(v)
	case opRegex:
		return v.kind == kindString && o.re.MatchString(v.str)
	case opExists:
		return (v.kind != kindMissing) == o.exists
	}
	return false
}

// compileField compiles `"<name>": <bare value or operator object>`; path is the JSON path of the member.
func compileField(name string, raw json.RawMessage, path string) (Matcher, *gwerr.Error) {
	f, err := parseField(name, path)
	if err != nil {
		return nil, err
	}
	n := &fieldNode{field: f}
	if firstByte(raw) == '{' {
		members, err := objectFields(raw, path, "an operator object")
		if err != nil {
			return nil, err
		}
		if isOperatorObject(members) {
			n.ops, err = compileOps(members, path)
			if err != nil {
				return nil, err
			}
			return n, nil
		}
		for _, m := range members {
			if strings.HasPrefix(m.key, "$") {
				return nil, configErr(joinPath(path, m.key), "an object mixes operators and plain keys")
			}
		}
	}
	want, err := operand(raw, path)
	if err != nil {
		return nil, err
	}
	n.ops = []op{{code: opEq, want: want}}
	return n, nil
}

// isOperatorObject reports whether an object is operators (every key starts with '$') rather than a plain
// value; an empty object is a plain value.
func isOperatorObject(members []member) bool {
	for _, m := range members {
		if !strings.HasPrefix(m.key, "$") {
			return false
		}
	}
	return len(members) > 0
}

func compileOps(members []member, path string) ([]op, *gwerr.Error) {
	ops := make([]op, 0, len(members))
	var (
		regex   *member
		options *member
	)
	for i := range members {
		m := &members[i]
		p := joinPath(path, m.key)
		switch m.key {
		case "$eq", "$ne":
			want, err := operand(m.val, p)
			if err != nil {
				return nil, err
			}
			code := opEq
			if m.key == "$ne" {
				code = opNe
			}
			ops = append(ops, op{code: code, want: want})
		case "$gt", "$gte", "$lt", "$lte":
			want, err := operand(m.val, p)
			if err != nil {
				return nil, err
			}
			if want.kind != kindNumber {
				return nil, configErr(p, "%s compares numbers; got %s", m.key, clip(m.val))
			}
			ops = append(ops, op{code: rangeOp(m.key), num: want.num})
		case "$in", "$nin":
			set, err := compileSet(m.val, p)
			if err != nil {
				return nil, err
			}
			code := opIn
			if m.key == "$nin" {
				code = opNin
			}
			ops = append(ops, op{code: code, set: set})
		case "$exists":
			var b bool
			if firstByte(m.val) != 't' && firstByte(m.val) != 'f' || json.Unmarshal(m.val, &b) != nil {
				return nil, configErr(p, "$exists takes true or false; got %s", clip(m.val))
			}
			ops = append(ops, op{code: opExists, exists: b})
		case "$regex":
			regex = m
		case "$options":
			options = m
		default:
			return nil, configErr(p, "unsupported operator %q (a field allows $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $regex with $options, and $exists)", m.key)
		}
	}
	if options != nil && regex == nil {
		return nil, configErr(joinPath(path, "$options"), "$options needs $regex")
	}
	if regex != nil {
		o, err := compileRegex(regex.val, options, path)
		if err != nil {
			return nil, err
		}
		ops = append(ops, o)
	}
	return ops, nil
}

// rangeOp returns the opcode of $gt, $gte, $lt or $lte.
func rangeOp(name string) opcode {
	switch name {
	case "$gt":
		return opGt
	case "$gte":
		return opGte
	case "$lt":
		return opLt
	}
	return opLte
}

// compileRegex compiles $regex with its optional $options (i, m and s, as RE2 flags).
func compileRegex(raw json.RawMessage, options *member, path string) (op, *gwerr.Error) {
	p := joinPath(path, "$regex")
	var src string
	if firstByte(raw) != '"' || json.Unmarshal(raw, &src) != nil {
		return op{}, configErr(p, "$regex takes a string; got %s", clip(raw))
	}
	flags := ""
	if options != nil {
		optPath := joinPath(path, "$options")
		var opts string
		if firstByte(options.val) != '"' || json.Unmarshal(options.val, &opts) != nil {
			return op{}, configErr(optPath, "$options takes a string; got %s", clip(options.val))
		}
		for _, c := range opts {
			switch c {
			case 'i', 'm', 's':
				if !strings.ContainsRune(flags, c) {
					flags += string(c)
				}
			default:
				return op{}, configErr(optPath, "unsupported regex option %q (allowed: i, m, s)", c)
			}
		}
	}
	if flags != "" {
		src = "(?" + flags + ")" + src
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return op{}, configErr(p, "invalid regular expression: %v", err)
	}
	return op{code: opRegex, re: re}, nil
}

// operand decodes a query value once.
func operand(raw json.RawMessage, path string) (value, *gwerr.Error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return value{}, configErr(path, "invalid value %s", clip(raw))
	}
	return valueOf(v), nil
}

// clip shortens a raw JSON value for an error message.
func clip(raw json.RawMessage) string {
	const max = 40
	s := strings.TrimSpace(string(raw))
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

// valueSet is the operand of $in and $nin, split by type so that a lookup does not allocate.
type valueSet struct {
	strs      map[string]struct{}
	nums      []float64
	null      bool
	t, f      bool
	composite []value // arrays and objects
}

func compileSet(raw json.RawMessage, path string) (*valueSet, *gwerr.Error) {
	var items []any
	if firstByte(raw) != '[' || json.Unmarshal(raw, &items) != nil {
		return nil, configErr(path, "takes an array of values; got %s", clip(raw))
	}
	s := &valueSet{}
	for _, it := range items {
		v := valueOf(it)
		switch v.kind {
		case kindNull:
			s.null = true
		case kindBool:
			if v.b {
				s.t = true
			} else {
				s.f = true
			}
		case kindNumber:
			s.nums = append(s.nums, v.num)
		case kindString:
			if s.strs == nil {
				s.strs = make(map[string]struct{})
			}
			s.strs[v.str] = struct{}{}
		default:
			s.composite = append(s.composite, v)
		}
	}
	return s, nil
}

// contains reports whether v equals a member of s, with equal's rules: a missing field is in s only when s
// holds null.
func (s *valueSet) contains(v *value) bool {
	switch v.kind {
	case kindMissing, kindNull:
		return s.null
	case kindBool:
		return (v.b && s.t) || (!v.b && s.f)
	case kindString:
		if _, ok := s.strs[v.str]; ok {
			return true
		}
		if len(s.nums) == 0 {
			return false
		}
		n, ok := v.number()
		return ok && containsNum(s.nums, n)
	case kindNumber:
		return containsNum(s.nums, v.num)
	case kindArray, kindObject:
		for i := range s.composite {
			if equal(v, &s.composite[i]) {
				return true
			}
		}
	}
	return false
}

func containsNum(nums []float64, n float64) bool {
	for _, x := range nums {
		if x == n {
			return true
		}
	}
	return false
}

// equal is $eq: strings exactly, numbers numerically (a metadata string that parses as a number equals it),
// booleans, null (which a missing field also equals), and arrays and objects deeply.
func equal(v, want *value) bool {
	switch want.kind {
	case kindNull:
		return v.kind == kindNull || v.kind == kindMissing
	case kindBool:
		return v.kind == kindBool && v.b == want.b
	case kindString:
		return v.kind == kindString && v.str == want.str
	case kindNumber:
		n, ok := v.number()
		return ok && n == want.num
	case kindArray, kindObject:
		return v.kind == want.kind && deepEqual(v.any, want.any)
	}
	return false
}

// deepEqual compares two values decoded from JSON; numbers compare numerically.
func deepEqual(a, b any) bool {
	va, vb := valueOf(a), valueOf(b)
	if va.kind != vb.kind {
		return false
	}
	switch va.kind {
	case kindNull:
		return true
	case kindBool:
		return va.b == vb.b
	case kindNumber:
		return va.num == vb.num
	case kindString:
		return va.str == vb.str
	case kindArray:
		x, y := va.any.([]any), vb.any.([]any)
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if !deepEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case kindObject:
		x, y := va.any.(map[string]any), vb.any.(map[string]any)
		if len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !deepEqual(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}
