package control

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/llmgw/gateway/guardrails"
	"github.com/llmgw/gateway/hostapi"
)

type erroringCheck struct{}

func (erroringCheck) Check(context.Context, *hostapi.Input, hostapi.RequestView) (hostapi.Output, error) {
	return hostapi.Output{}, errors.New("not loaded")
}

func anyPlugin(_, _, _ string, _ json.RawMessage) (guardrails.Check, error) {
	return erroringCheck{}, nil
}

func guardrailObject(t *testing.T, s string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Saving and deleting a guardrail drop the engine's compiled checks, so that configs naming it read it again;
// a refused guardrail drops nothing and stores nothing.
func TestGuardrailWritesForgetCompiledHooks(t *testing.T) {
	f := newFixture(t, Options{PluginChecks: anyPlugin})
	g, err := f.plane.PutGuardrail(ctx, f.caller, "short", guardrailObject(t, `{"id": "ignored", "deny": true, "default.wordCount": {"maxWords": 3}}`))
	if err != nil {
		t.Fatal(err)
	}
	if g.ID != "short" || f.hooks.forgot != 1 {
		t.Fatalf("saved %q; compiled hooks forgotten %d times, want 1", g.ID, f.hooks.forgot)
	}
	if _, err := f.plane.PutGuardrail(ctx, f.caller, "pii", guardrailObject(t, `{"deny": true, "piii.detect": {}}`)); status(err) != 400 {
		t.Fatalf("a check naming a plugin the workspace has not stored: %v, want a 400", err)
	}
	if _, err := f.plane.GetGuardrail(ctx, f.caller, "pii"); status(err) != 404 || f.hooks.forgot != 1 {
		t.Fatalf("the refused guardrail: get %v, compiled hooks forgotten %d times", err, f.hooks.forgot)
	}
	if err := f.plane.DeleteGuardrail(ctx, f.caller, "short"); err != nil || f.hooks.forgot != 2 {
		t.Fatalf("delete: %v, compiled hooks forgotten %d times, want 2", err, f.hooks.forgot)
	}
	if err := f.plane.DeleteGuardrail(ctx, f.caller, "short"); status(err) != 404 {
		t.Fatalf("deleting it again: %v, want a 404", err)
	}
	if _, err := f.plane.PutGuardrail(ctx, f.caller, "bad id!", guardrailObject(t, `{"default.wordCount": {}}`)); status(err) != 400 {
		t.Fatalf("a bad id: %v, want a 400", err)
	}
}
