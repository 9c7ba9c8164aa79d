package ratelimit

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/llmgw/gateway/runtime/jsoncheck"
	"github.com/llmgw/gateway/storage"
)

// ParsePolicy validates one rate-limit policy object given alone, such as the body of an HTTP request, with
// the rules of a bootstrap file's "rate_limit_policies" entries, so that both ways of making a policy accept the
// same policies. Two differences: "id" is optional (the caller makes one when it is absent), and there is no
// "workspace" field (it is an unknown field here): the caller decides the workspace. The result has the id as
// given and no WorkspaceID, OrganisationID or times. A *jsoncheck.Error lists every problem, each at the field's
// JSON path within the object ("value", "conditions[0].key"; "" for the object itself).
func ParsePolicy(raw []byte) (*storage.RateLimitPolicy, error) {
	var pol *storage.RateLimitPolicy
	err := jsoncheck.Check(raw, func(o *jsoncheck.Object) {
		id := ReadPolicyID(o, false)
		pol = ReadPolicy(o)
		pol.ID = id
		o.Finish()
	})
	if err != nil {
		return nil, err
	}
	return pol, nil
}

// ReadPolicyID reads a policy object's "id": a UUID, in any case.
func ReadPolicyID(o *jsoncheck.Object, required bool) string {
	s := o.Str("id", required)
	if s != "" {
		if _, err := uuid.Parse(s); err != nil || len(s) != 36 {
			o.P.Add(o.At("id"), "%q is not a UUID", s)
		}
	}
	return s
}

// ReadPolicy reads the fields of a policy object that make the policy (type, unit, status, value, name,
// conditions and group_by), leaving "id", "workspace" and Finish to the caller, whose object it is. Types,
// units and statuses must be known, and keys must be ones the limiter enforces (CheckKey).
func ReadPolicy(o *jsoncheck.Object) *storage.RateLimitPolicy {
	pol := &storage.RateLimitPolicy{}
	pol.Type, pol.Unit = o.OneOf("type", Types, ""), o.OneOf("unit", Units, "")
	pol.Status = o.OneOf("status", Statuses, "active")
	if v, ok := o.Number("value", true); ok {
		if v <= 0 {
			o.P.Add(o.At("value"), "must be greater than 0")
		}
		pol.Value = v
	}
	if o.Has("name") {
		n := o.Str("name", false)
		pol.Name = &n
	}
	pol.Conditions, pol.GroupBy = readSelectors(o)
	if pol.Type == "tokens" && namesToolKey(pol.Conditions, pol.GroupBy) {
		o.P.Add(o.At("type"), "%v; use type requests", errTokensForTools)
	}
	return pol
}

// namesToolKey reports whether a condition or group_by key is mcp_server or tool, which makes the policy one of
// tool calls.
func namesToolKey(conds []storage.PolicyMatch, groups []storage.PolicyGroup) bool {
	for _, c := range conds {
		if isToolKey(c.Key) {
			return true
		}
	}
	for _, g := range groups {
		if isToolKey(g.Key) {
			return true
		}
	}
	return false
}

// readSelectors reads a policy object's "conditions" and "group_by" (never nil), whose keys must be ones the
// policies enforce (CheckKey): rate-limit and usage-limit policies read them alike.
func readSelectors(o *jsoncheck.Object) (conds []storage.PolicyMatch, groups []storage.PolicyGroup) {
	conds, groups = []storage.PolicyMatch{}, []storage.PolicyGroup{}
	for i, raw := range o.Array("conditions", false) {
		c := jsoncheck.NewObject(o.P, fmt.Sprintf("%s[%d]", o.At("conditions"), i), raw)
		if c == nil {
			continue
		}
		m := storage.PolicyMatch{Key: c.Str("key", true), Value: c.Str("value", true)}
		if m.Key != "" {
			if err := CheckKey(m.Key); err != nil {
				c.P.Add(c.At("key"), "%v", err)
			}
		}
		c.Finish()
		conds = append(conds, m)
	}
	for i, raw := range o.Array("group_by", false) {
		g := jsoncheck.NewObject(o.P, fmt.Sprintf("%s[%d]", o.At("group_by"), i), raw)
		if g == nil {
			continue
		}
		k := storage.PolicyGroup{Key: g.Str("key", true)}
		if k.Key != "" {
			if err := CheckKey(k.Key); err != nil {
				g.P.Add(g.At("key"), "%v", err)
			}
		}
		g.Finish()
		groups = append(groups, k)
	}
	return conds, groups
}
