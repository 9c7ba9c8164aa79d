package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/jsonfield"
)

// Index is param[i], the way errors name an item of an array (messages[2]).
func Index(param string, i int) string { return jsonfield.Index(param, i) }

// DecodeError turns an encoding/json error met while decoding raw, the value at param ("" for a whole request
// body), into a 400 that says what is wrong and where: the field and the type it must have, the line and
// column of a syntax error, or the unknown field. It is the one translation of decoding errors for every
// reader of callers' JSON: routes, translating adapters and the management API.
func DecodeError(raw []byte, param string, err error) *gwerr.Error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typ):
		field := joinPath(param, typ.Field)
		if field == "" {
			return &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidJSON,
				Message: fmt.Sprintf("request body must be %s, not %s", JSONKind(typ.Type.Kind().String()), typ.Value)}
		}
		return gwerr.BadRequest(field, "%s must be %s, not %s", field, JSONKind(typ.Type.Kind().String()), typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := joinPath(param, strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`))
		return gwerr.BadRequest(field, "unknown field %q", field)
	case param != "":
		return gwerr.BadRequest(param, "%s is not valid JSON: %v", param, err)
	case errors.As(err, &syn):
		line, col := Position(raw, syn.Offset)
		return &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidJSON,
			Message: fmt.Sprintf("malformed JSON body: %s at line %d, column %d", syn.Error(), line, col)}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidJSON,
			Message: "malformed JSON body: unexpected end of input"}
	}
	return &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidJSON, Message: "malformed JSON body: " + err.Error()}
}

// JSONKind names a Go kind (reflect.Kind's String) the way a JSON author would.
func JSONKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "struct", "map", "interface":
		return "an object"
	case "slice", "array":
		return "an array"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	}
	return "another type"
}

// Position converts a byte offset of body into a 1-based line and column.
func Position(body []byte, offset int64) (line, col int) {
	if offset > int64(len(body)) {
		offset = int64(len(body))
	}
	if offset < 0 {
		offset = 0
	}
	before := body[:offset]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = int(offset) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// joinPath appends encoding/json's dotted field path (messages.content) to param.
func joinPath(param, field string) string {
	switch {
	case param == "":
		return field
	case field == "":
		return param
	}
	return param + "." + field
}
