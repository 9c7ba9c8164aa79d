package routes

import (
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llmgw/gateway/control"
	"github.com/llmgw/gateway/runtime/ratelimit"
	"github.com/llmgw/gateway/storage"
)

// Usage-limit policies (budgets, DESIGN.md "Budgets") of the caller's workspace: every key of the workspace
// reads them, admin keys create, change and delete them, as rate-limit policies (policies.go). The operations
// and their rules are control.Plane's (control/usagelimits.go); the view adds the current spend, which the
// engine's enforcer knows (runtime.Engine.BudgetUsage).

const usageLimitObject = "policy_usage_limits"

func (s *Server) usageLimitRoutes(v1 fiber.Router) {
	v1.Get("/policies/usage-limits", s.listUsageLimits)
	v1.Post("/policies/usage-limits", s.createUsageLimit)
	v1.Get("/policies/usage-limits/:id", s.getUsageLimit)
	v1.Put("/policies/usage-limits/:id", s.updateUsageLimit)
	v1.Delete("/policies/usage-limits/:id", s.deleteUsageLimit)
}

// usageLimitView is a usage-limit policy as the endpoints show it; list items have the same shape.
type usageLimitView struct {
	ID             string                 `json:"id"`
	Object         string                 `json:"object"`
	Name           *string                `json:"name"`
	Type           string                 `json:"type"`
	CreditLimit    float64                `json:"credit_limit"`
	AlertThreshold *float64               `json:"alert_threshold"`
	PeriodicReset  *string                `json:"periodic_reset"`
	Conditions     []storage.PolicyMatch  `json:"conditions"`
	GroupBy        []storage.PolicyGroup  `json:"group_by"`
	Status         string                 `json:"status"`
	WorkspaceID    string                 `json:"workspace_id"`
	OrganisationID string                 `json:"organisation_id"`
	CreatedAt      string                 `json:"created_at"`
	LastUpdatedAt  string                 `json:"last_updated_at"`
	CurrentUsage   float64                `json:"current_usage"`
	UsageByGroup   []ratelimit.GroupUsage `json:"usage_by_group"`
	PeriodStart    *int64                 `json:"period_start"`
	PeriodEnd      *int64                 `json:"period_end"`
}

func viewUsageLimit(p *storage.UsageLimitPolicy, u ratelimit.PolicyUsage) usageLimitView {
	v := usageLimitView{ID: p.ID, Object: usageLimitObject, Name: p.Name, Type: p.Type, CreditLimit: p.CreditLimit,
		AlertThreshold: p.AlertThreshold, PeriodicReset: p.PeriodicReset, Conditions: p.Conditions, GroupBy: p.GroupBy,
		Status: p.Status, WorkspaceID: p.WorkspaceID, OrganisationID: p.OrganisationID,
		CreatedAt: p.CreatedAt.UTC().Format(time.RFC3339), LastUpdatedAt: p.UpdatedAt.UTC().Format(time.RFC3339),
		CurrentUsage: u.Current, UsageByGroup: u.Groups}
	if v.Conditions == nil {
		v.Conditions = []storage.PolicyMatch{}
	}
	if v.GroupBy == nil {
		v.GroupBy = []storage.PolicyGroup{}
	}
	if v.UsageByGroup == nil {
		v.UsageByGroup = []ratelimit.GroupUsage{}
	}
	if p.Status == "active" && u.Exhausted {
		v.Status = "exhausted"
	}
	if u.Periodic {
		v.PeriodStart, v.PeriodEnd = &u.PeriodStart, &u.PeriodEnd
	}
	return v
}

func (s *Server) viewUsageLimit(p *storage.UsageLimitPolicy) usageLimitView {
	return viewUsageLimit(p, s.engine.BudgetUsage(p))
}

// listUsageLimits answers GET /v1/policies/usage-limits: the workspace's usage-limit policies that match every
// filter (status: active, exhausted or archived; "" every one not archived; type), one page of them
// (page_size, current_page from 0), and how many match in all.
func (s *Server) listUsageLimits(c *fiber.Ctx) error {
	var f control.UsageLimitFilter
	var err error
	if f.Status, err = queryEnum(c, "status", ratelimit.BudgetStatuses); err != nil {
		return err
	}
	if f.Type, err = queryEnum(c, "type", ratelimit.BudgetTypes); err != nil {
		return err
	}
	if f.PageSize, f.Paged, f.Page, err = queryPage(c); err != nil {
		return err
	}
	f.Workspace = strings.Clone(c.Query("workspace_id"))
	usage := map[string]ratelimit.PolicyUsage{}
	usageOf := func(p *storage.UsageLimitPolicy) ratelimit.PolicyUsage {
		u, ok := usage[p.ID]
		if !ok {
			u = s.engine.BudgetUsage(p)
			usage[p.ID] = u
		}
		return u
	}
	f.Exhausted = func(p *storage.UsageLimitPolicy) bool { return usageOf(p).Exhausted }
	page, total, err := s.plane.ListUsageLimits(c.UserContext(), callerOf(c), f)
	if err != nil {
		return err
	}
	data := make([]usageLimitView, 0, len(page))
	for _, p := range page {
		data = append(data, viewUsageLimit(p, usageOf(p)))
	}
	return c.JSON(listAnswer[usageLimitView]{Object: "list", Data: data, Total: total})
}

// getUsageLimit answers GET /v1/policies/usage-limits/:id, whatever the policy's status; only the caller's
// workspace is searched.
func (s *Server) getUsageLimit(c *fiber.Ctx) error {
	id, err := usageLimitEndpoints.idOf(c)
	if err != nil {
		return err
	}
	p, err := s.plane.GetUsageLimit(c.UserContext(), callerOf(c), id)
	if err != nil {
		return err
	}
	return c.JSON(s.viewUsageLimit(p))
}

// createUsageLimit answers POST /v1/policies/usage-limits with a policy object as the body. Admin only.
func (s *Server) createUsageLimit(c *fiber.Ctx) error { return usageLimitEndpoints.create(s, c) }

// updateUsageLimit answers PUT /v1/policies/usage-limits/:id: the fields the body holds replace the stored ones.
// Admin only.
func (s *Server) updateUsageLimit(c *fiber.Ctx) error { return usageLimitEndpoints.update(s, c) }

// deleteUsageLimit answers DELETE /v1/policies/usage-limits/:id: the policy stops applying on the workspace's
// next request. Admin only.
func (s *Server) deleteUsageLimit(c *fiber.Ctx) error { return usageLimitEndpoints.delete(s, c) }

var usageLimitEndpoints = &policyEndpoints[storage.UsageLimitPolicy, usageLimitView]{
	object: usageLimitObject, noun: "usage-limit policy", idParam: "usageLimitsPolicyId",
	view:     (*Server).viewUsageLimit,
	opCreate: (*control.Plane).CreateUsageLimit, opUpdate: (*control.Plane).UpdateUsageLimit,
	opDelete: (*control.Plane).DeleteUsageLimit,
}
