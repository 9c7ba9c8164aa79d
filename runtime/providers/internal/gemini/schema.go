package gemini

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// maxSchemaDepth bounds the nesting of a converted schema, and with it the expansion of recursive $refs.
const maxSchemaDepth = 32

// schemaKeys are the JSON Schema keywords Gemini's Schema object (an OpenAPI 3.0 subset) shares with JSON Schema
// and that pass through unchanged. Everything else (additionalProperties, $schema, $id, strict, examples, ...)
// is dropped, because Gemini refuses a request with a keyword it doesn't know.
var schemaKeys = []string{"title", "description", "nullable", "enum", "required", "minItems", "maxItems",
	"minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example", "default", "minimum",
	"maximum", "propertyOrdering"}

// convertSchema turns an OpenAI JSON Schema (function parameters or response_format's schema) into Gemini's
// Schema: local $refs are inlined, type arrays and anyOf with "null" become nullable, oneOf becomes anyOf,
// const becomes a one-value enum, formats Gemini doesn't know are dropped. With omitEmptyObject, an object
// schema without properties gives nil, since Gemini refuses an OBJECT with no properties (a function without
// parameters has none).
func convertSchema(raw json.RawMessage, omitEmptyObject bool) (json.RawMessage, error) {
	if contentKind(raw) == 'n' {
		return nil, nil
	}
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, errors.New("must be a JSON Schema object")
	}
	defs := map[string]any{}
	for _, key := range []string{"definitions", "$defs"} {
		if m, ok := root[key].(map[string]any); ok {
			for name, v := range m {
				defs["#/"+key+"/"+name] = v
			}
		}
	}
	out, err := sanitizeSchema(root, defs, 0)
	if err != nil {
		return nil, err
	}
	if omitEmptyObject {
		props, _ := out["properties"].(map[string]any)
		if t, _ := out["type"].(string); len(props) == 0 && (t == "" || strings.EqualFold(t, "object")) {
			return nil, nil
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return b, nil
}

func sanitizeSchema(m map[string]any, defs map[string]any, depth int) (map[string]any, error) {
	if depth > maxSchemaDepth {
		return nil, fmt.Errorf("nests deeper than %d levels (a recursive $ref?)", maxSchemaDepth)
	}
	if ref, ok := m["$ref"].(string); ok {
		target, ok := defs[ref].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("$ref %q does not name a schema under #/$defs or #/definitions", ref)
		}
		out, err := sanitizeSchema(target, defs, depth+1)
		if err != nil {
			return nil, err
		}
		if d, ok := m["description"].(string); ok {
			out["description"] = d
		}
		return out, nil
	}
	out := make(map[string]any, len(m))
	nullable := false
	switch t := m["type"].(type) {
	case string:
		if t == "null" {
			nullable = true
		} else {
			out["type"] = t
		}
	case []any:
		for _, v := range t {
			s, _ := v.(string)
			switch {
			case s == "null":
				nullable = true
			case s != "" && out["type"] == nil:
				out["type"] = s // Gemini takes one type; the first non-null one wins
			}
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		list, ok := m[key].([]any)
		if !ok {
			continue
		}
		alts := make([]any, 0, len(list))
		for _, alt := range list {
			am, ok := alt.(map[string]any)
			if !ok {
				continue
			}
			if t, _ := am["type"].(string); t == "null" && len(am) == 1 {
				nullable = true
				continue
			}
			s, err := sanitizeSchema(am, defs, depth+1)
			if err != nil {
				return nil, err
			}
			alts = append(alts, s)
		}
		switch len(alts) {
		case 0:
		case 1:
			mergeSchema(out, alts[0].(map[string]any))
		default:
			out["anyOf"] = alts
		}
	}
	if list, ok := m["allOf"].([]any); ok {
		for _, alt := range list {
			if am, ok := alt.(map[string]any); ok {
				s, err := sanitizeSchema(am, defs, depth+1)
				if err != nil {
					return nil, err
				}
				mergeSchema(out, s)
			}
		}
	}
	if props, ok := m["properties"].(map[string]any); ok {
		op := make(map[string]any, len(props))
		for name, v := range props {
			vm, ok := v.(map[string]any)
			if !ok {
				continue
			}
			s, err := sanitizeSchema(vm, defs, depth+1)
			if err != nil {
				return nil, err
			}
			op[name] = s
		}
		out["properties"] = op
	}
	switch items := m["items"].(type) {
	case map[string]any:
		s, err := sanitizeSchema(items, defs, depth+1)
		if err != nil {
			return nil, err
		}
		out["items"] = s
	case []any: // tuple form: Gemini has one item schema
		if len(items) > 0 {
			if im, ok := items[0].(map[string]any); ok {
				s, err := sanitizeSchema(im, defs, depth+1)
				if err != nil {
					return nil, err
				}
				out["items"] = s
			}
		}
	}
	for _, key := range schemaKeys {
		if v, ok := m[key]; ok {
			out[key] = v
		}
	}
	if c, ok := m["const"]; ok && out["enum"] == nil {
		out["enum"] = []any{c}
	}
	if enum, ok := out["enum"].([]any); ok {
		for _, v := range enum {
			if _, isString := v.(string); !isString {
				delete(out, "enum") // Gemini's enums are strings only
				break
			}
		}
	}
	if f, ok := m["format"].(string); ok {
		switch f {
		case "enum", "date-time", "int32", "int64", "float", "double":
			out["format"] = f
		}
	}
	if req, ok := out["required"].([]any); ok {
		props, _ := out["properties"].(map[string]any)
		kept := make([]any, 0, len(req))
		for _, r := range req {
			if name, ok := r.(string); ok && props[name] != nil {
				kept = append(kept, name)
			}
		}
		if len(kept) == 0 {
			delete(out, "required")
		} else {
			out["required"] = kept
		}
	}
	if nullable {
		out["nullable"] = true
	}
	return out, nil
}

// mergeSchema copies src's keywords that dst doesn't set.
func mergeSchema(dst, src map[string]any) {
	for k, v := range src {
		if _, ok := dst[k]; !ok {
			dst[k] = v
		}
	}
}
