package jsoncheck

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/llmgw/gateway/runtime/jsonfield"
)

// Problem is one thing wrong: where (a JSON path such as providers[0].custom_host, "" for the value itself) and
// what.
type Problem struct {
	Path    string
	Message string
}

func (p Problem) String() string { return p.Path + ": " + p.Message }

// Problems collects the problems of one validation, in the order they are found.
type Problems struct{ List []Problem }

// Add records a problem at path.
func (p *Problems) Add(path, format string, args ...any) {
	p.List = append(p.List, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// Error lists the problems of one object checked alone (Check), in the order its fields are checked; its text
// joins them as "path: message; ...", a problem of the object itself as its message alone.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	parts := make([]string, len(e.Problems))
	for i, pr := range e.Problems {
		parts[i] = pr.Message
		if pr.Path != "" {
			parts[i] = pr.Path + ": " + pr.Message
		}
	}
	return strings.Join(parts, "; ")
}

// Check reads raw, a JSON object given alone (the body of a request), with read, and returns nil or an *Error
// whose paths are relative to the object ("value", "conditions[0].key"; "" for the object itself). A raw that
// is not an object is one problem at "", and read is not called.
func Check(raw []byte, read func(o *Object)) error {
	p := &Problems{}
	// The root path is empty, so that paths come out as ".value": trimmed below.
	if o := NewObject(p, "", raw); o != nil {
		read(o)
	}
	if len(p.List) == 0 {
		return nil
	}
	for i := range p.List {
		p.List[i].Path = strings.TrimPrefix(p.List[i].Path, ".")
	}
	return &Error{Problems: p.List}
}

// Object reads the fields of one JSON object at Path, adding a problem to P for each field of the wrong type
// and, at Finish, for each field nothing read.
type Object struct {
	Path   string
	Fields map[string]json.RawMessage
	P      *Problems
	read   map[string]bool
}

// NewObject decodes raw as a JSON object at path; a non-object is reported and yields nil.
func NewObject(p *Problems, path string, raw json.RawMessage) *Object {
	if Kind(raw) != "object" {
		p.Add(path, "must be an object, not %s", Kind(raw))
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		p.Add(path, "%v", err)
		return nil
	}
	return &Object{Path: path, Fields: fields, read: map[string]bool{}, P: p}
}

// At is the path of the field name.
func (o *Object) At(name string) string { return o.Path + "." + name }

// Get marks name as read and returns its raw value; absent and null both yield nil.
func (o *Object) Get(name string) json.RawMessage {
	o.read[name] = true
	raw, ok := o.Fields[name]
	if !ok || Kind(raw) == "null" {
		return nil
	}
	return raw
}

// Has marks name as read and reports whether it has a value other than null.
func (o *Object) Has(name string) bool { return o.Get(name) != nil }

// Str reads a string field; absent and null are "". A required one must not be empty.
func (o *Object) Str(name string, required bool) string {
	raw := o.Get(name)
	if raw == nil {
		if required {
			o.P.Add(o.At(name), "is required")
		}
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		o.P.Add(o.At(name), "must be a string, not %s", Kind(raw))
		return ""
	}
	if required && s == "" {
		o.P.Add(o.At(name), "must not be empty")
	}
	return s
}

// Bool reads an optional boolean field (false when absent).
func (o *Object) Bool(name string) bool {
	raw := o.Get(name)
	if raw == nil {
		return false
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		o.P.Add(o.At(name), "must be a boolean, not %s", Kind(raw))
	}
	return b
}

// Number returns the field's value and whether it was present and a number.
func (o *Object) Number(name string, required bool) (float64, bool) {
	raw := o.Get(name)
	if raw == nil {
		if required {
			o.P.Add(o.At(name), "is required")
		}
		return 0, false
	}
	var f float64
	if Kind(raw) != "number" {
		o.P.Add(o.At(name), "must be a number, not %s", Kind(raw))
		return 0, false
	}
	if json.Unmarshal(raw, &f) != nil {
		o.P.Add(o.At(name), "%s is out of range", raw)
		return 0, false
	}
	return f, true
}

// OneOf reads a string field that must be one of allowed. Without a default (def "") it is required; absent, it
// is def.
func (o *Object) OneOf(name string, allowed []string, def string) string {
	s := o.Str(name, def == "")
	if s == "" {
		return def
	}
	if !slices.Contains(allowed, s) {
		o.P.Add(o.At(name), "must be one of %s, not %q", strings.Join(allowed, ", "), s)
	}
	return s
}

// Sub returns the field as an object, or nil when absent (reported when required) or not an object.
func (o *Object) Sub(name string, required bool) *Object {
	raw := o.Get(name)
	if raw == nil {
		if required {
			o.P.Add(o.At(name), "is required")
		}
		return nil
	}
	return NewObject(o.P, o.At(name), raw)
}

// RawObject returns the field's raw JSON when it is an object.
func (o *Object) RawObject(name string, required bool) json.RawMessage {
	raw := o.Get(name)
	if raw == nil {
		if required {
			o.P.Add(o.At(name), "is required")
		}
		return nil
	}
	if Kind(raw) != "object" {
		o.P.Add(o.At(name), "must be an object, not %s", Kind(raw))
		return nil
	}
	return raw
}

// Array returns the field's items, or nil when absent (reported when required) or not an array.
func (o *Object) Array(name string, required bool) []json.RawMessage {
	raw := o.Get(name)
	if raw == nil {
		if required {
			o.P.Add(o.At(name), "is required")
		}
		return nil
	}
	var items []json.RawMessage
	if Kind(raw) != "array" || json.Unmarshal(raw, &items) != nil {
		o.P.Add(o.At(name), "must be an array, not %s", Kind(raw))
		return nil
	}
	return items
}

// Finish reports the fields that nothing read, in order: they are unknown.
func (o *Object) Finish() {
	for _, name := range o.Unread() {
		o.P.Add(o.At(name), "unknown field")
	}
}

// Unread returns the names of fields not read yet, in order.
func (o *Object) Unread() []string {
	var names []string
	for name := range o.Fields {
		if !o.read[name] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Kind names the JSON type of raw, as config errors do.
func Kind(raw json.RawMessage) string { return jsonfield.Kind(raw) }
