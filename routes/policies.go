package routes

import (
	"bytes"
	"context"
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
	if f.PageSize, f.Paged, f.Page, err = queryPage(c); err != nil {
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

// queryPage reads a list's page: page_size (paged is false when it is absent) and current_page (from 0).
func queryPage(c *fiber.Ctx) (size int, paged bool, page int, err error) {
	if size, paged, err = queryCount(c, "page_size"); err != nil {
		return 0, false, 0, err
	}
	if page, _, err = queryCount(c, "current_page"); err != nil {
		return 0, false, 0, err
	}
	return size, paged, page, nil
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
	id, err := rateLimitEndpoints.idOf(c)
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
func (s *Server) createPolicy(c *fiber.Ctx) error { return rateLimitEndpoints.create(s, c) }

// updatePolicy answers PUT /v1/policies/rate-limits/:id: the fields the body holds replace the stored ones
// ({"status": "archived"} archives the policy), a null resets a field to its default. Admin only.
func (s *Server) updatePolicy(c *fiber.Ctx) error { return rateLimitEndpoints.update(s, c) }

// deletePolicy answers DELETE /v1/policies/rate-limits/:id: the policy stops applying at once. Admin only.
// Archiving (PUT {"status": "archived"}) keeps it for the record instead.
func (s *Server) deletePolicy(c *fiber.Ctx) error { return rateLimitEndpoints.delete(s, c) }

// policyEndpoints are what the admin handlers that rate-limit and usage-limit policies share need to know of one
// kind (T is its record, V its view): its names in the HTTP contract, its view and its control plane operations.
type policyEndpoints[T, V any] struct {
	object  string // the object of the view and of a delete's answer: "policy_rate_limits"
	noun    string // what a body must be: "rate-limit policy"
	idParam string // the path's id as errors name it (SPEC.md's rateLimitsPolicyId)
	view    func(*Server, *T) V

	opCreate func(*control.Plane, context.Context, control.Caller, map[string]json.RawMessage) (*T, error)
	opUpdate func(*control.Plane, context.Context, control.Caller, string, map[string]json.RawMessage) (*T, error)
	opDelete func(*control.Plane, context.Context, control.Caller, string) (string, error)
}

var rateLimitEndpoints = &policyEndpoints[storage.RateLimitPolicy, policyView]{
	object: policyObject, noun: "rate-limit policy", idParam: "rateLimitsPolicyId",
	view:     func(_ *Server, p *storage.RateLimitPolicy) policyView { return viewPolicy(p) },
	opCreate: (*control.Plane).CreatePolicy, opUpdate: (*control.Plane).UpdatePolicy, opDelete: (*control.Plane).DeletePolicy,
}

// create makes a policy from the body in the caller's workspace, with the body's id or a new one. Admin only.
func (e *policyEndpoints[T, V]) create(s *Server, c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	fields, err := e.decodeBody(c)
	if err != nil {
		return err
	}
	p, err := e.opCreate(s.plane, c.UserContext(), caller, fields)
	if err != nil {
		return err
	}
	return c.JSON(e.view(s, p))
}

// update replaces the stored fields of the path's policy with the body's. Admin only.
func (e *policyEndpoints[T, V]) update(s *Server, c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	id, err := e.idOf(c)
	if err != nil {
		return err
	}
	fields, err := e.decodeBody(c)
	if err != nil {
		return err
	}
	p, err := e.opUpdate(s.plane, c.UserContext(), caller, id, fields)
	if err != nil {
		return err
	}
	return c.JSON(e.view(s, p))
}

// delete deletes the path's policy. Admin only.
func (e *policyEndpoints[T, V]) delete(s *Server, c *fiber.Ctx) error {
	caller, err := adminCaller(c)
	if err != nil {
		return err
	}
	id, err := e.idOf(c)
	if err != nil {
		return err
	}
	stored, err := e.opDelete(s.plane, c.UserContext(), caller, id)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"id": stored, "object": e.object, "deleted": true})
}

// idOf reads the path's policy id, a UUID, in its canonical lower-case form.
func (e *policyEndpoints[T, V]) idOf(c *fiber.Ctx) (string, error) {
	raw := c.Params("id")
	u, err := uuid.Parse(raw)
	if err != nil {
		return "", gwerr.BadRequest(e.idParam, "%s must be a UUID, not %q", e.idParam, raw)
	}
	return u.String(), nil
}

// decodeBody checks that the body is a JSON object and returns its fields, which the control plane checks.
func (e *policyEndpoints[T, V]) decodeBody(c *fiber.Ctx) (map[string]json.RawMessage, error) {
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
		return nil, &gwerr.Error{Status: fiber.StatusBadRequest, Code: gwerr.CodeInvalidJSON, Message: "request body must be a " + e.noun + " object, not null"}
	}
	return fields, nil
}
