package routes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// decodeJSON decodes the request's JSON body into v, refusing unknown fields. Its errors say what is wrong and
// where: 415 for a body that is not application/json, 400 naming the field, or the line and column of a syntax
// error.
func decodeJSON(c *fiber.Ctx, v any) error {
	if err := requireJSON(c); err != nil {
		return err
	}
	body := c.Body()
	if len(bytes.TrimSpace(body)) == 0 {
		return &gwerr.Error{Status: fiber.StatusBadRequest, Code: gwerr.CodeInvalidJSON, Message: "request body is empty: send a JSON object"}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(body, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &gwerr.Error{Status: fiber.StatusBadRequest, Code: gwerr.CodeInvalidJSON,
			Message: fmt.Sprintf("malformed JSON body: unexpected data after the JSON value at offset %d", dec.InputOffset())}
	}
	return nil
}

// requireJSON answers 415 unless the body is declared application/json (or +json).
func requireJSON(c *fiber.Ctx) error {
	ct := c.Get(fiber.HeaderContentType)
	if ct == fiber.MIMEApplicationJSON || ct == fiber.MIMEApplicationJSONCharsetUTF8 {
		return nil // the common case, without parsing
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == fiber.MIMEApplicationJSON || strings.HasSuffix(mt, "+json")) {
		return nil
	}
	got := ct
	if got == "" {
		got = "none"
	}
	return &gwerr.Error{Status: fiber.StatusUnsupportedMediaType, Code: gwerr.CodeUnsupportedMediaType, Param: "content-type",
		Message: fmt.Sprintf("request body must be application/json (content-type was %s)", got)}
}

// jsonError turns an encoding/json error into a 400 that names the problem and, when it can, the field.
func jsonError(body []byte, err error) *gwerr.Error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line, col := position(body, syn.Offset)
		return &gwerr.Error{Status: fiber.StatusBadRequest, Code: gwerr.CodeInvalidJSON,
			Message: fmt.Sprintf("malformed JSON body: %s at line %d, column %d", syn.Error(), line, col)}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &gwerr.Error{Status: fiber.StatusBadRequest, Code: gwerr.CodeInvalidJSON,
			Message: "malformed JSON body: unexpected end of input"}
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return &gwerr.Error{Status: fiber.StatusBadRequest, Code: gwerr.CodeInvalidJSON,
				Message: fmt.Sprintf("request body must be %s, not %s", jsonKind(typ.Type.Kind().String()), typ.Value)}
		}
		return gwerr.BadRequest(field, "%s must be %s, not %s", field, jsonKind(typ.Type.Kind().String()), typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return gwerr.BadRequest(field, "unknown field %q", field)
	}
	return &gwerr.Error{Status: fiber.StatusBadRequest, Code: gwerr.CodeInvalidJSON, Message: "malformed JSON body: " + err.Error()}
}

// jsonKind names a Go kind the way a JSON author would.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "struct", "map":
		return "an object"
	case "slice", "array":
		return "an array"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	}
	return "a " + kind
}

// position converts a byte offset into a 1-based line and column.
func position(body []byte, offset int64) (line, col int) {
	if offset > int64(len(body)) {
		offset = int64(len(body))
	}
	before := body[:offset]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = int(offset) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// listAnswer is the shape of list answers: {"object": "list", "data": [...], "total": N}, where total counts
// every match of the filters, not only the page in data.
type listAnswer[T any] struct {
	Object string `json:"object"`
	Data   []T    `json:"data"`
	Total  int    `json:"total"`
}
