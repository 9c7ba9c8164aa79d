package control

import (
	"strings"
	"testing"

	"github.com/llmgw/gateway/runtime/gwerr"
)

// TestToolPolicyValidation: rate-limit and usage-limit policies may name mcp_server and tool, but a tokens one
// that does is a 400 naming "type", on create and on an update that makes it so.
func TestToolPolicyValidation(t *testing.T) {
	f := newFixture(t, Options{})
	rate, err := f.plane.CreatePolicy(ctx, f.caller, fields(t, `{"type": "requests", "unit": "rpm", "value": 5,
		"conditions": [{"key": "mcp_server", "value": "docs"}], "group_by": [{"key": "tool"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	budget, err := f.plane.CreateUsageLimit(ctx, f.caller, fields(t, `{"type": "cost", "credit_limit": 1, "group_by": [{"key": "mcp_server"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	wantTypeRefused := func(err error, hint string) {
		t.Helper()
		wantBadRequest(t, err, "type")
		if ge := err.(*gwerr.Error); !strings.Contains(ge.Message, "tool calls use no tokens; "+hint) {
			t.Errorf("message %q does not say %q", ge.Message, hint)
		}
	}
	_, err = f.plane.CreatePolicy(ctx, f.caller, fields(t, `{"type": "tokens", "unit": "rpm", "value": 5, "group_by": [{"key": "tool"}]}`))
	wantTypeRefused(err, "use type requests")
	_, err = f.plane.UpdatePolicy(ctx, f.caller, rate.ID, fields(t, `{"type": "tokens"}`))
	wantTypeRefused(err, "use type requests")
	_, err = f.plane.CreateUsageLimit(ctx, f.caller, fields(t, `{"type": "tokens", "credit_limit": 5,
		"conditions": [{"key": "mcp_server", "value": "docs"}]}`))
	wantTypeRefused(err, "use type cost")
	_, err = f.plane.UpdateUsageLimit(ctx, f.caller, budget.ID, fields(t, `{"type": "tokens"}`))
	wantTypeRefused(err, "use type cost")
}
