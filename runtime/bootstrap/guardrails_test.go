package bootstrap

import (
	"errors"
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/gwerr"
)

// TestSavedGuardrailsShapeAsConfigs: a guardrail object of the file is accepted exactly when the same object
// is accepted inline in a config's output_guardrails (the shape of a saved guardrail, which either list may
// name), and a refusal names the same field with the same words.
func TestSavedGuardrailsShapeAsConfigs(t *testing.T) {
	objects := []string{
		`{"checks": [{"id": "wordCount", "parameters": {"maxWords": 2}}], "deny": true}`,
		`{"deny": true, "default.wordCount": {"maxWords": 2}, "on_fail": {"deny": true}}`,
		`{"type": "guardrail", "async": true, "pii.detect": {}}`,
		`{"deny": true}`,
		`{"checks": [{"id": "wordCount"}]}`,
		`{"checks": [{"id": "word count", "parameters": {}}]}`,
		`{"name": "x", "notNull": {}}`,
		`{"on_fail": {"colour": 1}, "notNull": {}}`,
		`{"default.wordCountt": {}}`,
		`{"regexMatch": {"rule": "("}}`,
		`{"deny": "yes", "notNull": {}}`,
	}
	for _, obj := range objects {
		t.Run(obj, func(t *testing.T) {
			_, fileErr := Parse([]byte(`{"guardrails": [{"id": "g", `+obj[1:]+`]}`), "")
			_, inlineErr := config.Parse([]byte(`{"output_guardrails": [` + obj + `]}`))
			if (fileErr == nil) != (inlineErr == nil) {
				t.Fatalf("file: %v\ninline: %v", fileErr, inlineErr)
			}
			if fileErr == nil {
				return
			}
			ve := validationError(t, fileErr)
			var ge *gwerr.Error
			if !errors.As(inlineErr, &ge) || len(ve.Problems) != 1 {
				t.Fatalf("file: %v\ninline: %v", fileErr, inlineErr)
			}
			rel := strings.TrimPrefix(ge.Param, "output_guardrails[0]")
			words := strings.TrimPrefix(ge.Message, "invalid config: "+ge.Param+": ")
			if p := ve.Problems[0]; p.Path != "guardrails[0]"+rel || !strings.HasSuffix(p.Message, words) {
				t.Fatalf("file: %s: %s\ninline: %s: %s", p.Path, p.Message, ge.Param, words)
			}
		})
	}
}
