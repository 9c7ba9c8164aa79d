package routes

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/runtime/gwerr"
	"github.com/llmgw/gateway/runtime/ratelimit"
	"github.com/llmgw/gateway/runtime/schema"
	"github.com/llmgw/gateway/storage"
)

// Rate-limit policies (SPEC.md's policy_rate_limits) of the caller's workspace. Every key of the workspace reads
// them, as SPEC.md asks only for the gateway key; admin keys create, change and delete them. The operations,
// their validation and the decisions SPEC.md leaves open are control.Plane's (control/policies.go); here the
// query, path and body are decoded and the answers shaped.
//
// page_size absent lists every match in one page; current_page starts at 0.

const policyObject = "policy_rate_limits"

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
	var f control.PolicyFilter
	var err error
	if f.Status, err = queryEnum(c, "status", ratelimit.Statuses); err != nil {
		return err
	}
	if f.Type, err = queryEnum(c, "type", ratelimit.Types); err != nil {
		return err
	}
	if f.Unit, err = queryEnum(c, "unit", ratelimit.Units); err != nil {
		return err
	}
	if f.PageSize, f.Paged, err = queryCount(c, "page_size"); err != nil {
		return err
	}
	if f.Page, _, err = queryCount(c, "current_page"); err != nil {
		return err
	}
	f.Workspace = strings.Clone(c.Query("workspace_id"))
	page, total, err := s.plane.ListPolicies(c.UserContext(), callerOf(c), f)
	if err != nil {
		return err
	}
	data := make([]policyView, 0, len(page))
	for _, p := range page {
		data = append(data, viewPolicy(p))
	}
	return c.JSON(listAnswer[policyView]{Object: "list", Data: data, Total: total})
}

// queryEnum reads an optional query parameter that takes one of allowed; absent or empty is "".
func queryEnum(c *fiber.Ctx, name string, allowed []string) (string, error) {
	v := c.Query(name)
	if v == "" {
		return "", nil
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

// getPolicy answers GET /v1/policies/rate-limits/:id. Only the caller's workspace is searched; a policy whose
// status is not the one asked for (default active) is 404.
func (s *Server) getPolicy(c *fiber.Ctx) error {
	id, err := policyIDParam(c)
	if err != nil {
		return err
	}
	status, err := queryEnum(c, "status", ratelimit.Statuses)
	if err != nil {
		return err
	}
	p, err := s.plane.GetPolicy(c.UserContext(), callerOf(c), id, status)
	if err != nil {
		return err
	}
	return c.JSON(viewPolicy(p))
}

// createPolicy answers POST /v1/policies/rate-limits with a policy object as the body: a new policy in the
// caller's workspace, with the body's id or a new one. Admin only.
func (s *Server) createPolicy(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	fields, err := decodePolicyBody(c)
	if err != nil {
		return err
	}
	p, err := s.plane.CreatePolicy(c.UserContext(), caller, fields)
	if err != nil {
		return err
	}
	return c.JSON(viewPolicy(p))
}

// updatePolicy answers PUT /v1/policies/rate-limits/:id: the fields the body holds replace the stored ones
// ({"status": "archived"} archives the policy), a null resets a field to its default. Admin only.
func (s *Server) updatePolicy(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
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
	p, err := s.plane.UpdatePolicy(c.UserContext(), caller, id, fields)
	if err != nil {
		return err
	}
	return c.JSON(viewPolicy(p))
}

// deletePolicy answers DELETE /v1/policies/rate-limits/:id: the policy stops applying at once. Admin only.
// Archiving (PUT {"status": "archived"}) keeps it for the record instead.
func (s *Server) deletePolicy(c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	id, err := policyIDParam(c)
	if err != nil {
		return err
	}
	stored, err := s.plane.DeletePolicy(c.UserContext(), caller, id)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": stored, "object": policyObject, "deleted": true})
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

// decodePolicyBody checks that the body is a JSON object and returns its fields, which the control plane checks.
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
		return nil, schema.DecodeError(body, "", err)
	}
	if fields == nil {
		return nil, &gwerr.Error{Status: fiber.StatusBadRequest, Code: gwerr.CodeInvalidJSON, Message: "request body must be a rate-limit policy object, not null"}
	}
	return fields, nil
}
