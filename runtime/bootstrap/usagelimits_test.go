package bootstrap

import (
	"strings"
	"testing"
)

const usageLimitDoc = `{"usage_limit_policies": [{"id": "5f0c1a6e-2b7d-4c1e-9a3f-0d4e5b6c7a8b", "workspace": "default",
	"name": "monthly spend", "type": "cost", "credit_limit": 100, "alert_threshold": 80, "periodic_reset": "monthly",
	"conditions": [{"key": "model", "value": "gpt-4o"}], "group_by": [{"key": "api_key"}]}]}`

func TestUsageLimitPoliciesApplyIdempotently(t *testing.T) {
	st := newStore(t)
	f := mustParse(t, usageLimitDoc, t.TempDir())
	mustApply(t, st, f)
	ws, err := st.Workspaces.Resolve("default")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := st.UsageLimits.Get(ws.ID, "5f0c1a6e-2b7d-4c1e-9a3f-0d4e5b6c7a8b")
	if err != nil {
		t.Fatal(err)
	}
	if pol.Type != "cost" || pol.CreditLimit != 100 || *pol.AlertThreshold != 80 || *pol.PeriodicReset != "monthly" ||
		pol.Status != "active" || pol.OrganisationID != ws.OrganisationID || len(pol.GroupBy) != 1 || len(pol.Conditions) != 1 {
		t.Fatalf("stored %+v", pol)
	}
	mustApply(t, st, mustParse(t, usageLimitDoc, t.TempDir()))
	after, _ := st.UsageLimits.Get(ws.ID, pol.ID)
	if !after.UpdatedAt.Equal(pol.UpdatedAt) {
		t.Fatal("applying the same file twice rewrote the policy")
	}
}

func TestUsageLimitPoliciesValidation(t *testing.T) {
	tests := []struct{ doc, path string }{
		{`{"usage_limit_policies": [{"workspace": "default", "type": "cost", "credit_limit": 1}]}`, "usage_limit_policies[0].id"},
		{`{"usage_limit_policies": [{"id": "5f0c1a6e-2b7d-4c1e-9a3f-0d4e5b6c7a8b", "type": "cost", "credit_limit": 0}]}`, "usage_limit_policies[0].credit_limit"},
		{`{"usage_limit_policies": [{"id": "5f0c1a6e-2b7d-4c1e-9a3f-0d4e5b6c7a8b", "type": "cost", "credit_limit": 1, "periodic_reset": "daily"}]}`, "usage_limit_policies[0].periodic_reset"},
		{`{"usage_limit_policies": [{"id": "5f0c1a6e-2b7d-4c1e-9a3f-0d4e5b6c7a8b", "type": "cost", "credit_limit": 1, "unit": "rpm"}]}`, "usage_limit_policies[0].unit"},
		{`{"usage_limit_policies": [{"id": "5f0c1a6e-2b7d-4c1e-9a3f-0d4e5b6c7a8b", "type": "cost", "credit_limit": 1},
			{"id": "5f0c1a6e-2b7d-4c1e-9a3f-0d4e5b6c7a8b", "type": "tokens", "credit_limit": 1}]}`, "usage_limit_policies[1].id"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), t.TempDir())
			ve := validationError(t, err)
			if ve.Problems[0].Path != tc.path && !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("problems %v, want one at %s", ve.Problems, tc.path)
			}
		})
	}
}
