package routes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/llmgw/gateway/runtime/bootstrap"
	"github.com/llmgw/gateway/runtime/config"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/ratelimit"
	"github.com/llmgw/gateway/storage"
)

// Rate-limit policies (SPEC.md's policy_rate_limits) of the caller's workspace. Every key of the workspace reads
// them, as SPEC.md asks only for the gateway key; admin keys create, change and delete them. A body is checked
// by bootstrap.ParsePolicyObject, so a policy made over HTTP obeys the rules of one in a bootstrap file.
//
// Decisions SPEC.md leaves open:
//   - A policy belongs to the workspace of the key that makes it. Bodies carry no "workspace" (400 if sent, so
//     that nobody believes they made a policy elsewhere); a workspace_id other than the caller's is refused for
//     the same reason. The view's other read-only fields (object, organisation_id, created_at,
//     last_updated_at) are ignored, so that a policy read with GET can be sent back changed.
//   - The list's workspace_id filter takes the caller's workspace by ID or slug; any other value is a 404 that
//     reads the same whether the workspace exists or not (DESIGN.md: another workspace's ID is a 404), so that
//     the answer never tells a caller which workspaces exist.
//   - page_size absent: one page with every match (current_page 1 and up are then past the end, empty);
//     page_size 0: an empty page, with total still counted, for callers that only want the count.
//   - Lists are ordered by created_at, then id.
//   - Policy IDs are unique across workspaces, as in a bootstrap file: POST with an id that exists anywhere is 409.

const policyObject = "policy_rate_limits"

// readOnlyPolicyFields are fields of the view that the gateway fills; a body's values for them are ignored.
var readOnlyPolicyFields = []string{"object", "organisation_id", "created_at", "last_updated_at"}

// policyWrites serialises the writes of policies: the store's Put replaces whatever is there, so the check
// that an id is free (POST), the read-modify-write of PUT and DELETE must not interleave. One lock for the
// process is enough: policies change rarely, and reads do not take it.
var policyWrites sync.Mutex

// policyView is a policy as the endpoints show it, in SPEC.md's shape; list items have the same shape.
type policyView struct {
	ID             string                `json:"id"`
	Object         string                `json:"object"`
	Type           string                `json:"type"`
	Unit           string                `json:"unit"`
	Value          float64               `json:"value"`
	Status         string                `json:"status"`
	WorkspaceID    string                `json:"workspace_id"`
	OrganisationID string                `json:"organisation_id"`
	CreatedAt      string                `json:"created_at"`
	LastUpdatedAt  string                `json:"last_updated_at"`
	Name           *string               `json:"name"`
	Conditions     []storage.PolicyMatch `json:"conditions"`
	GroupBy        []storage.PolicyGroup `json:"group_by"`
}

func viewPolicy(p *storage.RateLimitPolicy) policyView {
	v := policyView{ID: p.ID, Object: policyObject, Type: p.Type, Unit: p.Unit, Value: p.Value, Status: p.Status,
		WorkspaceID: p.WorkspaceID, OrganisationID: p.OrganisationID, Name: p.Name,
		CreatedAt: p.CreatedAt.UTC().Format(time.RFC3339), LastUpdatedAt: p.UpdatedAt.UTC().Format(time.RFC3339),
		Conditions: p.Conditions, GroupBy: p.GroupBy}
	if v.Conditions == nil {
		v.Conditions = []storage.PolicyMatch{}
	}
	if v.GroupBy == nil {
		v.GroupBy = []storage.PolicyGroup{}
	}
	return v
}

