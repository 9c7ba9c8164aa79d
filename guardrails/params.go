package guardrails

import (
	"encoding/json"
	"math"
	"strings"
)

// params are a check's parameters; a paramReader reads them.
type params map[string]json.RawMessage

// paramReader reads a check's parameters. Unknown parameters are ignored (failOnError among them).
//
// It keeps the first problem, a *ParamError, in err: once there is one, every reader returns its zero value
// and reads nothing, and fail adds nothing, so that a factory reads all it needs and checks err once.
type paramReader struct {
	m   params
	err error
}

func parseParams(raw json.RawMessage) *paramReader {
	p := &paramReader{}
	if err := json.Unmarshal(raw, &p.m); err != nil {
		p.fail("", "must be an object: %v", err)
	}
	for k, v := range p.m {
		if string(v) == "null" {
			delete(p.m, k)
		}
	}
	return p
}

// fail records a problem with parameter name unless there is one already.
func (p *paramReader) fail(name, format string, args ...any) {
	if p.err == nil {
		p.err = paramErr(name, format, args...)
	}
}

// get returns a parameter's value; false when it is absent or there is a problem already.
func (p *paramReader) get(name string) (json.RawMessage, bool) {
	if p.err != nil {
		return nil, false
	}
	v, ok := p.m[name]
	return v, ok
}

func (p *paramReader) has(name string) bool { _, ok := p.m[name]; return ok }

func (p *paramReader) boolean(name string, def bool) bool {
	v, ok := p.get(name)
	if !ok {
		return def
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		p.fail(name, "must be a boolean, not %s", v)
	}
	return b
}

func (p *paramReader) number(name string, def float64) float64 {
	v, ok := p.get(name)
	if !ok {
		return def
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil || math.IsNaN(f) {
		p.fail(name, "must be a number, not %s", v)
		return 0
	}
	return f
}

func (p *paramReader) str(name string, required bool, def string) string {
	v, ok := p.get(name)
	if !ok {
		if required {
			p.fail(name, "is required")
		}
		return def
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		p.fail(name, "must be a string, not %s", v)
	}
	return s
}

// strings reads an array of strings; a single string is split on commas (as Portkey's UI sends some lists).
func (p *paramReader) strings(name string, required bool) []string {
	v, ok := p.get(name)
	if !ok {
		if required {
			p.fail(name, "is required")
		}
		return nil
	}
	var list []string
	if err := json.Unmarshal(v, &list); err != nil {
		var s string
		if json.Unmarshal(v, &s) != nil {
			p.fail(name, "must be an array of strings, not %s", v)
			return nil
		}
		for _, part := range strings.Split(s, ",") {
			if part = strings.TrimSpace(part); part != "" {
				list = append(list, part)
			}
		}
	}
	if required && len(list) == 0 {
		p.fail(name, "must not be empty")
	}
	return list
}

// operator reads an any|all|none operator.
func (p *paramReader) operator(name, def string) string {
	op := p.str(name, false, def)
	switch op {
	case "any", "all", "none":
		return op
	}
	p.fail(name, "must be \"any\", \"all\" or \"none\", not %q", op)
	return ""
}

// minMax reads a min/max pair of counts.
func (p *paramReader) minMax(minName, maxName string, maxDef float64) (lo, hi float64) {
	lo, hi = p.number(minName, 0), p.number(maxName, maxDef)
	if lo < 0 {
		p.fail(minName, "must not be negative")
	} else if hi < lo {
		p.fail(maxName, "must not be less than %s (%g)", minName, lo)
	}
	return lo, hi
}

// regex reads a required regular expression (RE2 syntax): its text and the compiled matcher.
func (p *paramReader) regex(name string) (string, *matcher) {
	rule := p.str(name, true, "")
	if p.err != nil {
		return "", nil
	}
	re, err := compileMatcher(rule)
	if err != nil {
		p.fail(name, "is not a valid regular expression: %v", err)
	}
	return rule, re
}

// headers reads a headers parameter: an object of strings, or a JSON text of one.
func (p *paramReader) headers(name string) map[string]string {
	v, ok := p.get(name)
	if !ok {
		return nil
	}
	var h map[string]string
	if err := json.Unmarshal(v, &h); err == nil {
		return h
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		if strings.TrimSpace(s) == "" {
			return nil
		}
		if json.Unmarshal([]byte(s), &h) == nil {
			return h
		}
	}
	p.fail(name, "must be an object of header names to strings")
	return nil
}
