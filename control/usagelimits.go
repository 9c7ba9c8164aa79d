package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/jsoncheck"
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

// readOnlyUsageLimitFields are fields of the view that the gateway fills; a body's values for them are ignored.
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
	slices.SortFunc(match, func(a, b *storage.UsageLimitPolicy) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	lo, hi := pageBounds(len(match), f.PageSize, f.Page, f.Paged)
	return match[lo:hi], len(match), nil
}

// GetUsageLimit returns the caller's workspace's usage-limit policy id (a canonical UUID), whatever its status.
func (p *Plane) GetUsageLimit(_ context.Context, caller Caller, id string) (*storage.UsageLimitPolicy, error) {
	return p.findUsageLimit(caller.WorkspaceID, id)
}

// CreateUsageLimit makes a usage-limit policy in the caller's workspace from a policy object's fields, with their
// id or a new one.
func (p *Plane) CreateUsageLimit(_ context.Context, caller Caller, fields map[string]json.RawMessage) (*storage.UsageLimitPolicy, error) {
	if err := checkUsageLimitFields(caller, fields); err != nil {
		return nil, err
	}
	clean, _ := json.Marshal(fields)
	pol, err := parseUsageLimitBody(clean)
	if err != nil {
		return nil, err
	}
	id := storage.NewUUID()
	if pol.ID != "" {
		id = uuid.MustParse(pol.ID).String()
	}
	ws, err := p.store.Workspaces.Get(caller.WorkspaceID)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	p.policyWrites.Lock()
	defer p.policyWrites.Unlock()
	if pol.ID != "" {
		if err := p.checkUsageLimitIDFree(pol.ID, id); err != nil {
			return nil, err
		}
	}
	rec := usageLimitRecord(id, ws, pol)
	if _, err := p.store.UsageLimits.Put(ws.ID, id, rec); err != nil {
		return nil, gwerr.Internal(err)
	}
	p.log.Info("usage-limit policy created", "trace_id", caller.TraceID, "policy_id", id, "workspace_id", ws.ID, "by", caller.KeyID)
	return rec, nil
}

// UpdateUsageLimit changes the caller's workspace's usage-limit policy id: the fields given replace the stored
// ones ({"status": "archived"} archives it), a null resets a field to its default (periodic_reset null: never
// resets), and the result is checked whole. An update that keeps type, periodic_reset and group_by keeps the
// spend; a new credit_limit or alert_threshold applies to it on the workspace's next request.
func (p *Plane) UpdateUsageLimit(_ context.Context, caller Caller, id string, fields map[string]json.RawMessage) (*storage.UsageLimitPolicy, error) {
	if err := checkUsageLimitFields(caller, fields); err != nil {
		return nil, err
	}
	if raw, ok := fields["id"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		var given string
		if json.Unmarshal(raw, &given) != nil {
			return nil, gwerr.BadRequest("id", "id must be a string, not %s", config.Kind(raw))
		}
		if u, err := uuid.Parse(given); err != nil || u.String() != id {
			return nil, gwerr.BadRequest("id", "id %q in the body is not the policy's id %q in the path", given, id)
		}
	}
	delete(fields, "id")
	ws, err := p.store.Workspaces.Get(caller.WorkspaceID)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	p.policyWrites.Lock()
	defer p.policyWrites.Unlock()
	old, err := p.findUsageLimit(ws.ID, id)
	if err != nil {
		return nil, err
	}
	merged := map[string]any{"id": old.ID, "name": old.Name, "type": old.Type, "credit_limit": old.CreditLimit,
		"alert_threshold": old.AlertThreshold, "periodic_reset": old.PeriodicReset, "conditions": old.Conditions,
		"group_by": old.GroupBy, "status": old.Status}
	for name, raw := range fields {
		merged[name] = raw
	}
	body, err := json.Marshal(merged)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	pol, err := parseUsageLimitBody(body)
	if err != nil {
		return nil, err
	}
	rec := usageLimitRecord(old.ID, ws, pol)
	changed, err := p.store.UsageLimits.Put(ws.ID, old.ID, rec)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	if changed {
		p.log.Info("usage-limit policy updated", "trace_id", caller.TraceID, "policy_id", old.ID, "workspace_id", ws.ID,
			"status", rec.Status, "by", caller.KeyID)
	}
	return rec, nil
}

