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

// Rate-limit policies (SPEC.md's policy_rate_limits) of the caller's workspace. A body is checked by
// ratelimit.ParsePolicy, whose rules the bootstrap file's entries follow too, so a policy made over HTTP obeys
// the rules of one in a bootstrap file.
//
// Decisions SPEC.md leaves open:
//   - A policy belongs to the workspace of the key that makes it. Bodies carry no "workspace" (400 if sent, so
//     that nobody believes they made a policy elsewhere); a workspace_id other than the caller's is refused for
//     the same reason. The view's other read-only fields (object, organisation_id, created_at,
//     last_updated_at) are ignored, so that a policy read with GET can be sent back changed.
//   - The list's workspace_id filter takes the caller's workspace by ID or slug; any other value is a 404 that
//     reads the same whether the workspace exists or not (DESIGN.md: another workspace's ID is a 404), so that
//     the answer never tells a caller which workspaces exist.
//   - Without a page size, one page with every match (pages 1 and up are then past the end, empty); page size
//     0: an empty page, with the total still counted, for callers that only want the count.
//   - Lists are ordered by created_at, then id.
//   - Policy IDs are unique across workspaces, as in a bootstrap file: creating one with an id that exists
//     anywhere is 409.
//   - A status filter that is empty means "active".

// readOnlyPolicyFields are fields of the view that the gateway fills; a body's values for them are ignored.
var readOnlyPolicyFields = []string{"object", "organisation_id", "created_at", "last_updated_at"}

// PolicyFilter selects the policies of a list, and the page. Values are checked by the caller (they come from
// fixed sets: ratelimit.Statuses, Types, Units).
type PolicyFilter struct {
	Status string // "" means active
	Type   string // "": any
	Unit   string // "": any
	// Workspace is the workspace_id filter: "" or the caller's workspace by ID or slug.
	Workspace string
	// PageSize is the size of a page when Paged; Page counts from 0.
	PageSize int
	Paged    bool
	Page     int
}

// ListPolicies returns the page of the caller's workspace's policies that match every filter, and how many
// match in all.
func (p *Plane) ListPolicies(_ context.Context, caller Caller, f PolicyFilter) (page []*storage.RateLimitPolicy, total int, err error) {
	if err := p.checkWorkspaceFilter(caller, f.Workspace); err != nil {
		return nil, 0, err
	}
	status := orActive(f.Status)
	all, err := p.store.Policies.List(caller.WorkspaceID)
	if err != nil {
		return nil, 0, gwerr.Internal(err)
	}
	match := all[:0]
	for _, pol := range all {
		if pol.Status == status && (f.Type == "" || pol.Type == f.Type) && (f.Unit == "" || pol.Unit == f.Unit) {
			match = append(match, pol)
		}
	}
	sortPolicies(match)
	lo, hi := pageBounds(len(match), f.PageSize, f.Page, f.Paged)
	return match[lo:hi], len(match), nil
}

// checkWorkspaceFilter accepts a list's workspace_id filter when it is empty or names the caller's workspace
// (by ID or slug).
func (p *Plane) checkWorkspaceFilter(caller Caller, filter string) error {
	if filter == "" {
		return nil
	}
	ws, err := p.store.Workspaces.Resolve(filter)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return gwerr.Internal(err)
	}
	// Another workspace's ID or slug answers exactly as an unknown one, so that nobody can learn which
	// workspaces exist by probing names.
	if ws == nil || ws.ID != caller.WorkspaceID {
		ge := gwerr.NotFound("workspace", filter)
		ge.Param = "workspace_id"
		return ge
	}
	return nil
}

func orActive(status string) string {
	if status == "" {
		return "active"
	}
	return status
}

