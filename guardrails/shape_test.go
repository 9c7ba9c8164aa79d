package guardrails

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/llmgw/gateway/hostapi"
	"github.com/llmgw/gateway/runtime/gwerr"
)

// TestValidate: the one validator's answers, each naming the offending field's path.
func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		list  list
		raw   string
		param string // "" means accepted
		word  string
	}{
		{"hook", beforeHooks, `{"id": "h", "type": "guardrail", "on_fail": {"deny": true, "feedback": {"value": 1, "weight": 2, "metadata": {}}}, "checks": [{"id": "wordCount", "parameters": {"maxWords": 3}}]}`, "", ""},
		{"hook without checks", afterHooks, `{"id": "h", "async": true}`, "", ""},
		{"hook plugin check", beforeHooks, `{"id": "h", "checks": [{"id": "pii.detect", "parameters": {}}]}`, "", ""},
		{"hook not an object", beforeHooks, `"h"`, "x", "hook object"},
		{"hook id missing", beforeHooks, `{"checks": []}`, "x.id", "required"},
		{"before hook async", beforeHooks, `{"id": "h", "async": true}`, "x.async", "unknown field"},
		{"after hook deny", afterHooks, `{"id": "h", "on_success": {"deny": false}}`, "x.on_success.deny", "not allowed"},
		{"hook feedback value", beforeHooks, `{"id": "h", "on_fail": {"feedback": {"value": "1"}}}`, "x.on_fail.feedback.value", "number"},
		{"hook check parameters missing", beforeHooks, `{"id": "h", "checks": [{"id": "notNull"}]}`, "x.checks[0].parameters", "required"},
		{"hook check unknown id", beforeHooks, `{"id": "h", "checks": [{"id": "notNull", "parameters": {}}, {"id": "default.nope", "parameters": {}}]}`, "x.checks[1].id", "unknown check"},
		{"hook check bad parameter", beforeHooks, `{"id": "h", "checks": [{"id": "regexMatch", "parameters": {"rule": "("}}]}`, "x.checks[0].parameters.rule", "regular expression"},
		{"hook bad failOnError", beforeHooks, `{"id": "h", "checks": [{"id": "notNull", "parameters": {"failOnError": 1}}]}`, "x.checks[0].parameters.failOnError", "boolean"},

		{"guardrail", inputGuardrails, `{"id": "g", "type": "guardrail", "deny": true, "async": false, "on_success": {"feedback": {"value": 1}}, "wordCount": {"maxWords": 3}}`, "", ""},
		{"saved guardrail ID", inputGuardrails, `"no-emails"`, "", ""},
		{"checks list with top-level deny", inputGuardrails, `{"checks": [{"id": "wordCount", "parameters": {"maxWords": 3}}], "deny": true}`, "", ""},
		{"checks list beside check keys", outputGuardrails, `{"notNull": {}, "checks": [{"id": "pii.scan", "parameters": {}}]}`, "", ""},
		{"output on_fail deny", outputGuardrails, `{"on_fail": {"deny": true}, "notNull": {}}`, "", ""},
		{"input on_fail deny", inputGuardrails, `{"on_fail": {"deny": true}, "notNull": {}}`, "x.on_fail.deny", "not allowed"},
		{"guardrail a number", inputGuardrails, `1`, "x", "guardrail object"},
		{"guardrail empty ID", inputGuardrails, `""`, "x", "non-empty"},
		{"guardrail id empty", inputGuardrails, `{"id": "", "notNull": {}}`, "x.id", "must not be empty"},
		{"guardrail deny a string", inputGuardrails, `{"deny": "yes", "notNull": {}}`, "x.deny", "boolean"},
		{"guardrail without checks", outputGuardrails, `{"deny": true}`, "x", "no checks"},
		{"guardrail empty checks list", outputGuardrails, `{"deny": true, "checks": []}`, "x", "no checks"},
		{"guardrail checks not a list", outputGuardrails, `{"checks": {"id": "notNull"}}`, "x.checks", "array of checks"},
		{"guardrail check key not an object", inputGuardrails, `{"wordCount": 10}`, "x.wordCount", "check parameters"},
		{"guardrail key not a check id", inputGuardrails, `{"notNull": {}, "a.b.c": {}}`, "x.a.b.c", "unknown field"},
		{"guardrail unknown check", inputGuardrails, `{"default.wordCountt": {}}`, "x.default.wordCountt", "unknown check"},
		{"guardrail bad parameter", inputGuardrails, `{"wordCount": {"maxWords": "x"}}`, "x.wordCount.maxWords", ""},
		{"guardrail checks item unknown key", inputGuardrails, `{"checks": [{"id": "notNull", "parameters": {}, "colour": 1}]}`, "x.checks[0].colour", "unknown field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := json.RawMessage(tc.raw)
			var err error
			switch tc.list {
			case beforeHooks, afterHooks:
				err = ValidateHook(raw, "x", tc.list == afterHooks)
			default:
				err = ValidateGuardrail(raw, "x", tc.list == outputGuardrails)
			}
			checkValidation(t, err, tc.param, tc.word)
		})
	}
}