// listPolicies answers GET /v1/policies/rate-limits: the workspace's policies that match every filter, one page
// of them, and how many match in all.
func (s *Server) listPolicies(c *fiber.Ctx) error {
	caller := callerKey(c)
	status, err := queryEnum(c, "status", ratelimit.Statuses, "active")
	if err != nil {
		return err
	}
	typ, err := queryEnum(c, "type", ratelimit.Types, "")
	if err != nil {
		return err
	}
	unit, err := queryEnum(c, "unit", ratelimit.Units, "")
	if err != nil {
		return err
	}
	size, sized, err := queryCount(c, "page_size")
	if err != nil {
		return err
	}
	current, _, err := queryCount(c, "current_page")
	if err != nil {
		return err
	}
	if ref := c.Query("workspace_id"); ref != "" {
		ws, err := s.store.Workspaces.Resolve(ref)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return gwerr.Internal(err)
		}
		// Another workspace's ID or slug answers exactly as an unknown one, so that nobody can learn which
		// workspaces exist by probing names.
		if ws == nil || ws.ID != caller.WorkspaceID {
			ge := gwerr.NotFound("workspace", ref)
			ge.Param = "workspace_id"
			return ge
		}
	}
	all, err := s.store.Policies.List(caller.WorkspaceID)
	if err != nil {
		return gwerr.Internal(err)
	}
	match := all[:0]
	for _, p := range all {
		if p.Status == status && (typ == "" || p.Type == typ) && (unit == "" || p.Unit == unit) {
			match = append(match, p)
		}
	}
	sortPolicies(match)
	lo, hi := pageBounds(len(match), size, current, sized)
	data := make([]policyView, 0, hi-lo)
	for _, p := range match[lo:hi] {
		data = append(data, viewPolicy(p))
	}
	return c.JSON(listAnswer[policyView]{Object: "list", Data: data, Total: len(match)})
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

// queryEnum reads an optional query parameter that takes one of allowed; absent or empty means def.
func queryEnum(c *fiber.Ctx, name string, allowed []string, def string) (string, error) {
	v := c.Query(name)
	if v == "" {
		return def, nil
	}
	if !slices.Contains(allowed, v) {
		return "", gwerr.BadRequest(name, "%s must be one of %s, not %q", name, strings.Join(allowed, ", "), v)
	}
	return strings.Clone(v), nil
}

// queryCount reads an optional query parameter that is an integer >= 0; given is false when it is absent or
// empty.
func queryCount(c *fiber.Ctx, name string) (n int, given bool, err error) {
	v := c.Query(name)
	if v == "" {
		return 0, false, nil
	}
	n, err = strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, false, gwerr.BadRequest(name, "%s must be an integer >= 0, not %q", name, v)
	}
	return n, true, nil
}

// getPolicy answers GET /v1/policies/rate-limits/:id. Only the caller's workspace is searched, so another
// workspace's policy is as unknown as a missing one; a policy whose status is not the one asked for
// (default active) is 404 too, as SPEC.md's status filter says.
func (s *Server) getPolicy(c *fiber.Ctx) error {
	caller := callerKey(c)
	id, err := policyIDParam(c)
	if err != nil {
		return err
	}
	status, err := queryEnum(c, "status", ratelimit.Statuses, "active")
	if err != nil {
		return err
	}
	p, err := s.findPolicy(caller.WorkspaceID, id)
	if err != nil {
		return err
	}
	if p.Status != status {
		return gwerr.Newf(fiber.StatusNotFound, gwerr.CodeNotFound,
			"rate-limit policy %q is not %s (it is %s: ask with status=%s)", id, status, p.Status, p.Status)
	}
	return c.JSON(viewPolicy(p))
}

// createPolicy answers POST /v1/policies/rate-limits with a policy object as the body: a new policy in the
// caller's workspace, with the body's id or a new one. Admin only.
func (s *Server) createPolicy(c *fiber.Ctx) error {
	caller, err := requireAdmin(c)
	if err != nil {
		return err
	}
	fields, err := decodePolicyBody(c)
	if err != nil {
		return err
	}
	clean, _ := json.Marshal(fields)
	pol, err := parsePolicyBody(clean)
	if err != nil {
		return err
	}
	id := storage.NewUUID()
	if pol.ID != "" {
		id = uuid.MustParse(pol.ID).String() // checked by the parser; stored in the canonical lower-case form
	}
	ws, err := s.store.Workspaces.Get(caller.WorkspaceID)
	if err != nil {
		return gwerr.Internal(err)
	}
	policyWrites.Lock()
	defer policyWrites.Unlock()
	if pol.ID != "" { // a new random UUID cannot collide; a chosen one can
		if err := s.checkPolicyIDFree(pol.ID, id); err != nil {
			return err
		}
	}
	rec := policyRecord(id, ws, pol)
	if _, err := s.store.Policies.Put(ws.ID, id, rec); err != nil {
		return gwerr.Internal(err)
	}
	s.log.Info("rate-limit policy created", "trace_id", ensureTraceID(c), "policy_id", id, "workspace_id", ws.ID, "by", caller.ID)
	return c.JSON(viewPolicy(rec))
}