// DeleteUsageLimit deletes the caller's workspace's usage-limit policy id, which stops applying on the
// workspace's next request (its saved spend goes too), and returns the id it was stored under.
func (p *Plane) DeleteUsageLimit(_ context.Context, caller Caller, id string) (string, error) {
	p.policyWrites.Lock()
	defer p.policyWrites.Unlock()
	pol, err := p.findUsageLimit(caller.WorkspaceID, id)
	if err != nil {
		return "", err
	}
	err = p.store.UsageLimits.Delete(caller.WorkspaceID, pol.ID)
	if errors.Is(err, storage.ErrNotFound) {
		return "", gwerr.NotFound("usage-limit policy", id)
	}
	if err != nil {
		return "", gwerr.Internal(err)
	}
	p.log.Info("usage-limit policy deleted", "trace_id", caller.TraceID, "policy_id", pol.ID, "workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	return pol.ID, nil
}

// UpsertUsageLimit writes a bootstrap file's usage-limit policy (its id required) into the caller's workspace,
// checked with the rules of a body. Writing the same policy again changes nothing.
func (p *Plane) UpsertUsageLimit(_ context.Context, caller Caller, pol *storage.UsageLimitPolicy) (changed bool, err error) {
	body, err := json.Marshal(map[string]any{"id": pol.ID, "name": pol.Name, "type": pol.Type, "credit_limit": pol.CreditLimit,
		"alert_threshold": pol.AlertThreshold, "periodic_reset": pol.PeriodicReset, "conditions": pol.Conditions,
		"group_by": pol.GroupBy, "status": pol.Status})
	if err != nil {
		return false, gwerr.Internal(err)
	}
	checked, err := parseUsageLimitBody(body)
	if err != nil {
		return false, err
	}
	if checked.ID == "" {
		return false, gwerr.BadRequest("id", "id is required")
	}
	ws, err := p.store.Workspaces.Get(caller.WorkspaceID)
	if err != nil {
		return false, gwerr.Internal(err)
	}
	p.policyWrites.Lock()
	defer p.policyWrites.Unlock()
	changed, err = p.store.UsageLimits.Put(ws.ID, checked.ID, usageLimitRecord(checked.ID, ws, checked))
	if err != nil {
		return false, gwerr.Internal(err)
	}
	if changed {
		p.log.Info("usage-limit policy applied", "trace_id", caller.TraceID, "policy_id", checked.ID, "workspace_id", ws.ID,
			"by", caller.KeyID)
	}
	return changed, nil
}

// findUsageLimit returns the workspace's usage-limit policy with the canonical UUID id (or its upper-case form,
// as a bootstrap file may spell it), or a 404.
func (p *Plane) findUsageLimit(workspaceID, id string) (*storage.UsageLimitPolicy, error) {
	for _, form := range []string{id, strings.ToUpper(id)} {
		pol, err := p.store.UsageLimits.Get(workspaceID, form)
		if err == nil {
			return pol, nil
		}
		if !errors.Is(err, storage.ErrNotFound) {
			return nil, gwerr.Internal(err)
		}
	}
	return nil, gwerr.NotFound("usage-limit policy", id)
}

// checkUsageLimitIDFree answers 409 when a usage-limit policy of any workspace has the id. The caller holds
// policyWrites.
func (p *Plane) checkUsageLimitIDFree(given, id string) error {
	wss, err := p.store.Workspaces.List()
	if err != nil {
		return gwerr.Internal(err)
	}
	for _, ws := range wss {
		for _, form := range []string{id, given, strings.ToUpper(id)} {
			_, err := p.store.UsageLimits.Get(ws.ID, form)
			if err == nil {
				return &gwerr.Error{Status: http.StatusConflict, Code: gwerr.CodeConflict, Param: "id",
					Message: fmt.Sprintf("a usage-limit policy with id %q exists already: change it with PUT, or leave id out", given)}
			}
			if !errors.Is(err, storage.ErrNotFound) {
				return gwerr.Internal(err)
			}
		}
	}
	return nil
}

// checkUsageLimitFields is checkPolicyFields with the view's read-only usage fields dropped too.
func checkUsageLimitFields(caller Caller, fields map[string]json.RawMessage) error {
	if err := checkPolicyFields(caller, fields); err != nil {
		return err
	}
	for _, name := range readOnlyUsageLimitFields {
		delete(fields, name)
	}
	return nil
}

// parseUsageLimitBody validates a usage-limit policy object; the 400 names the first problem's field in param
// and every problem in its message.
func parseUsageLimitBody(body []byte) (*storage.UsageLimitPolicy, error) {
	pol, err := ratelimit.ParseUsageLimit(body)
	if err == nil {
		return pol, nil
	}
	var pe *jsoncheck.Error
	if errors.As(err, &pe) && len(pe.Problems) > 0 {
		return pol, gwerr.BadRequest(pe.Problems[0].Path, "invalid usage-limit policy: %s", pe.Error())
	}
	return pol, gwerr.BadRequest("", "invalid usage-limit policy: %v", err)
}

func usageLimitRecord(id string, ws *storage.Workspace, pol *storage.UsageLimitPolicy) *storage.UsageLimitPolicy {
	return &storage.UsageLimitPolicy{ID: id, WorkspaceID: ws.ID, OrganisationID: ws.OrganisationID, Name: pol.Name,
		Type: pol.Type, CreditLimit: pol.CreditLimit, AlertThreshold: pol.AlertThreshold, PeriodicReset: pol.PeriodicReset,
		Conditions: pol.Conditions, GroupBy: pol.GroupBy, Status: pol.Status}
}