// sortPolicies orders policies by creation time, then id: a stable order for pages, oldest first, which a new
// policy does not shuffle.
func sortPolicies(list []*storage.RateLimitPolicy) {
	slices.SortFunc(list, func(a, b *storage.RateLimitPolicy) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// pageBounds returns the slice [lo, hi) of n items that page current (from 0) of size holds. Without a size
// the one page 0 holds everything. Written so that huge sizes and pages cannot overflow.
func pageBounds(n, size, current int, sized bool) (lo, hi int) {
	if !sized {
		if current == 0 {
			return 0, n
		}
		return n, n
	}
	if n == 0 || size == 0 || current > (n-1)/size {
		return n, n
	}
	lo = current * size
	return lo, lo + min(size, n-lo)
}

// GetPolicy returns the caller's workspace's policy id (a canonical UUID). Another workspace's policy is as
// unknown as a missing one; a policy whose status is not status ("" means active) is 404 too, as SPEC.md's
// status filter says.
func (p *Plane) GetPolicy(_ context.Context, caller Caller, id, status string) (*storage.RateLimitPolicy, error) {
	pol, err := p.findPolicy(caller.WorkspaceID, id)
	if err != nil {
		return nil, err
	}
	if status = orActive(status); pol.Status != status {
		return nil, gwerr.Newf(http.StatusNotFound, gwerr.CodeNotFound,
			"rate-limit policy %q is not %s (it is %s: ask with status=%s)", id, status, pol.Status, pol.Status)
	}
	return pol, nil
}

// CreatePolicy makes a policy in the caller's workspace from a policy object's fields, with their id or a new
// one.
func (p *Plane) CreatePolicy(_ context.Context, caller Caller, fields map[string]json.RawMessage) (*storage.RateLimitPolicy, error) {
	if err := checkPolicyFields(caller, fields); err != nil {
		return nil, err
	}
	clean, _ := json.Marshal(fields)
	pol, err := parsePolicyBody(clean)
	if err != nil {
		return nil, err
	}
	id := storage.NewUUID()
	if pol.ID != "" {
		id = uuid.MustParse(pol.ID).String() // checked by the parser; stored in the canonical lower-case form
	}
	ws, err := p.store.Workspaces.Get(caller.WorkspaceID)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	p.policyWrites.Lock()
	defer p.policyWrites.Unlock()
	if pol.ID != "" { // a new random UUID cannot collide; a chosen one can
		if err := p.checkPolicyIDFree(pol.ID, id); err != nil {
			return nil, err
		}
	}
	rec := policyRecord(id, ws, pol)
	if _, err := p.store.Policies.Put(ws.ID, id, rec); err != nil {
		return nil, gwerr.Internal(err)
	}
	p.log.Info("rate-limit policy created", "trace_id", caller.TraceID, "policy_id", id, "workspace_id", ws.ID, "by", caller.KeyID)
	return rec, nil
}

// UpdatePolicy changes the caller's workspace's policy id (a canonical UUID): the fields given replace the
// stored ones ({"status": "archived"} archives the policy), a null resets a field to its default, and the
// result is checked as a whole as a new policy would be.
func (p *Plane) UpdatePolicy(_ context.Context, caller Caller, id string, fields map[string]json.RawMessage) (*storage.RateLimitPolicy, error) {
	if err := checkPolicyFields(caller, fields); err != nil {
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
	delete(fields, "id") // the stored id stays, in the form it was stored
	ws, err := p.store.Workspaces.Get(caller.WorkspaceID)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	p.policyWrites.Lock()
	defer p.policyWrites.Unlock()
	old, err := p.findPolicy(ws.ID, id)
	if err != nil {
		return nil, err
	}
	merged := map[string]any{"id": old.ID, "type": old.Type, "unit": old.Unit, "value": old.Value, "status": old.Status,
		"name": old.Name, "conditions": old.Conditions, "group_by": old.GroupBy}
	for name, raw := range fields {
		merged[name] = raw
	}
	body, err := json.Marshal(merged)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	pol, err := parsePolicyBody(body)
	if err != nil {
		return nil, err
	}
	// The organisation is the workspace's now: a workspace moved to another organisation takes its policies along.
	rec := policyRecord(old.ID, ws, pol)
	changed, err := p.store.Policies.Put(ws.ID, old.ID, rec)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	if changed {
		p.log.Info("rate-limit policy updated", "trace_id", caller.TraceID, "policy_id", old.ID, "workspace_id", ws.ID,
			"status", rec.Status, "by", caller.KeyID)
	}
	return rec, nil
}

// DeletePolicy deletes the caller's workspace's policy id (a canonical UUID), which stops applying at once, and
// returns the id it was stored under. Archiving (an update to status archived) keeps it for the record instead.
func (p *Plane) DeletePolicy(_ context.Context, caller Caller, id string) (string, error) {
	p.policyWrites.Lock()
	defer p.policyWrites.Unlock()
	pol, err := p.findPolicy(caller.WorkspaceID, id)
	if err != nil {
		return "", err
	}
	err = p.store.Policies.Delete(caller.WorkspaceID, pol.ID)
	if errors.Is(err, storage.ErrNotFound) {
		return "", gwerr.NotFound("rate-limit policy", id)
	}
	if err != nil {
		return "", gwerr.Internal(err)
	}
	p.log.Info("rate-limit policy deleted", "trace_id", caller.TraceID, "policy_id", pol.ID, "workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	return pol.ID, nil
}

// findPolicy returns the workspace's policy with the canonical UUID id, or a 404. A bootstrap file may have
// stored an id in upper case: that form is tried too.
func (p *Plane) findPolicy(workspaceID, id string) (*storage.RateLimitPolicy, error) {
	for _, form := range []string{id, strings.ToUpper(id)} {
		pol, err := p.store.Policies.Get(workspaceID, form)
		if err == nil {
			return pol, nil
		}
		if !errors.Is(err, storage.ErrNotFound) {
			return nil, gwerr.Internal(err)
		}
	}
	return nil, gwerr.NotFound("rate-limit policy", id)
}

// checkPolicyIDFree answers 409 when a policy of any workspace has the id (given is the body's spelling, id the
// canonical one). The caller holds policyWrites.
func (p *Plane) checkPolicyIDFree(given, id string) error {
	wss, err := p.store.Workspaces.List()
	if err != nil {
		return gwerr.Internal(err)
	}
	for _, ws := range wss {
		for _, form := range []string{id, given, strings.ToUpper(id)} {
			_, err := p.store.Policies.Get(ws.ID, form)
			if err == nil {
				return &gwerr.Error{Status: http.StatusConflict, Code: gwerr.CodeConflict, Param: "id",
					Message: fmt.Sprintf("a rate-limit policy with id %q exists already: change it with PUT, or leave id out", given)}
			}
			if !errors.Is(err, storage.ErrNotFound) {
				return gwerr.Internal(err)
			}
		}
	}
	return nil
}

// checkPolicyFields refuses the fields that would place a policy in another workspace and drops the read-only
// ones of the view. The policy's own fields are checked by parsePolicyBody.
func checkPolicyFields(caller Caller, fields map[string]json.RawMessage) error {
	if _, ok := fields["workspace"]; ok {
		return gwerr.BadRequest("workspace", "workspace is not a field of a policy: a policy belongs to the workspace of the API key that makes it")
	}
	if raw, ok := fields["workspace_id"]; ok {
		var ws string
		if json.Unmarshal(raw, &ws) != nil || ws != caller.WorkspaceID {
			return gwerr.BadRequest("workspace_id", "workspace_id must be the caller's workspace (%s): a policy belongs to the workspace of the API key that makes it", caller.WorkspaceID)
		}
		delete(fields, "workspace_id")
	}
	for _, name := range readOnlyPolicyFields {
		delete(fields, name)
	}
	return nil
}

// parsePolicyBody validates a policy object with ratelimit's rules. The 400 names the first problem's field
// in param and every problem in its message.
func parsePolicyBody(body []byte) (*storage.RateLimitPolicy, error) {
	pol, err := ratelimit.ParsePolicy(body)
	if err == nil {
		return pol, nil
	}
	var pe *jsoncheck.Error
	if errors.As(err, &pe) && len(pe.Problems) > 0 {
		return pol, gwerr.BadRequest(pe.Problems[0].Path, "invalid rate-limit policy: %s", pe.Error())
	}
	return pol, gwerr.BadRequest("", "invalid rate-limit policy: %v", err)
}

// policyRecord is the stored form of a validated policy in workspace ws.
func policyRecord(id string, ws *storage.Workspace, pol *storage.RateLimitPolicy) *storage.RateLimitPolicy {
	return &storage.RateLimitPolicy{ID: id, WorkspaceID: ws.ID, OrganisationID: ws.OrganisationID, Type: pol.Type,
		Unit: pol.Unit, Value: pol.Value, Status: pol.Status, Name: pol.Name, Conditions: pol.Conditions, GroupBy: pol.GroupBy}
}