// updatePolicy answers PUT /v1/policies/rate-limits/:id: the fields the body holds replace the stored ones
// ({"status": "archived"} archives the policy), a null resets a field to its default, and the result is checked
// as a whole as a new policy would be. Admin only.
func (s *Server) updatePolicy(c *fiber.Ctx) error {
	caller, err := requireAdmin(c)
	if err != nil {
		return err
	}
	id, err := policyIDParam(c)
	if err != nil {
		return err
	}
	fields, err := decodePolicyBody(c)
	if err != nil {
		return err
	}
	if raw, ok := fields["id"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		var given string
		if json.Unmarshal(raw, &given) != nil {
			return gwerr.BadRequest("id", "id must be a string, not %s", config.Kind(raw))
		}
		if u, err := uuid.Parse(given); err != nil || u.String() != id {
			return gwerr.BadRequest("id", "id %q in the body is not the policy's id %q in the path", given, id)
		}
	}
	delete(fields, "id") // the stored id stays, in the form it was stored
	ws, err := s.store.Workspaces.Get(caller.WorkspaceID)
	if err != nil {
		return gwerr.Internal(err)
	}
	policyWrites.Lock()
	defer policyWrites.Unlock()
	old, err := s.findPolicy(ws.ID, id)
	if err != nil {
		return err
	}
	merged := map[string]any{"id": old.ID, "type": old.Type, "unit": old.Unit, "value": old.Value, "status": old.Status,
		"name": old.Name, "conditions": old.Conditions, "group_by": old.GroupBy}
	for name, raw := range fields {
		merged[name] = raw
	}
	body, err := json.Marshal(merged)
	if err != nil {
		return gwerr.Internal(err)
	}
	pol, err := parsePolicyBody(body)
	if err != nil {
		return err
	}
	// The organisation is the workspace's now: a workspace moved to another organisation takes its policies along.
	rec := policyRecord(old.ID, ws, pol)
	changed, err := s.store.Policies.Put(ws.ID, old.ID, rec)
	if err != nil {
		return gwerr.Internal(err)
	}
	if changed {
		s.log.Info("rate-limit policy updated", "trace_id", ensureTraceID(c), "policy_id", old.ID, "workspace_id", ws.ID,
			"status", rec.Status, "by", caller.ID)
	}
	return c.JSON(viewPolicy(rec))
}

// deletePolicy answers DELETE /v1/policies/rate-limits/:id: the policy stops applying at once. Admin only.
// Archiving (PUT {"status": "archived"}) keeps it for the record instead.
func (s *Server) deletePolicy(c *fiber.Ctx) error {
	caller, err := requireAdmin(c)
	if err != nil {
		return err
	}
	id, err := policyIDParam(c)
	if err != nil {
		return err
	}
	policyWrites.Lock()
	defer policyWrites.Unlock()
	p, err := s.findPolicy(caller.WorkspaceID, id)
	if err != nil {
		return err
	}
	err = s.store.Policies.Delete(caller.WorkspaceID, p.ID)
	if errors.Is(err, storage.ErrNotFound) {
		return gwerr.NotFound("rate-limit policy", id)
	}
	if err != nil {
		return gwerr.Internal(err)
	}
	s.log.Info("rate-limit policy deleted", "trace_id", ensureTraceID(c), "policy_id", p.ID, "workspace_id", caller.WorkspaceID, "by", caller.ID)
	return c.JSON(fiber.Map{"id": p.ID, "object": policyObject, "deleted": true})
}

// policyIDParam reads the path's policy id (SPEC.md's rateLimitsPolicyId), a UUID, in its canonical
// lower-case form.
func policyIDParam(c *fiber.Ctx) (string, error) {
	raw := c.Params("id")
	u, err := uuid.Parse(raw)
	if err != nil {
		return "", gwerr.BadRequest("rateLimitsPolicyId", "rateLimitsPolicyId must be a UUID, not %q", raw)
	}
	return u.String(), nil
}