func checkValidation(t *testing.T, err error, param, word string) {
	t.Helper()
	if param == "" {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return
	}
	var ge *gwerr.Error
	if !errors.As(err, &ge) {
		t.Fatalf("error %v, want *gwerr.Error", err)
	}
	if ge.Status != 400 || ge.Code != CodeInvalidConfig || ge.Param != param {
		t.Errorf("got %d %s %q, want 400 invalid_config %q", ge.Status, ge.Code, ge.Param, param)
	}
	if !strings.HasPrefix(ge.Message, "invalid config: "+param+": ") || !strings.Contains(ge.Message, word) {
		t.Errorf("message %q: want it to name %q and say %q", ge.Message, param, word)
	}
}

// TestSavedAndInlineAgree: a guardrail object gets the same answer saved (PUT /v1/guardrails, the bootstrap
// file: ValidateSaved) as inline in output_guardrails (runtime/config: ValidateGuardrail), and Compile gives it
// again whether the object stands inline or is read by its saved ID. A saved guardrail has the output shape, as
// either list may name it; the input shape differs only in refusing deny inside on_fail and on_success.
func TestSavedAndInlineAgree(t *testing.T) {
	objects := []string{
		`{"checks": [{"id": "wordCount", "parameters": {"maxWords": 2}}], "deny": true}`,
		`{"deny": true, "default.wordCount": {"maxWords": 2}}`,
		`{"type": "guardrail", "async": true, "notNull": {}}`,
		`{"on_fail": {"deny": true}, "notNull": {}}`,
		`{"deny": true}`,
		`{"checks": []}`,
		`{"checks": [{"id": "wordCount"}]}`,
		`{"checks": [{"id": "word count", "parameters": {}}]}`,
		`{"name": "x", "notNull": {}}`,
		`{"on_fail": {"colour": 1}, "notNull": {}}`,
		`{"default.wordCountt": {}}`,
		`{"regexMatch": {"rule": "("}}`,
		`{"deny": 1, "notNull": {}}`,
	}
	for _, obj := range objects {
		t.Run(obj, func(t *testing.T) {
			raw := json.RawMessage(obj)
			saved := ValidateSaved(raw)
			inline := ValidateGuardrail(raw, "", true)
			if !sameError(saved, inline) {
				t.Fatalf("saved: %v\ninline: %v", saved, inline)
			}
			lookup := func(_, _ string) (json.RawMessage, error) { return raw, nil }
			_, viaID := Compile("ws1", "", nil, nil, nil, raws(`"g"`), lookup, nil)
			_, inlineSet := Compile("ws1", "", nil, nil, nil, raws(obj), nil, nil)
			if (viaID == nil) != (saved == nil) || !sameError(viaID, inlineSet) {
				t.Fatalf("validated: %v\ncompiled by ID: %v\ncompiled inline: %v", saved, viaID, inlineSet)
			}
		})
	}
}

func sameError(a, b error) bool {
	var ga, gb *gwerr.Error
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return errors.As(a, &ga) && errors.As(b, &gb) && ga.Param == gb.Param && ga.Message == gb.Message
}

// TestChecksListDenies: the disputed form, a checks list with top-level deny, denies saved and inline alike.
func TestChecksListDenies(t *testing.T) {
	obj := `{"checks": [{"id": "wordCount", "parameters": {"maxWords": 2}}], "deny": true}`
	lookup := func(_, _ string) (json.RawMessage, error) { return json.RawMessage(obj), nil }
	for _, input := range [][]json.RawMessage{raws(obj), raws(`"g"`)} {
		s := compile(t, nil, nil, input, nil, lookup, nil)
		if out := s.Run(context.Background(), StageBefore, &hostapi.Input{Text: "one two three"}, nil); !out.Deny {
			t.Errorf("%s: not denied: %+v", input[0], out)
		}
	}
}

// TestValidateIn: plugin ids resolve in the workspace; saved guardrails named by ID are not read.
func TestValidateIn(t *testing.T) {
	none := func(_, _, _ string, _ json.RawMessage) (Check, error) { return nil, ErrNoPlugin }
	err := ValidateIn("ws1", "targets[0]", nil, nil, raws(`"never-read"`, `{"piii.detect": {}}`), nil, none)
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Param != "targets[0].input_guardrails[1].piii.detect" || !errors.Is(err, ErrNoPlugin) {
		t.Fatalf("err = %v", err)
	}
	err = ValidateSavedIn("ws1", json.RawMessage(`{"checks": [{"id": "piii.detect", "parameters": {}}]}`), none)
	if !errors.As(err, &ge) || ge.Param != "checks[0].id" || !strings.HasPrefix(ge.Message, "invalid config: checks[0].id: ") {
		t.Fatalf("saved: %v", err)
	}
	if err := ValidateSaved(json.RawMessage(`{"piii.detect": {}}`)); err != nil {
		t.Fatalf("without a workspace plugin checks are taken as they are: %v", err)
	}
}
