package control

import (
	"context"
	"encoding/json"
	"time"

	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/ratelimit"
	"github.com/llmgw/gateway/storage"
)

// Usage-limit policies (budgets, DESIGN.md "Budgets") of the caller's workspace, managed with the rules of
// rate-limit policies (policies.go): a policy belongs to the workspace of the key that makes it, bodies carry no
// "workspace" and no other workspace_id, the view's read-only fields are ignored (current_usage,
// usage_by_group, period_start and period_end too), ids are UUIDs unique across workspaces (409 otherwise),
// another workspace's id is a 404, lists are ordered by created_at then id and paged alike. A body is checked by
// ratelimit.ParseUsageLimit, as a bootstrap file's "usage_limit_policies" entries are.
//
// Status: a stored policy is "active" or "archived"; "exhausted" is an active policy whose spend reached its
// credit_limit (a view, decided by the spend), accepted in a body as "active". The list's status filter "" means
// every policy that is not archived.

// readOnlyUsageLimitFields are fields of the view that the gateway fills; a body's values for them are ignored:
// a rate-limit policy's and the usage ones.
var readOnlyUsageLimitFields = []string{"object", "organisation_id", "created_at", "last_updated_at", "current_usage",
	"usage_by_group", "period_start", "period_end"}

// UsageLimitFilter selects the usage-limit policies of a list, and the page.
type UsageLimitFilter struct {
	Status string // "" (not archived), active, exhausted or archived
	Type   string // "": any
	// Workspace is the workspace_id filter: "" or the caller's workspace by ID or slug.
	Workspace string
	PageSize  int
	Paged     bool
	Page      int
	// Exhausted tells whether an active policy's spend reached its limit, for the status filters active and
	// exhausted. Nil: none is.
	Exhausted func(*storage.UsageLimitPolicy) bool
}

// ListUsageLimits returns the page of the caller's workspace's usage-limit policies that match every filter,
// and how many match in all.
func (p *Plane) ListUsageLimits(_ context.Context, caller Caller, f UsageLimitFilter) (page []*storage.UsageLimitPolicy, total int, err error) {
	if err := p.checkWorkspaceFilter(caller, f.Workspace); err != nil {
		return nil, 0, err
	}
	all, err := p.store.UsageLimits.List(caller.WorkspaceID)
	if err != nil {
		return nil, 0, gwerr.Internal(err)
	}
	exhausted := func(pol *storage.UsageLimitPolicy) bool { return f.Exhausted != nil && f.Exhausted(pol) }
	match := all[:0]
	for _, pol := range all {
		var ok bool
		switch f.Status {
		case "":
			ok = pol.Status != "archived"
		case "archived":
			ok = pol.Status == "archived"
		case "exhausted":
			ok = pol.Status == "active" && exhausted(pol)
		default:
			ok = pol.Status == f.Status && !exhausted(pol)
		}
		if ok && (f.Type == "" || pol.Type == f.Type) {
			match = append(match, pol)
		}
	}
	usageLimits.sort(match)
	lo, hi := pageBounds(len(match), f.PageSize, f.Page, f.Paged)
	return match[lo:hi], len(match), nil
}

// GetUsageLimit returns the caller's workspace's usage-limit policy id (a canonical UUID), whatever its status.
func (p *Plane) GetUsageLimit(_ context.Context, caller Caller, id string) (*storage.UsageLimitPolicy, error) {
	return usageLimits.find(p, caller.WorkspaceID, id)
}

// CreateUsageLimit makes a usage-limit policy in the caller's workspace from a policy object's fields, with their
// id or a new one.
func (p *Plane) CreateUsageLimit(_ context.Context, caller Caller, fields map[string]json.RawMessage) (*storage.UsageLimitPolicy, error) {
	return usageLimits.create(p, caller, fields)
}

// UpdateUsageLimit changes the caller's workspace's usage-limit policy id: the fields given replace the stored
// ones ({"status": "archived"} archives it), a null resets a field to its default (periodic_reset null: never
// resets), and the result is checked whole. An update that keeps type, periodic_reset and group_by keeps the
// spend; a new credit_limit or alert_threshold applies to it on the workspace's next request.
func (p *Plane) UpdateUsageLimit(_ context.Context, caller Caller, id string, fields map[string]json.RawMessage) (*storage.UsageLimitPolicy, error) {
	return usageLimits.update(p, caller, id, fields)
}

// DeleteUsageLimit deletes the caller's workspace's usage-limit policy id, which stops applying on the
// workspace's next request (its saved spend goes too), and returns the id it was stored under.
func (p *Plane) DeleteUsageLimit(_ context.Context, caller Caller, id string) (string, error) {
	return usageLimits.delete(p, caller, id)
}

// UpsertUsageLimit writes a bootstrap file's usage-limit policy (its id required) into the caller's workspace,
// checked with the rules of a body. Writing the same policy again changes nothing.
func (p *Plane) UpsertUsageLimit(_ context.Context, caller Caller, pol *storage.UsageLimitPolicy) (changed bool, err error) {
	return usageLimits.upsert(p, caller, pol)
}

// usageLimits are the usage-limit policies, managed by the operations of rate-limit policies (policyKind).
var usageLimits = &policyKind[storage.UsageLimitPolicy]{
	noun:     "usage-limit policy",
	store:    func(s *storage.Store) policyStore[storage.UsageLimitPolicy] { return s.UsageLimits },
	parse:    ratelimit.ParseUsageLimit,
	readOnly: readOnlyUsageLimitFields,
	fields: func(pol *storage.UsageLimitPolicy) map[string]any {
		return map[string]any{"id": pol.ID, "name": pol.Name, "type": pol.Type, "credit_limit": pol.CreditLimit,
			"alert_threshold": pol.AlertThreshold, "periodic_reset": pol.PeriodicReset, "conditions": pol.Conditions,
			"group_by": pol.GroupBy, "status": pol.Status}
	},
	record: func(id string, ws *storage.Workspace, pol *storage.UsageLimitPolicy) *storage.UsageLimitPolicy {
		return &storage.UsageLimitPolicy{ID: id, WorkspaceID: ws.ID, OrganisationID: ws.OrganisationID, Name: pol.Name,
			Type: pol.Type, CreditLimit: pol.CreditLimit, AlertThreshold: pol.AlertThreshold, PeriodicReset: pol.PeriodicReset,
			Conditions: pol.Conditions, GroupBy: pol.GroupBy, Status: pol.Status}
	},
	id:      func(pol *storage.UsageLimitPolicy) string { return pol.ID },
	status:  func(pol *storage.UsageLimitPolicy) string { return pol.Status },
	created: func(pol *storage.UsageLimitPolicy) time.Time { return pol.CreatedAt },
}
