package bootstrap

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/llmgw/gateway/runtime/jsonfield"
)

// Problem is one thing wrong in a bootstrap file: where (a JSON path such as providers[0].custom_host) and what.
type Problem struct {
	Path    string
	Message string
}

func (p Problem) String() string { return p.Path + ": " + p.Message }

// ValidationError lists every problem found in a bootstrap file, so that one run shows them all.
type ValidationError struct {
	File     string
	Problems []Problem
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bootstrap file %s is invalid (%d problem", e.File, len(e.Problems))
	if len(e.Problems) != 1 {
		b.WriteByte('s')
	}
	b.WriteString("):")
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

type problems struct{ list []Problem }

func (p *problems) add(path, format string, args ...any) {
	p.list = append(p.list, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// object reads the fields of one JSON object at path, checking each field's type as it is read and, at
// finish, that no field was left unread (unknown fields are errors).
type object struct {
	path   string
	fields map[string]json.RawMessage
	read   map[string]bool
	p      *problems
}

// newObject decodes raw as a JSON object; a non-object is reported and yields nil.
func newObject(p *problems, path string, raw json.RawMessage) *object {
	if kind(raw) != "object" {
		p.add(path, "must be an object, not %s", kind(raw))
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		p.add(path, "%v", err)
		return nil
	}
	return &object{path: path, fields: fields, read: map[string]bool{}, p: p}
}

func (o *object) at(name string) string { return o.path + "." + name }

// get marks name as read and returns its raw value; absent and null both yield nil.
func (o *object) get(name string) json.RawMessage {
	o.read[name] = true
	raw, ok := o.fields[name]
	if !ok || kind(raw) == "null" {
		return nil
	}
	return raw
}

func (o *object) has(name string) bool { return o.get(name) != nil }

func (o *object) str(name string, required bool) string {
	raw := o.get(name)
	if raw == nil {
		if required {
			o.p.add(o.at(name), "is required")
		}
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		o.p.add(o.at(name), "must be a string, not %s", kind(raw))
		return ""
	}
	if required && s == "" {
		o.p.add(o.at(name), "must not be empty")
	}
	return s
}

func (o *object) boolean(name string) bool {
	raw := o.get(name)
	if raw == nil {
		return false
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		o.p.add(o.at(name), "must be a boolean, not %s", kind(raw))
	}
	return b
}

// number returns the field's value and whether it was present and a number.
func (o *object) number(name string, required bool) (float64, bool) {
	raw := o.get(name)
	if raw == nil {
		if required {
			o.p.add(o.at(name), "is required")
		}
		return 0, false
	}
	var f float64
	if kind(raw) != "number" {
		o.p.add(o.at(name), "must be a number, not %s", kind(raw))
		return 0, false
	}
	if json.Unmarshal(raw, &f) != nil {
		o.p.add(o.at(name), "%s is out of range", raw)
		return 0, false
	}
	return f, true
}

// sub returns the field as an object, or nil when absent (reported when required) or not an object.
func (o *object) sub(name string, required bool) *object {
	raw := o.get(name)
	if raw == nil {
		if required {
			o.p.add(o.at(name), "is required")
		}
		return nil
	}
	return newObject(o.p, o.at(name), raw)
}

// rawObject returns the field's raw JSON when it is an object.
func (o *object) rawObject(name string, required bool) json.RawMessage {
	raw := o.get(name)
	if raw == nil {
		if required {
			o.p.add(o.at(name), "is required")
		}
		return nil
	}
	if kind(raw) != "object" {
		o.p.add(o.at(name), "must be an object, not %s", kind(raw))
		return nil
	}
	return raw
}

// array returns the field's items, or nil when absent (reported when required) or not an array.
func (o *object) array(name string, required bool) []json.RawMessage {
	raw := o.get(name)
	if raw == nil {
		if required {
			o.p.add(o.at(name), "is required")
		}
		return nil
	}
	var items []json.RawMessage
	if kind(raw) != "array" || json.Unmarshal(raw, &items) != nil {
		o.p.add(o.at(name), "must be an array, not %s", kind(raw))
		return nil
	}
	return items
}

// finish reports the fields that nothing read: they are unknown.
func (o *object) finish() {
	var unknown []string
	for name := range o.fields {
		if !o.read[name] {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	for _, name := range unknown {
		o.p.add(o.at(name), "unknown field")
	}
}

// unread returns the names of fields not read yet, in order.
func (o *object) unread() []string {
	var names []string
	for name := range o.fields {
		if !o.read[name] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// kind names the JSON type of raw, as config errors do.
func kind(raw json.RawMessage) string { return jsonfield.Kind(raw) }
