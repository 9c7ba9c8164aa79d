package guardrails

import (
	"encoding/json"
	"math"
	"strings"
)

// params reads a check's parameters. Unknown parameters are ignored (failOnError among them).
type params map[string]json.RawMessage

func parseParams(raw json.RawMessage) (params, error) {
	var p params
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, paramErr("", "must be an object: %v", err)
	}
	for k, v := range p {
		if string(v) == "null" {
			delete(p, k)
		}
	}
	return p, nil
}

func (p params) has(name string) bool { _, ok := p[name]; return ok }

func (p params) boolean(name string, def bool) (bool, error) {
	v, ok := p[name]
	if !ok {
		return def, nil
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		return false, paramErr(name, "must be a boolean, not %s", v)
	}
	return b, nil
}

func (p params) number(name string, def float64) (float64, error) {
	v, ok := p[name]
	if !ok {
		return def, nil
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil || math.IsNaN(f) {
		return 0, paramErr(name, "must be a number, not %s", v)
	}
	return f, nil
}

func (p params) str(name string, required bool, def string) (string, error) {
	v, ok := p[name]
	if !ok {
		if required {
			return "", paramErr(name, "is required")
		}
		return def, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", paramErr(name, "must be a string, not %s", v)
	}
	return s, nil
}

// strings reads an array of strings; a single string is split on commas (as Portkey's UI sends some lists).
func (p params) strings(name string, required bool) ([]string, error) {
	v, ok := p[name]
	if !ok {
		if required {
			return nil, paramErr(name, "is required")
		}
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal(v, &list); err != nil {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return nil, paramErr(name, "must be an array of strings, not %s", v)
		}
		for _, part := range strings.Split(s, ",") {
			if part = strings.TrimSpace(part); part != "" {
				list = append(list, part)
			}
		}
	}
	if required && len(list) == 0 {
		return nil, paramErr(name, "must not be empty")
	}
	return list, nil
}

// operator reads an any|all|none operator.
func (p params) operator(name, def string) (string, error) {
	op, err := p.str(name, false, def)
	if err != nil {
		return "", err
	}
	switch op {
	case "any", "all", "none":
		return op, nil
	}
	return "", paramErr(name, "must be \"any\", \"all\" or \"none\", not %q", op)
}

// minMax reads a min/max pair of counts.
func (p params) minMax(minName, maxName string, maxDef float64) (lo, hi float64, err error) {
	if lo, err = p.number(minName, 0); err != nil {
		return
	}
	if hi, err = p.number(maxName, maxDef); err != nil {
		return
	}
	if lo < 0 {
		return 0, 0, paramErr(minName, "must not be negative")
	}
	if hi < lo {
		return 0, 0, paramErr(maxName, "must not be less than %s (%g)", minName, lo)
	}
	return lo, hi, nil
}

// headers reads a headers parameter: an object of strings, or a JSON text of one.
func (p params) headers(name string) (map[string]string, error) {
	v, ok := p[name]
	if !ok {
		return nil, nil
	}
	var h map[string]string
	if err := json.Unmarshal(v, &h); err == nil {
		return h, nil
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		if strings.TrimSpace(s) == "" {
			return nil, nil
		}
		if json.Unmarshal([]byte(s), &h) == nil {
			return h, nil
		}
	}
	return nil, paramErr(name, "must be an object of header names to strings")
}
