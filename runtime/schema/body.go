package schema

import (
	"encoding/json"
	"net/http"
	"strconv"
	"unsafe"

	"github.com/llmgw/gateway/internal/jsonstr"
	"github.com/llmgw/gateway/runtime/gwerr"
)

// Body is a caller's request body, read once at the edge: routes checks it with ReadBody, and every later
// reader asks it instead of decoding the bytes again. The limiter and checks take Model, routes takes Stream,
// conditions and check field lookups take Params, translating adapters take Chat; each is worked out at most
// once per request. Body keeps views into its bytes, which must not change while it is in use. It is not safe
// for concurrent use, as a request is walked by one goroutine.
type Body struct {
	raw     []byte
	scanned bool
	model   string // a view into raw when the model needs no unescaping
	stream  bool

	params  map[string]any
	decoded bool

	chat    *ChatRequest
	chatErr error

	responses    *ResponseRequest
	responsesErr error
}

// NewBody wraps a body the gateway made itself (a rendered prompt) or a test's: it is read lazily, unchecked.
func NewBody(raw []byte) Body { return Body{raw: raw} }

// ReadBody checks that raw is one JSON object with a boolean (or null) stream member and reads its top-level
// model and stream in one pass that allocates nothing. Errors are 400s that name the problem: the line and
// column of a syntax error, or the field of the wrong type.
func ReadBody(raw []byte) (Body, error) {
	b := Body{raw: raw}
	if err := b.scan(); err != nil {
		return Body{}, err
	}
	return b, nil
}

// Raw is the body's bytes.
func (b *Body) Raw() []byte { return b.raw }

// Len is the body's size in bytes.
func (b *Body) Len() int { return len(b.raw) }

// Model is the top-level "model" string, "" when there is none or it is not a string. As with encoding/json,
// the last of duplicate keys wins, so that a body cannot show one model to the limiter and another to the
// provider. The string may point into the body.
func (b *Body) Model() string {
	if !b.scanned {
		_ = b.scan()
	}
	return b.model
}

// Stream reports whether the body asks for a streamed answer.
func (b *Body) Stream() bool {
	if !b.scanned {
		_ = b.scan()
	}
	return b.stream
}

// Params is the body decoded as a JSON object, for conditions and check field lookups; nil when it is not one.
// Callers must not modify it.
func (b *Body) Params() map[string]any {
	if !b.decoded {
		b.decoded = true
		_ = json.Unmarshal(b.raw, &b.params)
	}
	return b.params
}

// Chat is the body decoded as a chat completion request, for translating adapters; retries and fallbacks to
// another translating provider reuse it. Callers must not modify it. Errors are 400s naming the field.
func (b *Body) Chat() (*ChatRequest, error) {
	if b.chat == nil && b.chatErr == nil {
		b.chat, b.chatErr = DecodeChat(b.raw)
	}
	return b.chat, b.chatErr
}

// Responses is the body decoded and validated as a responses API request (DecodeResponseRequest), once: routes
// validates it and every attempt of the engine's responses step reads it. Callers must not modify the result
// (copy it first). Errors are 400s naming the field.
func (b *Body) Responses() (*ResponseRequest, error) {
	if b.responses == nil && b.responsesErr == nil {
		b.responses, b.responsesErr = DecodeResponseRequest(b.raw)
	}
	return b.responses, b.responsesErr
}

// scan walks the top-level members of the object once, checking the syntax of every value. A body that is
// not a valid object shows no model and no stream.
func (b *Body) scan() error {
	b.scanned = true
	err := b.scanMembers()
	if err != nil {
		b.model, b.stream = "", false
	}
	return err
}

func (b *Body) scanMembers() error {
	raw := b.raw
	i := jsonstr.SkipSpace(raw, 0)
	if i >= len(raw) {
		return &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidJSON, Message: "request body is empty: send a JSON object"}
	}
	if raw[i] != '{' {
		return &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidJSON, Message: "request body must be a JSON object"}
	}
	i = jsonstr.SkipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return b.end(i + 1)
	}
	for {
		if i >= len(raw) || raw[i] != '"' {
			return b.syntaxError()
		}
		keyEnd, err := jsonstr.ScanString(raw, i)
		if err != nil {
			return b.syntaxError()
		}
		key := stringValue(raw[i:keyEnd])
		i = jsonstr.SkipSpace(raw, keyEnd)
		if i >= len(raw) || raw[i] != ':' {
			return b.syntaxError()
		}
		start := jsonstr.SkipSpace(raw, i+1)
		end, err := jsonstr.ScanValue(raw, start, 1)
		if err == jsonstr.ErrTooDeep {
			return &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidJSON,
				Message: "request body nests deeper than " + strconv.Itoa(jsonstr.MaxDepth) + " levels"}
		}
		if err != nil {
			return b.syntaxError()
		}
		switch key {
		case "model":
			b.model = ""
			if raw[start] == '"' {
				b.model = stringValue(raw[start:end])
			}
		case "stream":
			switch string(raw[start:end]) {
			case "true":
				b.stream = true
			case "false", "null":
				b.stream = false
			default:
				return b.decodeError()
			}
		}
		i = jsonstr.SkipSpace(raw, end)
		if i >= len(raw) {
			return b.syntaxError()
		}
		switch raw[i] {
		case ',':
			i = jsonstr.SkipSpace(raw, i+1)
		case '}':
			return b.end(i + 1)
		default:
			return b.syntaxError()
		}
	}
}

// end checks that nothing but white space follows the object.
func (b *Body) end(i int) error {
	if jsonstr.SkipSpace(b.raw, i) != len(b.raw) {
		return b.syntaxError()
	}
	return nil
}

// syntaxError and decodeError run encoding/json over the body, on the error path only, so that the message
// is encoding/json's (with the line and column DecodeError adds) whatever the scanner tripped on.
func (b *Body) syntaxError() error {
	if json.Valid(b.raw) { // the scanner is stricter than encoding/json somewhere: say so plainly
		return &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidJSON, Message: "malformed JSON body"}
	}
	return b.decodeError()
}

func (b *Body) decodeError() error {
	var head struct {
		Stream *bool `json:"stream"`
	}
	if err := json.Unmarshal(b.raw, &head); err != nil {
		return DecodeError(b.raw, "", err)
	}
	return &gwerr.Error{Status: http.StatusBadRequest, Code: gwerr.CodeInvalidJSON, Message: "malformed JSON body"}
}

// stringValue is the text of the string literal q (scanned): a view of q's bytes when it needs no decoding.
func stringValue(q []byte) string {
	if inner := q[1 : len(q)-1]; jsonstr.PlainString(inner) {
		return unsafe.String(unsafe.SliceData(inner), len(inner))
	}
	s, _ := jsonstr.Unquote(q)
	return s
}
