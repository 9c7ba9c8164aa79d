package routes

import "testing"

// TestToolPoliciesAdminAPI: policies naming mcp_server or tool are accepted, but not of type tokens: a 400
// naming "type".
func TestToolPoliciesAdminAPI(t *testing.T) {
	f := newFixture(t, Options{})
	okJSON(t, f.adminJSON(t, "POST", "/v1/policies/rate-limits", f.admin,
		`{"type": "requests", "unit": "rpm", "value": 5, "group_by": [{"key": "tool"}]}`))
	okJSON(t, f.adminJSON(t, "POST", "/v1/policies/usage-limits", f.admin,
		`{"type": "cost", "credit_limit": 1, "conditions": [{"key": "mcp_server", "value": "docs"}]}`))
	checkError(t, f.adminJSON(t, "POST", "/v1/policies/rate-limits", f.admin,
		`{"type": "tokens", "unit": "rpm", "value": 5, "group_by": [{"key": "tool"}]}`), 400, "invalid_request", "type")
	checkError(t, f.adminJSON(t, "POST", "/v1/policies/usage-limits", f.admin,
		`{"type": "tokens", "credit_limit": 5, "group_by": [{"key": "mcp_server"}]}`), 400, "invalid_request", "type")
}
