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
	"time"

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
	rateLimits.sort(match)
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

// sort orders policies by creation time, then id: a stable order for pages, oldest first, which a new policy
// does not shuffle.
func (k *policyKind[T]) sort(list []*T) {
	slices.SortFunc(list, func(a, b *T) int {
		if c := k.created(a).Compare(k.created(b)); c != 0 {
			return c
		}
		return strings.Compare(k.id(a), k.id(b))
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
	pol, err := rateLimits.find(p, caller.WorkspaceID, id)
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
	return rateLimits.create(p, caller, fields)
}

// UpdatePolicy changes the caller's workspace's policy id (a canonical UUID): the fields given replace the
// stored ones ({"status": "archived"} archives the policy), a null resets a field to its default, and the
// result is checked as a whole as a new policy would be.
func (p *Plane) UpdatePolicy(_ context.Context, caller Caller, id string, fields map[string]json.RawMessage) (*storage.RateLimitPolicy, error) {
	return rateLimits.update(p, caller, id, fields)
}

// DeletePolicy deletes the caller's workspace's policy id (a canonical UUID), which stops applying at once, and
// returns the id it was stored under. Archiving (an update to status archived) keeps it for the record instead.
func (p *Plane) DeletePolicy(_ context.Context, caller Caller, id string) (string, error) {
	return rateLimits.delete(p, caller, id)
}

// policyKind is what the operations that rate-limit and usage-limit policies share need to know of one kind of
// policy (T is its stored record): its store, its noun, and how a body is checked and stored. The operations are
// written once, as its methods, so that both kinds follow the same rules (this file's decisions above).
type policyKind[T any] struct {
	noun  string // in messages and the log: "rate-limit policy"
	store func(*storage.Store) policyStore[T]
	// parse checks a policy object with the rules of its owner (ratelimit.ParsePolicy).
	parse func(body []byte) (*T, error)
	// readOnly are fields of the view that the gateway fills; a body's values for them are ignored.
	readOnly []string
	// fields are a record's fields as a body gives them: what an update merges into, what an upsert checks.
	fields func(*T) map[string]any
	// record is the stored form of a validated policy in workspace ws.
	record func(id string, ws *storage.Workspace, checked *T) *T

	id, status func(*T) string
	created    func(*T) time.Time
}

// policyStore is a store of one kind of policy: storage's Policies or UsageLimits.
type policyStore[T any] interface {
	Get(workspaceID, id string) (*T, error)
	List(workspaceID string) ([]*T, error)
	Put(workspaceID, id string, v *T) (changed bool, err error)
	Delete(workspaceID, id string) error
}

// rateLimits are the rate-limit policies (SPEC.md's policy_rate_limits).
var rateLimits = &policyKind[storage.RateLimitPolicy]{
	noun:     "rate-limit policy",
	store:    func(s *storage.Store) policyStore[storage.RateLimitPolicy] { return s.Policies },
	parse:    ratelimit.ParsePolicy,
	readOnly: readOnlyPolicyFields,
	fields: func(pol *storage.RateLimitPolicy) map[string]any {
		return map[string]any{"id": pol.ID, "type": pol.Type, "unit": pol.Unit, "value": pol.Value, "status": pol.Status,
			"name": pol.Name, "conditions": pol.Conditions, "group_by": pol.GroupBy}
	},
	record: func(id string, ws *storage.Workspace, pol *storage.RateLimitPolicy) *storage.RateLimitPolicy {
		return &storage.RateLimitPolicy{ID: id, WorkspaceID: ws.ID, OrganisationID: ws.OrganisationID, Type: pol.Type,
			Unit: pol.Unit, Value: pol.Value, Status: pol.Status, Name: pol.Name, Conditions: pol.Conditions, GroupBy: pol.GroupBy}
	},
	id:      func(pol *storage.RateLimitPolicy) string { return pol.ID },
	status:  func(pol *storage.RateLimitPolicy) string { return pol.Status },
	created: func(pol *storage.RateLimitPolicy) time.Time { return pol.CreatedAt },
}

// create makes a policy in the caller's workspace from a policy object's fields, with their id or a new one.
func (k *policyKind[T]) create(p *Plane, caller Caller, fields map[string]json.RawMessage) (*T, error) {
	if err := k.checkFields(caller, fields); err != nil {
		return nil, err
	}
	clean, _ := json.Marshal(fields)
	pol, err := k.parseBody(clean)
	if err != nil {
		return nil, err
	}
	given := k.id(pol)
	id := storage.NewUUID()
	if given != "" {
		id = uuid.MustParse(given).String() // checked by the parser; stored in the canonical lower-case form
	}
	ws, err := p.store.Workspaces.Get(caller.WorkspaceID)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	p.policyWrites.Lock()
	defer p.policyWrites.Unlock()
	if given != "" { // a new random UUID cannot collide; a chosen one can
		if err := k.checkIDFree(p, given, id); err != nil {
			return nil, err
		}
	}
	rec := k.record(id, ws, pol)
	if _, err := k.store(p.store).Put(ws.ID, id, rec); err != nil {
		return nil, gwerr.Internal(err)
	}
	p.log.Info(k.noun+" created", "trace_id", caller.TraceID, "policy_id", id, "workspace_id", ws.ID, "by", caller.KeyID)
	return rec, nil
}

// update changes the caller's workspace's policy id (a canonical UUID): the fields given replace the stored
// ones, a null resets a field to its default, and the result is checked as a whole as a new policy would be.
func (k *policyKind[T]) update(p *Plane, caller Caller, id string, fields map[string]json.RawMessage) (*T, error) {
	if err := k.checkFields(caller, fields); err != nil {
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
	old, err := k.find(p, ws.ID, id)
	if err != nil {
		return nil, err
	}
	merged := k.fields(old)
	for name, raw := range fields {
		merged[name] = raw
	}
	body, err := json.Marshal(merged)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	pol, err := k.parseBody(body)
	if err != nil {
		return nil, err
	}
	// The organisation is the workspace's now: a workspace moved to another organisation takes its policies along.
	oldID := k.id(old)
	rec := k.record(oldID, ws, pol)
	changed, err := k.store(p.store).Put(ws.ID, oldID, rec)
	if err != nil {
		return nil, gwerr.Internal(err)
	}
	if changed {
		p.log.Info(k.noun+" updated", "trace_id", caller.TraceID, "policy_id", oldID, "workspace_id", ws.ID,
			"status", k.status(rec), "by", caller.KeyID)
	}
	return rec, nil
}

// delete deletes the caller's workspace's policy id (a canonical UUID) and returns the id it was stored under.
func (k *policyKind[T]) delete(p *Plane, caller Caller, id string) (string, error) {
	p.policyWrites.Lock()
	defer p.policyWrites.Unlock()
	pol, err := k.find(p, caller.WorkspaceID, id)
	if err != nil {
		return "", err
	}
	stored := k.id(pol)
	err = k.store(p.store).Delete(caller.WorkspaceID, stored)
	if errors.Is(err, storage.ErrNotFound) {
		return "", gwerr.NotFound(k.noun, id)
	}
	if err != nil {
		return "", gwerr.Internal(err)
	}
	p.log.Info(k.noun+" deleted", "trace_id", caller.TraceID, "policy_id", stored, "workspace_id", caller.WorkspaceID, "by", caller.KeyID)
	return stored, nil
}

// find returns the workspace's policy with the canonical UUID id, or a 404. A bootstrap file may have stored an
// id in upper case: that form is tried too.
func (k *policyKind[T]) find(p *Plane, workspaceID, id string) (*T, error) {
	for _, form := range []string{id, strings.ToUpper(id)} {
		pol, err := k.store(p.store).Get(workspaceID, form)
		if err == nil {
			return pol, nil
		}
		if !errors.Is(err, storage.ErrNotFound) {
			return nil, gwerr.Internal(err)
		}
	}
	return nil, gwerr.NotFound(k.noun, id)
}

// checkIDFree answers 409 when a policy of any workspace has the id (given is the body's spelling, id the
// canonical one). The caller holds policyWrites.
func (k *policyKind[T]) checkIDFree(p *Plane, given, id string) error {
	wss, err := p.store.Workspaces.List()
	if err != nil {
		return gwerr.Internal(err)
	}
	for _, ws := range wss {
		for _, form := range []string{id, given, strings.ToUpper(id)} {
			_, err := k.store(p.store).Get(ws.ID, form)
			if err == nil {
				return &gwerr.Error{Status: http.StatusConflict, Code: gwerr.CodeConflict, Param: "id",
					Message: fmt.Sprintf("a %s with id %q exists already: change it with PUT, or leave id out", k.noun, given)}
			}
			if !errors.Is(err, storage.ErrNotFound) {
				return gwerr.Internal(err)
			}
		}
	}
	return nil
}

// checkFields refuses the fields that would place a policy in another workspace and drops the read-only ones of
// the view. The policy's own fields are checked by parseBody.
func (k *policyKind[T]) checkFields(caller Caller, fields map[string]json.RawMessage) error {
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
	for _, name := range k.readOnly {
		delete(fields, name)
	}
	return nil
}

// parseBody validates a policy object with its owner's rules. The 400 names the first problem's field in param
// and every problem in its message.
func (k *policyKind[T]) parseBody(body []byte) (*T, error) {
	pol, err := k.parse(body)
	if err == nil {
		return pol, nil
	}
	var pe *jsoncheck.Error
	if errors.As(err, &pe) && len(pe.Problems) > 0 {
		return pol, gwerr.BadRequest(pe.Problems[0].Path, "invalid %s: %s", k.noun, pe.Error())
	}
	return pol, gwerr.BadRequest("", "invalid %s: %v", k.noun, err)
}