// findPolicy returns the workspace's policy with the canonical UUID id, or a 404. A bootstrap file may have
// stored an id in upper case: that form is tried too.
func (s *Server) findPolicy(workspaceID, id string) (*storage.RateLimitPolicy, error) {
	for _, form := range []string{id, strings.ToUpper(id)} {
		p, err := s.store.Policies.Get(workspaceID, form)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, storage.ErrNotFound) {
			return nil, gwerr.Internal(err)
		}
	}
	return nil, gwerr.NotFound("rate-limit policy", id)
}

// checkPolicyIDFree answers 409 when a policy of any workspace has the id (given is the body's spelling, id the
// canonical one). The caller holds policyWrites.
func (s *Server) checkPolicyIDFree(given, id string) error {
	wss, err := s.store.Workspaces.List()
	if err != nil {
		return gwerr.Internal(err)
	}
	for _, ws := range wss {
		for _, form := range []string{id, given, strings.ToUpper(id)} {
			_, err := s.store.Policies.Get(ws.ID, form)
			if err == nil {
				return &gwerr.Error{Status: fiber.StatusConflict, Code: gwerr.CodeConflict, Param: "id",
					Message: fmt.Sprintf("a rate-limit policy with id %q exists already: change it with PUT, or leave id out", given)}
			}
			if !errors.Is(err, storage.ErrNotFound) {
				return gwerr.Internal(err)
			}
		}
	}
	return nil
}

// decodePolicyBody checks that the body is a JSON object without the fields the gateway sets, and returns its
// fields. The policy's own fields are checked by parsePolicyBody.
func decodePolicyBody(c *fiber.Ctx) (map[string]json.RawMessage, error) {
	if err := requireJSON(c); err != nil {
		return nil, err
	}
	body := c.Body()
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, &gwerr.Error{Status: fiber.StatusBadRequest, Code: gwerr.CodeInvalidJSON, Message: "request body is empty: send a JSON object"}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, jsonError(body, err)
	}
	if fields == nil {
		return nil, &gwerr.Error{Status: fiber.StatusBadRequest, Code: gwerr.CodeInvalidJSON, Message: "request body must be a rate-limit policy object, not null"}
	}
	if _, ok := fields["workspace"]; ok {
		return nil, gwerr.BadRequest("workspace", "workspace is not a field of a policy: a policy belongs to the workspace of the API key that makes it")
	}
	if raw, ok := fields["workspace_id"]; ok {
		var ws string
		if json.Unmarshal(raw, &ws) != nil || ws != callerKey(c).WorkspaceID {
			return nil, gwerr.BadRequest("workspace_id", "workspace_id must be the caller's workspace (%s): a policy belongs to the workspace of the API key that makes it", callerKey(c).WorkspaceID)
		}
		delete(fields, "workspace_id")
	}
	for _, name := range readOnlyPolicyFields {
		delete(fields, name)
	}
	return fields, nil
}

// parsePolicyBody validates a policy object with bootstrap's rules. The 400 names the first problem's field
// in param and every problem in its message.
func parsePolicyBody(body []byte) (bootstrap.Policy, error) {
	pol, err := bootstrap.ParsePolicyObject(body)
	if err == nil {
		return pol, nil
	}
	var pe *bootstrap.PolicyError
	if errors.As(err, &pe) && len(pe.Problems) > 0 {
		return pol, gwerr.BadRequest(pe.Problems[0].Path, "invalid rate-limit policy: %s", pe.Error())
	}
	return pol, gwerr.BadRequest("", "invalid rate-limit policy: %v", err)
}

// policyRecord is the stored form of a validated policy in workspace ws.
func policyRecord(id string, ws *storage.Workspace, pol bootstrap.Policy) *storage.RateLimitPolicy {
	return &storage.RateLimitPolicy{ID: id, WorkspaceID: ws.ID, OrganisationID: ws.OrganisationID, Type: pol.Type,
		Unit: pol.Unit, Value: pol.Value, Status: pol.Status, Name: pol.Name, Conditions: pol.Conditions, GroupBy: pol.GroupBy}
}
