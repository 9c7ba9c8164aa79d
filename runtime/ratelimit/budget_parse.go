package ratelimit

import (
	"github.com/llmgw/gateway/runtime/jsoncheck"
	"github.com/llmgw/gateway/storage"
)

// The values a usage-limit policy's fields may take: the one list that the enforcer, the bootstrap file and the
// admin endpoints all check against.
var (
	BudgetTypes  = []string{"cost", "tokens"}
	BudgetResets = []string{"monthly", "weekly"}
	// BudgetStatuses are the statuses a body may give. "exhausted" is what the view shows of an active policy
	// whose spend reached its limit; sent back, it stores "active" (the spend, not the status, decides).
	BudgetStatuses = []string{"active", "exhausted", "archived"}
)

// maxSelectors bounds a usage-limit policy's conditions and its group_by keys.
const maxSelectors = 16

// ParseUsageLimit validates one usage-limit policy object given alone (an HTTP body) with the rules of a
// bootstrap file's "usage_limit_policies" entries; as ParsePolicy, "id" is optional and "workspace" unknown.
// A *jsoncheck.Error lists every problem at the field's JSON path ("credit_limit", "conditions[0].key").
func ParseUsageLimit(raw []byte) (*storage.UsageLimitPolicy, error) {
	var pol *storage.UsageLimitPolicy
	err := jsoncheck.Check(raw, func(o *jsoncheck.Object) {
		id := ReadPolicyID(o, false)
		pol = ReadUsageLimit(o)
		pol.ID = id
		o.Finish()
	})
	if err != nil {
		return nil, err
	}
	return pol, nil
}

// ReadUsageLimit reads the fields that make a usage-limit policy (name, type, credit_limit, alert_threshold,
// periodic_reset, conditions, group_by, status), leaving "id", "workspace" and Finish to the caller.
func ReadUsageLimit(o *jsoncheck.Object) *storage.UsageLimitPolicy {
	pol := &storage.UsageLimitPolicy{}
	pol.Type = o.OneOf("type", BudgetTypes, "")
	pol.Status = o.OneOf("status", BudgetStatuses, "active")
	if pol.Status == "exhausted" {
		pol.Status = "active"
	}
	if v, ok := o.Number("credit_limit", true); ok {
		if v <= 0 {
			o.P.Add(o.At("credit_limit"), "must be greater than 0")
		}
		pol.CreditLimit = v
	}
	if v, ok := o.Number("alert_threshold", false); ok {
		if v <= 0 || (pol.CreditLimit > 0 && v > pol.CreditLimit) {
			o.P.Add(o.At("alert_threshold"), "must be greater than 0 and at most credit_limit (%g), not %g", pol.CreditLimit, v)
		}
		pol.AlertThreshold = &v
	}
	if o.Has("periodic_reset") {
		r := o.OneOf("periodic_reset", BudgetResets, "")
		pol.PeriodicReset = &r
	}
	if o.Has("name") {
		n := o.Str("name", false)
		if len(n) > 256 {
			o.P.Add(o.At("name"), "must be at most 256 bytes long")
		}
		pol.Name = &n
	}
	pol.Conditions, pol.GroupBy = readSelectors(o)
	if pol.Type == "tokens" && namesToolKey(pol.Conditions, pol.GroupBy) {
		o.P.Add(o.At("type"), "%v; use type cost (the server's cost_per_call)", errTokensForTools)
	}
	if len(pol.Conditions) > maxSelectors {
		o.P.Add(o.At("conditions"), "must have at most %d items, not %d", maxSelectors, len(pol.Conditions))
	}
	if len(pol.GroupBy) > maxSelectors {
		o.P.Add(o.At("group_by"), "must have at most %d items, not %d", maxSelectors, len(pol.GroupBy))
	}
	return pol
}
