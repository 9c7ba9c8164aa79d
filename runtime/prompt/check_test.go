package prompt

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/jsoncheck"
)

func TestCheckTemplate(t *testing.T) {
	const msgs = `"messages": [{"role": "user", "content": "Hi {{name}}"}]`
	valid := []struct{ name, doc string }{
		{"messages only", `{` + msgs + `}`},
		{"DESIGN.md's example", `{"provider": "@mock-openai", "model": "m", ` + msgs + `, "temperature": 0.2}`},
		{"a provider id", `{"provider": "openai", "model": "gpt-4o", ` + msgs + `}`},
		{"a virtual key", `{"virtual_key": "mock-openai", ` + msgs + `}`},
		{"a saved config", `{"config": "cfg-a", ` + msgs + `}`},
		{"nulls mean absent", `{"provider": null, "virtual_key": null, "config": "cfg-a", "model": null, ` + msgs + `}`},
		{"content as parts, extra message fields", `{"messages": [{"role": "user", "name": "ann",
			"content": [{"type": "text", "text": "hi"}], "tool_call_id": "x"}]}`},
		{"hyperparameters pass as they are", `{` + msgs + `, "max_tokens": 5, "stop": ["\n"], "seed": 1,
			"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}], "tool_choice": "none",
			"response_format": {"type": "json_object"}, "thinking": {"type": "enabled", "budget_tokens": 100},
			"anything_else": {"x": [1]}}`},
	}
	for _, tc := range valid {
		t.Run(tc.name, func(t *testing.T) {
			if err := CheckTemplate([]byte(tc.doc)); err != nil {
				t.Fatal(err)
			}
		})
	}

	invalid := []struct {
		name string
		doc  string
		// paths are the problems' paths in order; message is part of the first problem's message.
		paths   []string
		message string
	}{
		{"not an object", `[1]`, []string{""}, "must be an object, not array"},
		{"a string", `"Hi {{name}}"`, []string{""}, "must be an object, not string"},
		{"null", `null`, []string{""}, "must be an object, not null"},
		{"malformed", `{"messages": `, []string{""}, "unexpected end of JSON input"},
		{"messages missing", `{"model": "m"}`, []string{"messages"}, "is required"},
		{"messages empty", `{"messages": []}`, []string{"messages"}, "at least one message"},
		{"messages an object", `{"messages": {"role": "user"}}`, []string{"messages"}, "must be an array, not object"},
		{"message not an object", `{"messages": ["hi"]}`, []string{"messages[0]"}, "must be an object, not string"},
		{"content missing", `{"messages": [{"role": "user"}]}`, []string{"messages[0].content"}, "is required"},
		{"content a number", `{"messages": [{"role": "user", "content": 5}]}`, []string{"messages[0].content"}, "string or an array of parts, not number"},
		{"role missing in the second", `{"messages": [{"role": "system", "content": "a"}, {"content": "b"}]}`, []string{"messages[1].role"}, "is required"},
		{"name a number", `{"messages": [{"role": "user", "content": "a", "name": 1}]}`, []string{"messages[0].name"}, "must be a string"},
		{"model a number", `{"model": 4, ` + msgs + `}`, []string{"model"}, "must be a string, not number"},
		{"provider an object", `{"provider": {"id": "openai"}, ` + msgs + `}`, []string{"provider"}, "must be a string, not object"},
		{"virtual_key a number", `{"virtual_key": 1, ` + msgs + `}`, []string{"virtual_key"}, "must be a string, not number"},
		{"config an object", `{"config": {"retry": {"attempts": 1}}, ` + msgs + `}`, []string{"config"}, "must be a string, not object"},
		{"provider and virtual_key", `{"provider": "@p", "virtual_key": "p", ` + msgs + `}`, []string{"virtual_key"}, "cannot be set together with provider"},
		{"provider and config", `{"provider": "@p", "config": "c", ` + msgs + `}`, []string{"config"}, "cannot be set together with provider"},
		{"virtual_key and config", `{"config": "c", "virtual_key": "p", ` + msgs + `}`, []string{"config"}, "cannot be set together with virtual_key"},
		{"all three", `{"provider": "@p", "virtual_key": "p", "config": "c", ` + msgs + `}`, []string{"virtual_key", "config"}, "at most one of provider, virtual_key, config"},
		{"every problem", `{"messages": [{"content": 1}], "model": 2, "provider": "@p", "config": "c"}`,
			[]string{"messages[0].role", "messages[0].content", "model", "config"}, "is required"},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckTemplate([]byte(tc.doc))
			var te *jsoncheck.Error
			if !errors.As(err, &te) {
				t.Fatalf("err = %v, want a *jsoncheck.Error", err)
			}
			var paths []string
			for _, p := range te.Problems {
				paths = append(paths, p.Path)
			}
			if !reflect.DeepEqual(paths, tc.paths) {
				t.Fatalf("problem paths = %q, want %q (%v)", paths, tc.paths, err)
			}
			if !strings.Contains(te.Problems[0].Message, tc.message) {
				t.Fatalf("first problem %q does not say %q", te.Problems[0].Message, tc.message)
			}
			if tc.paths[0] != "" && !strings.HasPrefix(err.Error(), tc.paths[0]+": ") {
				t.Fatalf("error %q does not start with the field %q", err, tc.paths[0])
			}
		})
	}
	if err := CheckTemplate([]byte(`{"messages": [{"role": "user"}]}`)); err == nil || err.Error() != "messages[0].content: is required" {
		t.Fatalf("err = %v, want exactly \"messages[0].content: is required\"", err)
	}
}
