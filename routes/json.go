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
	"github.com/llmgw/gateway/runtime/schema"
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
		return schema.DecodeError(body, "", err)
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

// listAnswer is the shape of list answers: {"object": "list", "data": [...], "total": N}, where total counts
// every match of the filters, not only the page in data.
type listAnswer[T any] struct {
	Object string `json:"object"`
	Data   []T    `json:"data"`
	Total  int    `json:"total"`
}
