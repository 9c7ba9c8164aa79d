package prompt

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/llmgw/gateway/runtime/jsoncheck"
)

// CheckTemplate validates one prompt template object given alone, such as in the body of an HTTP request, with
// the rules of a template in a bootstrap file's prompt versions, so that both ways of making a prompt accept
// the same templates. A *jsoncheck.Error lists every problem, each at the field's JSON path within the
// template ("messages", "messages[0].content"; "" for the template itself).
func CheckTemplate(raw []byte) error {
	return jsoncheck.Check(raw, ReadTemplate)
}

// ReadTemplate checks the template object t: the parts of a template that have a fixed shape (messages, model
// and at most one target), then, when those are right, that the Mustache of its contents compiles. Its other
// keys are chat hyperparameters, passed on as they are, so it has no unknown fields.
func ReadTemplate(t *jsoncheck.Object) {
	before := len(t.P.List)
	defer func() {
		if len(t.P.List) > before {
			return
		}
		// The shape is right: the Mustache of the contents must parse too, or the template fails at render time.
		raw, _ := json.Marshal(t.Fields)
		if _, err := Compile(raw); err != nil {
			var pe *Error
			if errors.As(err, &pe) && pe.Field != "" {
				t.P.Add(t.At(pe.Field), "%s", pe.Message)
			} else {
				t.P.Add(t.Path, "%v", err)
			}
		}
	}()
	msgs := t.Array("messages", true)
	if msgs != nil && len(msgs) == 0 {
		t.P.Add(t.At("messages"), "must hold at least one message")
	}
	for i, raw := range msgs {
		m := jsoncheck.NewObject(t.P, fmt.Sprintf("%s[%d]", t.At("messages"), i), raw)
		if m == nil {
			continue
		}
		m.Str("role", true)
		if c := m.Get("content"); c == nil {
			m.P.Add(m.At("content"), "is required")
		} else if k := jsoncheck.Kind(c); k != "string" && k != "array" {
			m.P.Add(m.At("content"), "must be a string or an array of parts, not %s", k)
		}
		m.Str("name", false)
		for _, name := range m.Unread() {
			m.Get(name) // tool_calls, tool_call_id and other message fields pass as they are
		}
	}
	t.Str("model", false)
	// provider ("@slug" or a provider id), virtual_key (a stored provider's slug) and config (a saved config's
	// ID) each say where the rendered prompt goes: a template names at most one of them.
	first := ""
	for _, name := range targetFields {
		given := t.Has(name)
		t.Str(name, false)
		switch {
		case !given:
		case first == "":
			first = name
		default:
			t.P.Add(t.At(name), "cannot be set together with %s: a template names at most one of %s", first,
				strings.Join(targetFields, ", "))
		}
	}
}
